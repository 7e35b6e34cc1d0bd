// evalspec's Node.js worker for `javascript` checks and promptfoo's test generators (evalspec/core/node.py
// starts it and owns its life). One JSON request a line on stdin; one answer a line, with the request's `id`,
// on the file descriptor named by the first argument: a pipe of its own, which the user's code never writes
// to (what it prints on the console, stdout or stderr is kept, bounded, in the answer's `logs`).
// Requests are served one at a time.
//   {op: "run", code | file + fn, output, context} -> {ok: true, result} | {ok: false, kind, message}
//   {op: "check", code | file + fn}                -> {ok: true} | {ok: false, kind, message}
//   {op: "call", file, fn, args, must_call}        -> {ok: true, result, functions} | {ok: false, kind, message}
//     (promptfoo's rule for test files: the export named `fn`, else the default export, else the module;
//     a function is called with `args` and awaited, anything else is the result itself; `functions`
//     names where the result holds functions, which JSON leaves out)
// `kind` is "syntax" (the code does not compile), "load" (the file or its function cannot be loaded),
// "threw" (the code raised) or "result" (it returned something that is no verdict).
'use strict';

const fs = require('fs');
const readline = require('readline');
const { pathToFileURL } = require('url');

const ANSWERS = Number(process.argv[1]);
const LOG_LINES = 20;
const LOG_CHARS = 500;
let logs = [];

// callers test `logs.length < LOG_LINES` first: past it, nothing is even formatted
function keep(text) {
  logs.push(text.slice(0, LOG_CHARS));
}

function shown(value) {
  if (typeof value === 'string') {
    return value;
  }
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text; // a function or a Symbol has no JSON
  } catch (err) {
    return String(value);
  }
}

// console output of a check is kept with its answer (shown when the check errs), never on stdout
for (const name of ['log', 'info', 'warn', 'error', 'debug', 'trace']) {
  console[name] = (...args) => {
    if (logs.length < LOG_LINES) {
      keep(args.map(shown).join(' '));
    }
  };
}

// and so is what it writes to stdout or stderr itself (their file descriptors lead nowhere)
for (const stream of [process.stdout, process.stderr]) {
  stream.write = (chunk, encoding, callback) => {
    if (logs.length < LOG_LINES) {
      const text = typeof chunk === 'string' ? chunk.slice(0, LOG_CHARS) // before the newline test: 50 MB is cut first
        : Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(chunk.byteLength, LOG_CHARS)).toString();
      keep(text.replace(/\n$/, ''));
    }
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') {
      process.nextTick(done);
    }
    return true;
  };
}

function compiles(body) {
  try {
    new Function('output', 'context', 'process', body);
    return true;
  } catch (err) {
    return false;
  }
}

// promptfoo's rule: several lines are a function body as written; one line is an expression
// (`return` is put before it), or declarations then an expression (`return` before the last statement)
function functionBody(code) {
  const text = code.trimEnd();
  if (text.includes('\n')) {
    return text;
  }
  const line = text.trim().replace(/;+\s*$/, '');
  if (!/^(const|let|var)\s/.test(line)) {
    return 'return ' + line;
  }
  for (let at = line.lastIndexOf(';'); at > 0; at = line.lastIndexOf(';', at - 1)) {
    const head = line.slice(0, at + 1);
    const rest = line.slice(at + 1).trim();
    if (rest && compiles(head) && compiles(head + ' return ' + rest)) {
      return head + ' return ' + rest;
    }
  }
  return line;
}

function compile(code) {
  return new Function('output', 'context', 'process', functionBody(code));
}

const modules = new Map(); // file -> {version, mod}: a file edited since it was loaded is loaded again

async function load(file) {
  const version = fs.statSync(file).mtimeMs;
  const known = modules.get(file);
  if (known && known.version === version) {
    return known.mod;
  }
  const url = pathToFileURL(file).href + (known ? `?v=${version}` : '');
  let mod;
  if (file.endsWith('.mjs')) {
    mod = await import(url);
  } else {
    delete require.cache[file];
    try {
      mod = require(file);
    } catch (err) {
      if (!err || err.code !== 'ERR_REQUIRE_ESM') {
        throw err;
      }
      mod = await import(url);
    }
  }
  modules.set(file, { version, mod });
  return mod;
}

// promptfoo's rule: the named export when it is a function, else the module itself, else its default
function pick(mod, name) {
  if (name && mod && typeof mod[name] === 'function') {
    return mod[name];
  }
  if (typeof mod === 'function') {
    return mod;
  }
  if (mod && typeof mod.default === 'function') {
    return mod.default;
  }
  if (name && mod && mod.default && typeof mod.default[name] === 'function') {
    return mod.default[name];
  }
  return null;
}

function exportsOf(mod) {
  const names = mod && typeof mod === 'object' ? Object.keys(mod).filter((k) => typeof mod[k] === 'function') : [];
  return names.length ? names.join(', ') : 'none';
}

// the module of a file, or an error saying why not (`kind`: a syntax error, or it would not load)
async function loadOrSay(file) {
  try {
    return await load(file);
  } catch (err) {
    const kind = err instanceof SyntaxError ? 'syntax' : 'load';
    throw Object.assign(new Error(`${err && err.name}: ${err && err.message}`), { kind });
  }
}

async function checkFunction(request) {
  const mod = await loadOrSay(request.file);
  const fn = pick(mod, request.fn);
  if (!fn) {
    const wanted = request.fn ? `no function '${request.fn}' and no default export` : 'no function exported';
    throw Object.assign(new Error(`${wanted} (exported functions: ${exportsOf(mod)})`), { kind: 'load' });
  }
  return fn;
}

function verdict(value) {
  if (typeof value === 'boolean') {
    return { kind: 'bool', value };
  }
  if (typeof value === 'number') {
    if (Number.isFinite(value)) {
      return { kind: 'number', value };
    }
    return { kind: 'bad', got: String(value) };
  }
  // promptfoo's GradingResult: all three keys, a boolean, a finite number and a text
  if (value && typeof value === 'object' && !Array.isArray(value) && 'pass' in value) {
    const { pass, score, reason } = value;
    if (typeof pass === 'boolean' && typeof score === 'number' && Number.isFinite(score) && typeof reason === 'string') {
      return { kind: 'grading', pass, score, reason };
    }
    const keys = Object.keys(value).slice(0, 6).join(', ');
    return { kind: 'bad', got: `{${keys}} (pass ${typeof pass}, score ${shown(score)}, reason ${typeof reason})` };
  }
  const type = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
  const text = value === undefined ? '' : ' ' + shown(value).slice(0, 80);
  return { kind: 'bad', got: type + text };
}

// promptfoo's importModule: the default export's default, the default export, or the module; then its
// `name` (the module's own export of that name when the default export has none)
function exported(mod, name) {
  const base = (mod && mod.default && mod.default.default) || (mod && mod.default) || mod;
  if (!name) {
    return base;
  }
  if (base !== null && base !== undefined && base[name] !== undefined) {
    return base[name];
  }
  return mod ? mod[name] : undefined;
}

// where `value` holds functions (JSON.stringify leaves them out)
function functionsIn(value, at = '', found = [], seen = new Set()) {
  if (typeof value === 'function') {
    found.push(at);
  } else if (value !== null && typeof value === 'object' && !seen.has(value)) {
    seen.add(value);
    for (const [key, item] of Object.entries(value)) {
      functionsIn(item, Array.isArray(value) ? `${at}[${key}]` : `${at}.${key}`, found, seen);
    }
  }
  return found;
}

async function call(request) {
  const mod = await loadOrSay(request.file);
  const target = exported(mod, request.fn);
  if (target === undefined || target === null) {
    const wanted = request.fn ? `no export '${request.fn}'` : 'nothing exported';
    throw Object.assign(new Error(`${wanted} (exported functions: ${exportsOf(mod)})`), { kind: 'load' });
  }
  if (request.must_call && typeof target !== 'function') {
    const what = request.fn ? `'${request.fn}'` : 'the module';
    throw Object.assign(new Error(`${what} is not a function (exported functions: ${exportsOf(mod)})`), { kind: 'load' });
  }
  let value = target;
  if (typeof target === 'function') {
    try {
      value = await target(...(request.args || []));
    } catch (err) {
      const text = err instanceof Error ? `${err.name}: ${err.message}` : `threw ${shown(err)}`;
      throw Object.assign(new Error(text), { kind: 'threw' });
    }
  }
  return { result: value === undefined ? null : value, functions: functionsIn(value) };
}

async function serve(request) {
  if (request.op === 'call') {
    return call(request);
  }
  if (request.op === 'check') {
    if (request.file) {
      await checkFunction(request);
    } else {
      try {
        compile(request.code);
      } catch (err) {
        throw Object.assign(new Error(`${err.name}: ${err.message}`), { kind: 'syntax' });
      }
    }
    return {};
  }
  let fn;
  if (request.file) {
    fn = await checkFunction(request);
  } else {
    try {
      fn = compile(request.code);
    } catch (err) {
      throw Object.assign(new Error(`${err.name}: ${err.message}`), { kind: 'syntax' });
    }
  }
  let value;
  try {
    value = request.file ? fn(request.output, request.context) : fn(request.output, request.context, process);
    value = await value;
  } catch (err) {
    const text = err instanceof Error ? `${err.name}: ${err.message}` : `threw ${shown(err)}`;
    throw Object.assign(new Error(text), { kind: 'threw' });
  }
  return { result: verdict(value) };
}

function answer(id, message) {
  let line;
  try {
    line = JSON.stringify({ id, ...message });
  } catch (err) {
    line = JSON.stringify({ id, ok: false, kind: 'result', message: `the answer could not be sent: ${err.message}` });
  }
  const data = Buffer.from(line + '\n');
  for (let sent = 0; sent < data.length;) {
    sent += fs.writeSync(ANSWERS, data, sent);
  }
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) {
      continue;
    }
    logs = [];
    let request;
    try {
      request = JSON.parse(line);
    } catch (err) {
      answer(null, { ok: false, kind: 'load', message: `bad request: ${err.message}` });
      continue;
    }
    try {
      answer(request.id, { ok: true, ...(await serve(request)), logs });
    } catch (err) {
      answer(request.id, { ok: false, kind: err.kind || 'threw', message: String(err.message).slice(0, 2000), logs });
    }
  }
  process.exit(0);
}

// an error thrown after its check was answered (a timer, a promise nobody awaited) must not end the worker,
// or the next, innocent check would be blamed for it: it is written to stderr and dropped
// (stderr's file descriptor, not process.stderr: the user's output is kept with its check's answer)
function late(what, err) {
  try {
    fs.writeSync(2, `${what}, after its check: ${err && err.stack}\n`);
  } catch (ignored) {
    // nowhere to say it
  }
}
process.on('uncaughtException', (err) => late('late error', err));
process.on('unhandledRejection', (err) => late('late rejection', err));

main();
