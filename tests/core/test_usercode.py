"""User code (python providers, python assertions, python simulated users) cannot end, hang or pass a run.

Each case runs `evalspec run` in its own process: the exit code is never 0, the test is `error`
naming what happened, run.json is written, and the process ends although a thread is still stuck.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalspec.core.errors import UserCodeError
from evalspec.core.usercode import call_user, describe

FAULTS = {
    "exit0": "sys.exit(0)",
    "exit7": "sys.exit(7)",
    "raise": "raise KeyError('boom')",
    "interrupt": "raise KeyboardInterrupt",
    "hang": "time.sleep(3600)",
}
NAMED = {"exit0": "SystemExit", "exit7": "SystemExit(7)", "raise": "KeyError: 'boom'",
         "interrupt": "KeyboardInterrupt", "hang": "timed out"}

USER = """
import asyncio, sys, time

def fault(name):
""" + "".join(f"    if name == {name!r}:\n        {code}\n" for name, code in FAULTS.items()) + """

def bot(messages, context):
    if WHERE == "provider":
        fault(context["vars"]["fault"])
    return "好的，" + messages[-1]["content"]

async def async_bot(messages, context):
    await asyncio.sleep(0)
    fault(context["vars"]["fault"])
    return "never"

def check(output, context):
    fault(context["vars"]["fault"])
    return True

def simulator(messages, context):
    fault(context["vars"]["fault"])
    return "我想买车"
"""


def case_suite(tmp_path: Path, where: str, faults: list[str]) -> Path:
    folder = tmp_path / where
    folder.mkdir()
    (folder / "user.py").write_text(f"WHERE = {where!r}\n" + USER, encoding="utf-8")
    provider = "user.py:async_bot" if where == "async-provider" else "user.py:bot"
    if where == "simulator":
        body = "    simulate: {persona: 买车的人, goal: 问价格, max_turns: 2}\n    assert: [{contains: 好的}]\n"
    else:
        body = ("    conversation:\n      - user: 你好\n"
                "        assert: [{contains: 好的}, {python: 'user.py:check'}]\n")
    tests = "".join(f"  - id: {fault}\n    vars: {{fault: {fault}}}\n{body}" for fault in faults)
    (folder / "s.yaml").write_text(f"""\
providers:
  - id: bot
    python: {provider}
simulator: {{python: "user.py:simulator"}}
options: {{timeout: 1, retries: 0, grade_timeout: 1, cache: false}}
tests:
{tests}""", encoding="utf-8")
    return folder


WHERE = {"provider": list(FAULTS), "async-provider": [f for f in FAULTS if f != "hang"],
         "assertion": list(FAULTS), "simulator": list(FAULTS)}


def test_exit_code_is_never_0_when_user_code_exits_raises_or_hangs(tmp_path: Path) -> None:
    """One process per place user code runs, one test per fault: a fault that escaped would end the
    process early (with its own exit code, or 0) and leave no run.json."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    procs = {}
    for where, faults in WHERE.items():
        folder = case_suite(tmp_path, where, faults)
        procs[where] = (folder, subprocess.Popen(
            [sys.executable, "-m", "evalspec", "run", "s.yaml", "-o", "run.json", "-q"], cwd=folder,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
    failures = []
    for where, (folder, proc) in procs.items():
        try:
            out, _ = proc.communicate(timeout=150)
        except subprocess.TimeoutExpired:
            proc.kill()
            failures.append(f"{where}: the process did not exit")
            continue
        if proc.returncode != 3 or not (folder / "run.json").exists():
            failures.append(f"{where}: exit {proc.returncode}: {out[-400:]}")
            continue
        records = json.loads((folder / "run.json").read_text(encoding="utf-8"))["results"]
        assert [r["test_id"] for r in records] == WHERE[where]
        failures += [f"{where}/{r['test_id']}: {r['status']}: {r['error']}" for r in records
                     if r["status"] != "error" or NAMED[r["test_id"]] not in (r["error"] or "")]
        # whatever the check raised (KeyboardInterrupt too), its result still names the function
        failures += [f"{where}/{r['test_id']}: the python check lost its function: {a}" for r in records
                     for a in r["assertions"] if a["type"] == "python" and a.get("value") != "user.py:check"]
    assert not failures, "\n".join(failures)


def test_a_cancelled_error_raised_by_user_code_is_that_calls_error() -> None:
    async def cancels_itself() -> str:
        raise asyncio.CancelledError

    async def main() -> str:
        try:
            return str(await call_user(cancels_itself))
        except UserCodeError as exc:
            return f"error: {exc}"

    assert asyncio.run(main()).startswith("error: CancelledError")


def test_an_exception_that_cannot_print_itself_is_still_named() -> None:
    class Odd(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert describe(Odd()) == "Odd: <the exception could not be printed>"
    assert len(describe(ValueError("x" * 10_000))) < 600


@pytest.mark.parametrize("swallow", [True, False])
def test_an_async_provider_that_ignores_its_cancellation_is_abandoned(swallow: bool) -> None:
    async def stubborn() -> str:
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                if not swallow:
                    raise

    async def main() -> str:
        try:
            return str(await asyncio.wait_for(call_user(stubborn), 0.2))
        except asyncio.TimeoutError:
            return "timed out"

    from evalspec.core.interrupts import run_interruptible

    start = time.monotonic()
    assert run_interruptible(main()) == "timed out"
    assert time.monotonic() - start < 5


# -- how many threads serve sync user code --------------------------------------------------------

def test_jobs_held_up_by_a_busy_machine_start_no_thread() -> None:
    from evalspec.core.usercode import DaemonWorkers

    now, late = 100.0, 100.0 - 5 * DaemonWorkers.WAIT
    assert DaemonWorkers.to_start(now, late, waiting=30, idle=1, running=[now - 1.0]) == 0  # a worker is free
    short = now - DaemonWorkers.BLOCKED / 2  # a job that may be waiting for the GIL, not blocked
    assert DaemonWorkers.to_start(now, late, waiting=30, idle=0, running=[short, now]) == 0
    assert DaemonWorkers.to_start(now, now - DaemonWorkers.WAIT / 2, waiting=30, idle=0, running=[now - 1.0]) == 0
    assert DaemonWorkers.to_start(now, None, waiting=0, idle=0, running=[now - 1.0]) == 0


def test_jobs_that_wait_on_io_double_the_threads_though_none_has_run_long() -> None:
    from evalspec.core.usercode import DaemonWorkers

    now, late = 100.0, 100.0 - 5 * DaemonWorkers.WAIT
    just_started = [now - 0.001, now - 0.0005]
    assert DaemonWorkers.to_start(now, late, waiting=30, idle=0, running=just_started, finished=2, busy=0.010) == 2
    # one job kept from the GIL for a switch interval, among many short ones: not waiting on I/O
    assert DaemonWorkers.to_start(now, late, waiting=30, idle=0, running=just_started, finished=400,
                                  busy=0.005 + 399 * 0.00001) == 0
    # a single slow job among two workers is no evidence from each
    assert DaemonWorkers.to_start(now, late, waiting=30, idle=0, running=just_started, finished=1, busy=0.006) == 0


def test_jobs_held_up_by_a_blocked_job_double_the_threads_up_to_the_waiting_jobs() -> None:
    from evalspec.core.usercode import DaemonWorkers

    now, late = 100.0, 100.0 - 5 * DaemonWorkers.WAIT
    assert DaemonWorkers.to_start(now, late, waiting=7, idle=0, running=[now - 1.0, now - 0.0001]) == 2  # doubles
    assert DaemonWorkers.to_start(now, late, waiting=1, idle=0, running=[now - 1.0, now - 1.0]) == 1
    assert DaemonWorkers.to_start(now, late, waiting=3, idle=0, running=[]) == 1


def test_blocking_calls_are_served_concurrently_and_short_ones_by_few_threads() -> None:
    from evalspec.core.usercode import DaemonWorkers, in_thread

    workers = DaemonWorkers()

    async def calls(fn: object, n: int) -> float:
        import evalspec.core.usercode as usercode

        saved, usercode.WORKERS = usercode.WORKERS, workers
        try:
            start = time.monotonic()
            await asyncio.gather(*(in_thread(fn) for _ in range(n)))  # type: ignore[arg-type]
            return time.monotonic() - start
        finally:
            usercode.WORKERS = saved

    def short() -> int:
        return sum(range(50))

    asyncio.run(calls(short, 20_000))  # a queue far longer than WAIT: the rule before this one started ~40
    assert workers.started <= 16
    before = workers.started
    asyncio.run(calls(lambda: time.sleep(0.005), 400))  # short calls waiting on I/O (a local server, say)
    assert workers.started >= before + 4  # more than the floor: none of them ran BLOCKED seconds
    elapsed = asyncio.run(calls(lambda: time.sleep(0.2), 40))  # forty calls waiting on I/O
    assert elapsed < 2.0  # not 40 × 0.2 s / 2 threads = 4 s
    assert workers.started >= 20
