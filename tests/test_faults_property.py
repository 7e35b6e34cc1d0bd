"""Property: whatever a python provider or a python check does, `passed` means every assertion ran and passed.

Hypothesis writes a few hundred suites whose tests inject random faults into the provider's turns and
into a python check (exits, exceptions, hangs, missing or malformed replies, odd metadata). For each
run: it finishes, run.json is plain JSON, a test with a fault that must cost a verdict is `error`, a
`passed` test has every assertion passing, and a test with only harmless quirks passes.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from helpers import spec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalspec.config.model import ProviderSpec, Suite, TurnSpec
from evalspec.config.model import TestSpec as SpecOfTest
from evalspec.interrupts import run_interruptible
from evalspec.plan import build_plan
from evalspec.runner import RunOptions, run_plan

USER_CODE = '''
import asyncio, math, sys, time

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("cannot print")

class Text(str):
    pass

def _provider_fault(name, text):
    if name == "exit0": sys.exit(0)
    if name == "exit3": sys.exit(3)
    if name == "raise": raise ValueError("bad " + text)
    if name == "interrupt": raise KeyboardInterrupt
    if name == "unprintable": raise Unprintable()
    if name == "hang": time.sleep(3600)
    if name == "none": return None
    if name == "no_content": return {"text": "好的 " + text}
    if name == "int_content": return {"content": 42}
    if name == "bytes": return ("好的 " + text).encode()
    if name == "bad_tool_calls": return {"content": "好的", "tool_calls": "f()"}
    reply = "好的 " + text
    if name == "odd_usage": return {"content": reply, "usage": {"total_tokens": "many"}, "cost": float("nan")}
    if name == "odd_metadata": return {"content": reply, "metadata": {"s": {1, 2}, "o": object()}}
    if name == "surrogate": return reply + "\\ud800"
    if name == "huge": return reply + "x" * 150_000
    if name == "subclass": return Text(reply)
    return reply

def respond(messages, context):
    faults = context["vars"]["faults"]
    return _provider_fault(faults[context["turn"] - 1], messages[-1]["content"])

async def respond_async(messages, context):
    await asyncio.sleep(0)
    name = context["vars"]["faults"][context["turn"] - 1]
    if name == "cancel": raise asyncio.CancelledError()
    if name == "hang": await asyncio.sleep(3600)
    return _provider_fault(name, messages[-1]["content"])

def check(output, context):
    name = context["vars"]["check"]
    if name == "exit": sys.exit(0)
    if name == "raise": raise RuntimeError("check failed to run")
    if name == "hang": time.sleep(3600)
    if name == "none": return None
    if name == "text": return "yes"
    if name == "nan": return float("nan")
    if name == "bad_pass": return {"pass": "yes"}
    if name == "inf_score": return {"score": math.inf}
    if name == "mutate":
        context["transcript"].clear()
        return True
    if name == "false": return False
    return {"pass": True, "score": 1.0, "reason": "ok"}
'''

# provider faults that must leave the test without a verdict, and quirks that must not
FATAL = ["exit0", "exit3", "raise", "interrupt", "unprintable", "hang", "none", "no_content", "int_content",
         "bytes", "bad_tool_calls"]
HARMLESS = ["ok", "odd_usage", "odd_metadata", "surrogate", "huge", "subclass"]
CHECK_FATAL = ["exit", "raise", "hang", "none", "text", "nan", "bad_pass", "inf_score"]
CHECK_OK = ["ok", "mutate"]

fault = st.one_of(st.sampled_from(HARMLESS), st.sampled_from(HARMLESS), st.sampled_from(FATAL))
test_case = st.fixed_dictionaries({
    "faults": st.lists(fault, min_size=1, max_size=3),
    "check": st.one_of(st.sampled_from(CHECK_OK), st.sampled_from(CHECK_OK), st.just("false"),
                       st.sampled_from(CHECK_FATAL)),
    "async": st.booleans(),
    "cancel_at": st.none() | st.integers(0, 2),
})


def expected_assertions(turns: int) -> int:
    return turns + 2  # one `contains` per turn, then the python check and `not-contains` on the test


def make_suite(folder: Path, cases: list[dict[str, Any]]) -> Suite:
    """The generated suite, built as the loader would build it (YAML parsing is tested elsewhere and
    would cost most of the time here)."""
    tests = []
    for i, case in enumerate(cases):
        faults = list(case["faults"])
        if case["async"] and case["cancel_at"] is not None and case["cancel_at"] < len(faults):
            faults[case["cancel_at"]] = "cancel"
        case["faults"] = faults
        turns = [TurnSpec(kind="user", text=f"问题{n}", asserts=[spec("contains: 好的", under_turn=n + 1)])
                 for n in range(len(faults))]
        tests.append(SpecOfTest(id=f"t{i}", name=f"t{i}", index=i, providers=["async" if case["async"] else "sync"],
                              vars={"faults": faults, "check": case["check"]}, conversation=turns,
                              asserts=[spec("{python: 'user.py:check', scope: last_response}"),
                                       spec("{not-contains: 禁止, scope: each_turn}")]))
    providers = [ProviderSpec(id="sync", kind="python", config={"python": "user.py:respond"}),
                 ProviderSpec(id="async", kind="python", config={"python": "user.py:respond_async"})]
    options = {"timeout": 0.15, "retries": 0, "grade_timeout": 0.25, "cache": False, "max_reply_chars": 1000}
    return Suite(path=folder / "s.yaml", sha256="generated", providers=providers, options=options, max_errors=100,
                 tests=tests)


def check_run(cases: list[dict[str, Any]], data: dict[str, Any]) -> None:
    json.dumps(data, allow_nan=False)  # plain JSON, whatever the user code returned
    records = {r["test_id"]: r for r in data["results"]}
    assert len(records) == len(cases)
    for i, case in enumerate(cases):
        record = records[f"t{i}"]
        faults = case["faults"]
        results = record["assertions"]
        fatal = any(f in FATAL or f == "cancel" for f in faults) or case["check"] in CHECK_FATAL
        if record["status"] == "passed":
            assert len(results) == expected_assertions(len(faults)), record
            assert all(r["pass"] is True and r["error"] is None for r in results), record
        if fatal:
            assert record["status"] == "error", (case, record["status"], record["error"])
            assert record["error"], record
        elif record["status"] == "error" and "timed out" in record["error"]:
            pass  # a harmless call ran out of time on a loaded machine: no verdict, which is allowed
        elif case["check"] == "false":
            assert record["status"] == "failed", (case, record["error"])
        else:
            assert record["status"] == "passed", (case, record["error"], record["assertions"])
        for m in record["transcript"]:
            assert len(m["content"]) < 1200  # stored cut at max_reply_chars


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cases=st.lists(test_case, min_size=1, max_size=4))
def test_passed_only_when_every_assertion_ran_and_passed(cases: list[dict[str, Any]], tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "user.py").write_text(USER_CODE, encoding="utf-8")
    suites = [make_suite(code, cases)]
    run_dir = tmp_path / "run" / uuid.uuid4().hex
    data = run_interruptible(run_plan(suites, build_plan(suites), RunOptions(run_dir=run_dir, use_cache=False,
                                                                             concurrency=4)))
    check_run(cases, data)
