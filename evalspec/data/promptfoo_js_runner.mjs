// Runs one call of a promptfoo JavaScript provider (written by `evalspec import promptfoo`).
// stdin: {"file", "function", "options", "prompt", "context"}; stdout: MARKER + {"output", "error", ...}
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const MARKER = "\u0000evalspec-result ";
const print = (value) => process.stdout.write(MARKER + JSON.stringify(value) + "\n");
for (const name of ["log", "info", "debug"]) console[name] = (...args) => console.error(...args);

const request = JSON.parse(readFileSync(0, "utf8"));
try {
  const module = await import(pathToFileURL(request.file).href);
  let target = module.default ?? module;
  if (request.function) target = target?.[request.function] ?? module[request.function];
  let call;
  if (typeof target === "function" && /^class[\s{]/.test(Function.prototype.toString.call(target))) {
    const instance = new target(request.options);
    call = (...args) => instance.callApi(...args);
  } else if (typeof target === "function" && typeof target.prototype?.callApi === "function") {
    const instance = new target(request.options);
    call = (...args) => instance.callApi(...args);
  } else if (typeof target === "function") {
    call = target;
  } else if (target && typeof target.callApi === "function") {
    call = (...args) => target.callApi(...args);
  } else {
    throw new Error(`${request.file} exports no provider (a class, an object with callApi, or a function)`);
  }
  const result = await call(request.prompt, request.context, {});
  print(result ?? {});
} catch (error) {
  print({ error: `${error?.stack ?? error}`, thrown: true });
}
