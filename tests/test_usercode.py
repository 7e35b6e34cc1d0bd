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

from evalspec.usercode import UserCodeError, call_user, describe

FAULTS = {
    "exit0": "import sys; sys.exit(0)",
    "exit7": "import sys; sys.exit(7)",
    "raise": "raise KeyError('boom')",
    "interrupt": "raise KeyboardInterrupt",
    "hang": "import time; time.sleep(3600)",
}

USER = '''
import asyncio

def fault():
    {fault}

def bot(messages, context):
    if {where!r} == "provider":
        fault()
    return "好的，" + messages[-1]["content"]

async def async_bot(messages, context):
    await asyncio.sleep(0)
    fault()
    return "never"

def check(output, context):
    fault()
    return True

def simulator(messages, context):
    fault()
    return "我想买车"
'''


def case_suite(tmp_path: Path, where: str, fault: str) -> Path:
    folder = tmp_path / f"{where}-{fault}"
    folder.mkdir()
    (folder / "user.py").write_text(USER.format(fault=FAULTS[fault], where=where), encoding="utf-8")
    provider = "user.py:async_bot" if where == "async-provider" else "user.py:bot"
    if where == "simulator":
        test = """\
  - id: t
    simulate: {persona: 买车的人, goal: 问价格, max_turns: 2}
    assert: [{contains: 好的}]
"""
    else:
        test = """\
  - id: t
    conversation:
      - user: 你好
        assert: [{contains: 好的}, {python: "user.py:check"}]
"""
    (folder / "s.yaml").write_text(f"""\
providers:
  - id: bot
    python: {provider}
simulator: {{python: "user.py:simulator"}}
options: {{timeout: 1, retries: 0, grade_timeout: 1, cache: false}}
tests:
{test}""", encoding="utf-8")
    return folder


CASES = [(w, f) for w in ("provider", "async-provider", "assertion", "simulator") for f in FAULTS
         if not (w == "async-provider" and f == "hang")]


def test_exit_code_is_never_0_when_user_code_exits_raises_or_hangs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    procs = {}
    for where, fault in CASES:
        folder = case_suite(tmp_path, where, fault)
        procs[(where, fault)] = (folder, subprocess.Popen(
            [sys.executable, "-m", "evalspec", "run", "s.yaml", "-o", "run.json", "-q"], cwd=folder,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
    deadline = time.time() + 90
    failures = []
    for (where, fault), (folder, proc) in procs.items():
        try:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            proc.kill()
            failures.append(f"{where}/{fault}: the process did not exit")
            continue
        if proc.returncode != 3:
            failures.append(f"{where}/{fault}: exit {proc.returncode}: {out[-400:]}")
            continue
        record = json.loads((folder / "run.json").read_text(encoding="utf-8"))["results"][0]
        named = {"exit0": "SystemExit", "exit7": "SystemExit(7)", "raise": "KeyError: 'boom'",
                 "interrupt": "KeyboardInterrupt", "hang": "timed out"}[fault]
        if record["status"] != "error" or named not in (record["error"] or ""):
            failures.append(f"{where}/{fault}: {record['status']}: {record['error']}")
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

    from evalspec.interrupts import run_interruptible

    start = time.monotonic()
    assert run_interruptible(main()) == "timed out"
    assert time.monotonic() - start < 5
