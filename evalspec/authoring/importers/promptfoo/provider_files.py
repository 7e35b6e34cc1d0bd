"""The files a promptfoo import writes beside the suite for providers evalspec has no kind of its own
for: a python `respond(messages, context)` adapter around promptfoo's python `call_api` and JavaScript
`callApi` providers (the JavaScript one runs through node, with the runner below), and `echo`."""

from __future__ import annotations

ECHO_FILE = "promptfoo_echo.py"
ECHO_SOURCE = '''"""promptfoo's `echo` provider: the reply is the message sent (written by `evalspec import promptfoo`)."""


def respond(messages, context):
    return messages[-1]["content"]
'''

PYTHON_ADAPTER = '''"""Calls a promptfoo python provider ({target}) the way evalspec calls providers.

Written by `evalspec import promptfoo`; promptfoo passes the rendered prompt, evalspec the conversation.
"""

import json
from pathlib import Path

from evalspec.core.pyref import load_module

_file = (Path(__file__).parent / {path!r}).resolve()
# imported as evalspec imports a suite's python file: its folder importable (as promptfoo runs it), its own
# sibling modules (an `agent.py` beside it) before any of the same name another provider imported
_module = load_module(_file.name + ":" + {function!r}, _file.parent)


def respond(messages, context):
    prompt = messages[-1]["content"] if len(messages) == 1 else json.dumps(messages, ensure_ascii=False)
    result = getattr(_module, {function!r})(prompt, {{"config": {config!r}}}, {{"vars": context["vars"]}})
    if isinstance(result, dict):
        if result.get("error"):
            raise RuntimeError(result["error"])
        return {{"content": str(result.get("output", "")), "cost": result.get("cost")}}
    return str(result)
'''

JS_RUNNER_FILE = "promptfoo_js_runner.mjs"  # evalspec/data/promptfoo_js_runner.mjs, written beside the suite

JS_ADAPTER = '''"""Calls a promptfoo JavaScript provider ({target}) through node, the way evalspec calls providers.

Written by `evalspec import promptfoo`: each call runs {runner} with node, which loads the provider,
calls its `callApi(prompt, {{vars}}, {{}})` and prints the result. promptfoo passes the rendered prompt,
evalspec the conversation. An `error` in the result, a thrown exception, a missing node or a call
that outlasts TIMEOUT seconds is an error of the call, never a reply.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).parent
PROVIDER = (HERE / {path!r}).resolve()
FOLDER = (HERE / {folder!r}).resolve()  # the promptfoo config's folder: promptfoo runs from there
RUNNER = HERE / {runner!r}
TARGET = {target!r}
OPTIONS = {options!r}
FUNCTION = {function!r}
TIMEOUT = 300
MARKER = "\\x00evalspec-result "


def respond(messages, context):
    prompt = messages[-1]["content"] if len(messages) == 1 else json.dumps(messages, ensure_ascii=False)
    node = shutil.which("node")
    if node is None:
        raise RuntimeError(f"node is not installed: the promptfoo provider {{TARGET}} is JavaScript")
    request = {{"file": str(PROVIDER), "function": FUNCTION, "options": OPTIONS, "prompt": prompt,
               "context": {{"vars": context["vars"], "prompt": {{"raw": prompt}}}}}}
    try:
        done = subprocess.run([node, str(RUNNER)], input=json.dumps(request), capture_output=True,
                              text=True, encoding="utf-8", timeout=TIMEOUT, cwd=FOLDER, env=os.environ.copy())
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{{TARGET}} took more than {{TIMEOUT}} s") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if not lines:
        raise RuntimeError(f"{{TARGET}}: node exited with {{done.returncode}}: {{done.stderr.strip()[-800:]}}")
    result = json.loads(lines[-1][len(MARKER):])
    if not isinstance(result, dict):
        result = {{"output": result}}
    if result.get("error"):
        raise RuntimeError(f"{{TARGET}}: {{result['error']}}")
    output = result.get("output")
    if output is None:
        raise RuntimeError(f"{{TARGET}} returned no output")
    usage = result.get("tokenUsage") if isinstance(result.get("tokenUsage"), dict) else {{}}
    return {{"content": output if isinstance(output, str) else json.dumps(output, ensure_ascii=False),
            "cost": result.get("cost"),
            "usage": {{"total_tokens": usage.get("total"), "prompt_tokens": usage.get("prompt"),
                      "completion_tokens": usage.get("completion")}}}}
'''
