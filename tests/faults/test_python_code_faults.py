"""Property: whatever a python provider or a python check does, `passed` means every assertion ran and passed.

Hypothesis writes a few hundred suites whose tests inject random faults into the provider's turns and
into a python check (exits, exceptions, hangs, missing or malformed replies, odd metadata, a wrong
reply), the check written under the test or under one turn. For each run: it finishes, run.json is
plain JSON, a `passed` test has every assertion passing, a test with only harmless quirks passes, and
an error never hides a failure (SPEC §17): a reply that was received is graded even when a later turn
or another check errored, so a test with a failed assertion is `failed` with the error listed beside
it; a test with an error and no failure is `error`.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalspec.config.model import ProviderSpec, Suite, TurnSpec
from evalspec.config.model import TestSpec as SpecOfTest
from evalspec.core.interrupts import run_interruptible
from evalspec.plan.build import build_plan
from evalspec.play.runner import RunOptions, run_plan
from tests.faults.helpers import WRONG, assert_all_ran_and_passed
from tests.helpers import spec

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
    if name == "wrong": return "不对 " + text
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

fault = st.one_of(st.sampled_from(HARMLESS), st.sampled_from(HARMLESS), st.sampled_from(FATAL), st.just(WRONG))
test_case = st.fixed_dictionaries({
    "faults": st.lists(fault, min_size=1, max_size=3),
    "check": st.one_of(st.sampled_from(CHECK_OK), st.sampled_from(CHECK_OK), st.just("false"),
                       st.sampled_from(CHECK_FATAL)),
    "check_at": st.none() | st.integers(0, 2),  # None: under the test (last_response); n: under turn n + 1
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
        if case["check_at"] is not None and case["check_at"] >= len(faults):
            case["check_at"] = None
        turns = [TurnSpec(kind="user", text=f"问题{n}", asserts=[spec("contains: 好的", under_turn=n + 1)])
                 for n in range(len(faults))]
        python_check = "{python: 'user.py:check', scope: last_response}"
        if case["check_at"] is not None:
            turns[case["check_at"]].asserts.append(spec("python: 'user.py:check'", under_turn=case["check_at"] + 1))
        tests.append(SpecOfTest(id=f"t{i}", name=f"t{i}", index=i, providers=["async" if case["async"] else "sync"],
                              vars={"faults": faults, "check": case["check"]}, conversation=turns,
                              asserts=([spec(python_check)] if case["check_at"] is None else [])
                              + [spec("{not-contains: 禁止, scope: each_turn}")]))
    providers = [ProviderSpec(id="sync", kind="python", config={"python": "user.py:respond"}),
                 ProviderSpec(id="async", kind="python", config={"python": "user.py:respond_async"})]
    options = {"timeout": 0.15, "retries": 0, "grade_timeout": 0.25, "cache": False, "max_reply_chars": 1000}
    return Suite(path=folder / "s.yaml", sha256="generated", providers=providers, options=options, max_errors=100,
                 tests=tests)


def first_fatal(faults: list[str]) -> int | None:
    """The turn index whose provider call cannot give a reply (None: every reply is received)."""
    return next((n for n, f in enumerate(faults) if f in FATAL or f == "cancel"), None)


def replied_turns(record: dict[str, Any]) -> set[int]:
    return {m["turn"] for m in record["transcript"] if m["role"] == "assistant"}


def expect(case: dict[str, Any]) -> tuple[int | None, bool, bool]:
    """(failing turn, must err, unsure) for one generated test under SPEC §17. The failing turn is the
    first turn whose reply is received and must fail an assertion (0: only the check under the test
    fails, None: nothing fails); an error with no failure must be `error`. `unsure`: a check under the
    test after a turn that gave no reply (whether `last_response` then reads the last reply received is
    not the property's business), which may be either."""
    faults, check, at = case["faults"], case["check"], case["check_at"]
    stop = first_fatal(faults)
    received = faults if stop is None else faults[:stop]
    check_runs = (at is not None and at < len(received)) or (at is None and stop is None)
    failing = [n + 1 for n, f in enumerate(received) if f == WRONG]
    if check_runs and check == "false":
        failing.append(at + 1 if at is not None else 0)
    errs = stop is not None or (check_runs and check in CHECK_FATAL)
    unsure = at is None and stop is not None and check == "false"
    return (min(failing) if failing else None), errs, unsure


def check_run(cases: list[dict[str, Any]], data: dict[str, Any]) -> None:
    json.dumps(data, allow_nan=False)  # plain JSON, whatever the user code returned
    records = {r["test_id"]: r for r in data["results"]}
    assert len(records) == len(cases)
    for i, case in enumerate(cases):
        record = records[f"t{i}"]
        faults = case["faults"]
        results = record["assertions"]
        failing, errs, unsure = expect(case)
        status, error = record["status"], record["error"]
        if status == "passed":
            assert_all_ran_and_passed(record, expected_assertions(len(faults)))
        # a harmless call may run out of time on a loaded machine: the replies after it never come
        timed_out = status == "error" and "timed out" in (error or "")
        lost = timed_out and (failing == 0 or failing not in replied_turns(record))
        if failing is not None and not lost:
            # an error never hides a failure: `failed`, and the error (if any) listed beside it
            assert status == "failed", (case, status, error, results)
            assert any(r["pass"] is False for r in results), record
            if errs:
                assert error, (case, record)
        elif errs:
            assert status == "error" or (unsure and status == "failed"), (case, status, error)
            assert error, record
        elif not timed_out:
            assert status == ("passed" if failing is None else "failed"), (case, status, error, results)
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
