"""The scripted user: the test's own turns as the source of the next user message (the loop is play/turns.py)."""

from __future__ import annotations

import itertools
from typing import Any

from evalspec.core.errors import EvalspecError
from evalspec.extend.transcript import Message
from evalspec.plan.build import Instance, has_captures, with_captures
from evalspec.play.turns import NextMessage, TurnError, play_turns, user_message
from evalspec.providers.tool_rounds import SendTurn, ToolKit
from evalspec.results.transcript import Transcript

__all__ = ["ScriptedUser", "captured_values", "run_scripted"]


def captured_values(messages: list[Message]) -> tuple[dict[str, str], str | None]:
    """What each `capture: NAME` user turn stored (its turn's reply, SPEC §19), and the first capture that
    found nothing (an empty reply), as an error line. A turn not reached captures nothing and is no error."""
    values: dict[str, str] = {}
    for i, message in enumerate(messages):
        name = message.get("capture") if message.get("role") == "user" else None
        if not name:
            continue
        replies = [m for m in itertools.takewhile(lambda m: m.get("role") != "user", messages[i + 1:])
                   if m.get("role") == "assistant" and not m.get("intermediate")]
        if not replies:
            continue
        text = replies[-1].get("content")
        if not isinstance(text, str) or not text.strip():
            return values, (f"turn {message.get('turn')}: capture '{name}' found nothing: the reply is empty, "
                            f"so the later turns and checks that use {{{{ {name} }}}} cannot be rendered")
        values[name] = text
    return values, None


class ScriptedUser:
    """The test's own turns, in order. With `capture:` turns, each later turn is rendered again with the
    replies captured so far (SPEC §19); a capture that finds nothing ends the conversation at its turn."""

    stop_reason: str = "completed"
    who: str | None = None

    def __init__(self, instance: Instance) -> None:
        self.instance, self.rendered, self.known, self.index = instance, instance, 0, 0
        self.captures = has_captures(instance)

    async def next_message(self, transcript: Transcript) -> NextMessage | None:
        index = self.index
        if index == len(self.instance.turns):
            if self.captures and (problem := captured_values(transcript.messages)[1]):
                raise TurnError(problem)
            return None
        self.index += 1
        planned = self.instance.turns[index]
        if self.captures:
            values, problem = captured_values(transcript.messages)
            if problem:
                raise TurnError(problem)
            if len(values) != self.known:
                try:
                    self.rendered, self.known = with_captures(self.instance, values), len(values)
                except EvalspecError as exc:  # a template the captures so far do not render
                    raise TurnError(f"turn {planned.turn}: {exc}") from exc
            planned = self.rendered.turns[index]
        if planned.role == "assistant":
            return NextMessage({"role": "assistant", "content": planned.text, "turn": planned.turn,
                                "latency_ms": None, "tokens": None, "cost": None, "injected": True}, call=False)
        return NextMessage(user_message(planned.text, planned.turn, filler=planned.filler, label=planned.label,
                                        history=not planned.call, capture=planned.capture), call=planned.call)

    async def stop_after(self, transcript: Transcript, reply: dict[str, Any], turn: int) -> str | None:
        return None


async def run_scripted(instance: Instance, call: SendTurn, kit: ToolKit | None = None) -> Transcript:
    """Send each user turn and record the reply (after its tool rounds); the first provider failure
    ends the conversation."""
    return await play_turns(ScriptedUser(instance), instance, call, kit)
