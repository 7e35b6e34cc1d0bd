"""promptfoo `python` checks as evalspec `python:` checks that keep promptfoo's meaning.

promptfoo runs inline code as the body of `main(output, context)` (one line: `return <line>`) and a file's
`get_assert(output, context)`, and reads the result its own way: `true`/`false` (also as text), a number
that passes above 0 (or at the check's `threshold`), `{pass, score, reason}` held to `threshold`. evalspec's
`python:` reads a number against 0.5, so each check goes through a function written into
`promptfoo_checks.py` beside the suite, which hands evalspec the verdict promptfoo would give. A check
whose code raises is an error in evalspec (never a fail: docs/en/reports-and-gate.md#errors-and-failures), where promptfoo would fail it.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

CHECKS_FILE = "promptfoo_checks.py"
HEADER = '''"""promptfoo's python checks (written by `evalspec import promptfoo`): each runs promptfoo's code and
reads its result as promptfoo does (`true`/`false`, a score above 0 or at the threshold, {pass, score, reason})."""

import importlib.util
import json
from pathlib import Path


def _context(context, config):
    """promptfoo's context: the prompt (the last user message), the test's vars, the check's config."""
    users = [m.get("content") for m in context.get("transcript", []) if m.get("role") == "user"]
    return {"prompt": users[-1] if users else "", "vars": context.get("vars", {}),
            "test": {"vars": context.get("vars", {})}, "config": config}


def _verdict(result, threshold):
    if result is True or isinstance(result, str) and result.lower() == "true":
        return {"pass": True, "score": 1.0, "reason": "Assertion passed"}
    if result is False or isinstance(result, str) and result.lower() == "false":
        return {"pass": False, "score": 0.0, "reason": "the check returned false"}
    if isinstance(result, str) and result.startswith("{"):
        return _graded(json.loads(result), None)
    if isinstance(result, dict):
        return _graded(result, threshold)
    score = float(result)  # anything else must read as a number, as in promptfoo
    passed = score > 0 if threshold is None else score >= threshold
    return {"pass": passed, "score": score, "reason": f"the check returned {score}"}


def _graded(result, threshold):
    result = dict(result)
    if "pass_" in result and "pass" not in result:
        result["pass"] = result["pass_"]
    if not (isinstance(result.get("pass"), bool) and isinstance(result.get("score"), (int, float))
            and not isinstance(result.get("score"), bool) and isinstance(result.get("reason"), str)):
        raise ValueError(f"a promptfoo check returns a boolean, a number or {{pass, score, reason}}; got {result!r}")
    if threshold is not None and result["score"] < threshold:
        result["pass"] = False
        result["reason"] = f"score {result['score']} is less than threshold {threshold}: {result['reason']}"
    return {"pass": result["pass"], "score": float(result["score"]), "reason": result["reason"]}


_MODULES = {}  # each check file is run once per process, not once per check


def _load(path, name):
    if path not in _MODULES:
        spec = importlib.util.spec_from_file_location(f"promptfoo_check_{len(_MODULES)}", Path(__file__).parent / path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _MODULES[path] = module
    return getattr(_MODULES[path], name)
'''


def _data(config: Any) -> str:
    """A check's `config` as python code that makes it: JSON data (a YAML date or a NaN has no python
    literal its repr would give; dates become their text)."""
    return "None" if config is None else f"json.loads({json.dumps(config, ensure_ascii=False, default=str)!r})"


def inline_check(number: int, code: str, threshold: float | None, config: Any) -> str:
    """The functions of one inline check: promptfoo's `main` around its code, and `check_N` that evalspec calls."""
    body = code.strip("\n") if "\n" in code.strip() else f"return {code.strip()}"
    return (f"\n\ndef _main_{number}(output, context):\n{textwrap.indent(textwrap.dedent(body), '    ')}\n\n\n"
            f"def check_{number}(output, context):\n"
            f"    return _verdict(_main_{number}(output, _context(context, {_data(config)})), {threshold!r})\n")


def file_check(number: int, relative: str, function: str, threshold: float | None, config: Any) -> str:
    """`check_N` calling a promptfoo check file's function (`get_assert` unless named)."""
    return (f"\n\ndef check_{number}(output, context):\n"
            f"    fn = _load({relative!r}, {function!r})\n"
            f"    return _verdict(fn(output, _context(context, {_data(config)})), {threshold!r})\n")
