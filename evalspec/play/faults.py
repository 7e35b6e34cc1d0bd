"""The simulated user's own slips (docs/en/agents.md#simulator-faults): the one owner of the rule that
says when a simulator message is the harness's fault, not the bot's.

Every message the simulator writes (a model's or a python user's; never a fixed turn: `opening`,
`fixed`, a milestone's `user:`) goes through `simulator_fault`. A message that is empty, repeats the
simulator's previous one, holds the stop marker together with a request the assistant never gets to
answer, is written as the assistant, copies 30 or more characters of what it was told (its texts, its
prompt), or is longer than `max_chars` makes the conversation an error of the class `simulator_fault`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evalspec.play.turns import TurnError

__all__ = ["COPY_RUN", "SimulatorFault", "simulator_fault"]

COPY_RUN = 30  # characters of its own instructions copied verbatim
_AS_ASSISTANT = re.compile(r"\s*(?:assistant|助手|AI助手)\s*[:：]", re.IGNORECASE)
# a request the assistant would have to answer: a question, or an ask (请 / 帮我 / please / can you)
_REQUEST = re.compile(r"[?？]|吗|请|帮我|麻烦|能不能|\b(?:please|can you|could you|would you|tell me)\b", re.IGNORECASE)


class SimulatorFault(TurnError):
    """The simulated user slipped: the conversation is an error attributed to `simulator_fault`."""

    attribution = "simulator_fault"


@dataclass
class Said:
    """What a simulator message is checked against."""

    previous_own: str | None  # the simulator's previous message of its own (fixed turns are not its own)
    previous_reply: str | None  # the assistant's previous reply
    instructions: Sequence[str]  # persona, goal, instructions: what it must not copy
    marker: str | None
    max_chars: int


def simulator_fault(text: str, said: Said) -> str | None:
    """Why `text` is a simulator fault, or None when it is a message a user could write."""
    message = text.strip()
    if not message:
        return "the simulated user sent an empty message"
    if said.marker and said.marker in message:
        rest = message.replace(said.marker, " ").strip()
        if rest and _REQUEST.search(rest):
            return (f"the simulated user asked something and stopped ({said.marker}) in the same message, "
                    f"before the assistant could answer: {_excerpt(rest)!r}")
        return None  # a stop: its other words are never sent
    if len(message) > said.max_chars:
        return f"the simulated user's message has {len(message)} characters, more than max_chars ({said.max_chars})"
    if said.previous_own is not None and message == said.previous_own.strip():
        return f"the simulated user repeated its previous message: {_excerpt(message)!r}"
    if _AS_ASSISTANT.match(message):
        return f"the simulated user wrote as the assistant: {_excerpt(message)!r}"
    if said.previous_reply and message == said.previous_reply.strip():
        return f"the simulated user repeated the assistant's reply: {_excerpt(message)!r}"
    for source in said.instructions:
        if (copied := _copied(message, source)) is not None:
            return f"the simulated user copied its own instructions: {_excerpt(copied)!r}"
    return None


def _copied(message: str, source: str) -> str | None:
    """The first run of COPY_RUN characters of `message` found verbatim in `source`, or None."""
    if len(source) < COPY_RUN:
        return None
    for i in range(len(message) - COPY_RUN + 1):
        if message[i:i + COPY_RUN] in source:
            return message[i:i + COPY_RUN]
    return None


def _excerpt(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
