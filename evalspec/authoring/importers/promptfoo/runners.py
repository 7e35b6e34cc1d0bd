"""The programs a promptfoo import runs or writes, kept as real files under `evalspec/data/` (linted and
typed like the package; shipped in the wheel): the python prompt-function worker, the python test
generator runner and the JavaScript provider runner written beside a suite."""

from __future__ import annotations

from functools import cache
from importlib import resources

PROMPT_WORKER = "promptfoo_prompt_worker.py"
TEST_GENERATOR = "promptfoo_test_generator.py"
JS_RUNNER = "promptfoo_js_runner.mjs"


@cache
def runner_source(name: str) -> str:
    """The text of one of the runners above."""
    return resources.files("evalspec").joinpath(f"data/{name}").read_text("utf-8")
