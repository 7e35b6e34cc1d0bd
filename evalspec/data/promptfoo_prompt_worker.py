"""Serves promptfoo's python prompt functions at import, as node_runner.js serves JavaScript ones.

Run by `evalspec import promptfoo` in a python process of its own, in the config's folder: a JSON request
a line on stdin (`{id, file, fn, args}`), its answer a line on the file descriptor named last
(`{id, ok, result}` or `{id, ok: false, message}`); what the user's code prints goes nowhere.
"""

import importlib.util
import json
import os
import sys
from types import ModuleType
from typing import cast


def _load(file: str, number: int) -> ModuleType:
    """The module of a prompt file, its folder importable (as promptfoo runs it)."""
    sys.path.insert(0, os.path.dirname(file))
    spec = importlib.util.spec_from_file_location(f"promptfoo_prompt_{number}", file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _answer(request: dict[str, object], modules: dict[str, ModuleType]) -> str:
    """The answer line of one request: what the named function returned, or why it did not."""
    try:
        file = str(request["file"])
        if file not in modules:
            modules[file] = _load(file, len(modules))
        target: object = modules[file]
        for name in str(request["fn"]).split("."):
            target = getattr(target, name)
        if not callable(target):
            raise TypeError(f"'{type(target).__name__}' object is not callable")
        return json.dumps({"id": request["id"], "ok": True, "result": target(*cast("list[object]", request["args"]))},
                          ensure_ascii=False, default=str)
    except BaseException as exc:  # the user's code: whatever it raises is the answer
        return json.dumps({"id": request["id"], "ok": False, "message": f"{type(exc).__name__}: {exc}"[:2000]})


def main() -> None:
    answers = os.fdopen(int(sys.argv[-1]), "w", encoding="utf-8")
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    modules: dict[str, ModuleType] = {}
    for line in sys.stdin:
        answers.write(_answer(json.loads(line), modules) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
