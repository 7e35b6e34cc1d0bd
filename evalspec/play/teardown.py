"""`teardown: FILE.py:function` on a provider: undo what an agent did in a real system (docs/en/agents.md);
`setup: FILE.py:function`, its mirror, prepares the system before a conversation (docs/en/state.md).

A teardown is called as `fn(context)` after each conversation, whatever its outcome; `context` has the
thread id, test id, provider id, vars and the transcript. A teardown that fails is reported beside the
verdict (`record["teardown"]`) and never changes it. A setup is called as `fn(context)` (thread id, test
id, provider id, vars, the test's `state:`) before the conversation's first call; one that fails makes
the test an error with nothing sent (the teardown still runs).
"""

from __future__ import annotations

import asyncio

from evalspec.core.errors import LoadError, UserCodeError
from evalspec.core.pyref import load_callable
from evalspec.core.usercode import call_user
from evalspec.extend.transcript import Message
from evalspec.plan.build import Instance
from evalspec.results.rundata import TeardownResult


async def run_setup(inst: Instance, thread_id: str) -> str | None:
    """Run the provider's setup; None when it succeeded, else the error line (never an exception)."""
    ref = str(inst.provider.config["setup"])
    context = {"thread_id": thread_id, "test_id": inst.test_id, "provider": inst.provider.id,
               "vars": dict(inst.vars), "state": dict(inst.test.state) if inst.test.state is not None else None}
    timeout = float(inst.provider.config.get("timeout") or inst.suite.option("timeout"))
    try:
        fn = load_callable(ref, inst.suite.path.parent)
        await asyncio.wait_for(call_user(fn, context), timeout)
    except LoadError as exc:
        return f"setup: {exc}"
    except (TimeoutError, asyncio.TimeoutError):
        return f"setup: {ref} timed out after {timeout:g}s"
    except UserCodeError as exc:
        return f"setup: {ref} raised {exc}"
    return None


async def run_teardown(inst: Instance, thread_id: str | None, transcript: list[Message]) -> TeardownResult:
    """Run the provider's teardown; `{"ok": True}` or `{"ok": False, "error": ...}`, never an exception."""
    ref = str(inst.provider.config["teardown"])
    context = {"thread_id": thread_id, "test_id": inst.test_id, "provider": inst.provider.id,
               "vars": dict(inst.vars), "transcript": [dict(m) for m in transcript]}
    timeout = float(inst.provider.config.get("timeout") or inst.suite.option("timeout"))
    try:
        fn = load_callable(ref, inst.suite.path.parent)
        await asyncio.wait_for(call_user(fn, context), timeout)
    except LoadError as exc:
        return {"ok": False, "function": ref, "error": str(exc)}
    except (TimeoutError, asyncio.TimeoutError):
        return {"ok": False, "function": ref, "error": f"{ref} timed out after {timeout:g}s"}
    except UserCodeError as exc:  # anything the user's code raised, SystemExit included
        return {"ok": False, "function": ref, "error": f"{ref} raised {exc}"}
    return {"ok": True, "function": ref}
