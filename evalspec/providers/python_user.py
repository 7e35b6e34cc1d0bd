"""Simulated users written in Python (a user that answers by rules the test writes):
`simulate: {python: FILE.py:function}`.

The function is called before each user turn as `fn(transcript, context)` — the messages so far and
`{turn, test_id, repeat, vars, persona, goal}` (with `milestones:`, `goal` is
the current milestone's) — and returns the next user message, or None to stop
(`stop_reason: user_says`). It runs as user code: an exception or an overrun is that test's error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalspec.core.errors import LoadError, ProviderError
from evalspec.core.pyref import load_callable
from evalspec.core.usercode import call_user_within
from evalspec.extend.transcript import Message

if TYPE_CHECKING:
    from evalspec.plan.build import Instance


def load_scripted_user(inst: Instance) -> Any:
    sim = inst.test.simulate
    assert sim is not None and sim.python
    try:
        return load_callable(sim.python, inst.suite.path.parent)
    except LoadError as exc:
        raise ProviderError(f"simulated user: {exc}") from exc


async def next_message(fn: Any, inst: Instance, messages: list[Message], turn: int,
                       goal: str | None = None) -> str | None:
    """The scripted user's next message (stripped; empty is a simulator fault), or None when it stops; `goal`: the current milestone's."""
    sim = inst.test.simulate
    assert sim is not None
    context = {"turn": turn, "test_id": inst.test_id, "repeat": inst.repeat, "vars": dict(inst.vars),
               "persona": sim.persona or None, "goal": goal or sim.goal or None}
    result = await call_user_within(f"simulated user {sim.python}", float(inst.suite.option("timeout")),
                                    fn, [dict(m) for m in messages], context)
    if result is None:
        return None
    if isinstance(result, str):
        return result.strip()  # an empty message is a simulator fault (evalspec/play/faults.py), checked there
    raise ProviderError(f"simulated user {sim.python} returned {result!r}; expected a message (str) or None to stop")
