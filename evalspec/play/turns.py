"""The one turn loop: a source says the next user message, the loop plays it and decides how it ends.

A source of the next user message is the scripted user (play/scripted.py), the simulated user
(play/simulated.py) or the attacker (play/attack.py). The loop alone sends each turn through the
provider caller (its tool rounds as providers/tool_rounds.py plays them), appends the messages to the
transcript, and maps an error or a stop condition to `stop_reason` — once, for all three:

- the source has no next message          -> its `stop_reason` (`completed`, `max_turns`, `user_says`)
- the source's next message ends it        -> that message's `stop` (a stop marker: recorded, not sent)
- a stop condition holds after a reply     -> what `stop_after` returns (`goal_met`, `breached` ...)
- the system under test fails on turn k    -> `error`, "turn k: <the provider error>"
  (no reply is such an error, unless the turn says `no_reply: ok`: then its reply is empty)
- the source or a stop condition fails     -> `error`, the `TurnError`'s line
- a simulated conversation with no reply   -> `error` (see `replied`)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, cast

from evalspec.core.errors import ControlFlow, ProviderError
from evalspec.extend.provider import ProviderResponse, clean_text, normalize_finish_reason
from evalspec.extend.transcript import ChatMessage, Message, is_reply
from evalspec.plan.build import Instance
from evalspec.providers.tool_rounds import SendTurn, ToolContext, ToolKit, play_turn
from evalspec.results.rundata import AttributionName
from evalspec.results.transcript import StopReason, Transcript

__all__ = ["NextMessage", "Source", "TurnError", "assistant_message", "flipped", "play_turns", "replied",
           "tool_context", "user_message"]


@dataclass
class NextMessage:
    """What a source says next: the message to record (a user message, or a scripted assistant one),
    whether it is sent to the system under test (`call`), and the stop reason it ends the conversation
    with once recorded (`stop`: a simulated user's stop marker is recorded, never sent), and whether the
    bot may stay silent on it (`silent_ok`: the turn says `no_reply: ok`)."""

    message: Message
    call: bool = True
    stop: str | None = None
    silent_ok: bool = False  # the turn says `no_reply: ok`: no reply is its empty reply, not an error


class TurnError(ControlFlow):
    """A source or a stop condition failed: the conversation ends in an error with this line (and, for a
    simulated user's slip, the attribution class the record carries: play/faults.py)."""

    attribution: AttributionName | None = None


class Source(Protocol):
    """A source of the next user message."""

    # why the conversation ended when `next_message` returns None (a source that stops sets it first)
    stop_reason: str
    # who needs at least one reply ("simulated user", "attacker"), None when a conversation may have none
    who: str | None

    async def next_message(self, transcript: Transcript) -> NextMessage | None:
        """The next message, or None when there is none; a failure raises TurnError."""

    async def stop_after(self, transcript: Transcript, reply: Message, turn: int) -> str | None:
        """The stop reason of a stop condition that holds after turn `turn`'s reply, else None."""


def user_message(text: str, turn: int | None, **flags: Any) -> Message:
    return cast(Message, {"role": "user", "content": text, "turn": turn, "latency_ms": None, "tokens": None,
                          "cost": None, **{k: v for k, v in flags.items() if v}})  # flags: Message's optional keys


def assistant_message(response: ProviderResponse, turn: int) -> Message:
    msg: Message = {"role": "assistant", "content": clean_text(response.content), "turn": turn,
                           "latency_ms": round(response.latency_ms, 3) if response.latency_ms is not None else None,
                           "tokens": response.tokens, "cost": response.cost}
    if response.prompt_tokens is not None:
        msg["prompt_tokens"], msg["completion_tokens"] = response.prompt_tokens, response.completion_tokens
    if response.cached_tokens is not None:
        msg["cached_tokens"] = response.cached_tokens
    strategy = response.metadata.get("strategy")
    if isinstance(strategy, dict):  # the context strategy's own calls (history: summary | facts)
        msg["strategy_tokens"], msg["strategy_cost"] = strategy.get("tokens"), strategy.get("cost")
        msg["strategy_calls"] = 0 if response.cached else strategy.get("calls", 0)
    if response.cached:
        msg["cached"] = True
    if response.tool_calls:
        msg["tool_calls"] = response.tool_calls
    if isinstance(path := response.metadata.get("tool_calls_path"), dict):  # was the http tool_calls key there
        msg["tool_calls_path"] = path
    if response.state is not None:  # the bot's own state after the turn (docs/en/state.md)
        msg["state"] = response.state
    if response.parts is not None:
        msg["parts"] = response.parts
    if (finish := normalize_finish_reason(response.finish_reason)) is not None:  # a plugin's own word too
        msg["finish_reason"] = finish
    return msg


def tool_context(instance: Instance, call: SendTurn) -> ToolContext:
    """What a `tool_results` python function gets besides the call's arguments."""
    return {"thread_id": getattr(call, "thread_id", None), "test_id": instance.test_id, "vars": dict(instance.vars)}


def flipped(messages: list[Message]) -> list[ChatMessage]:
    """The conversation from a simulated user's or an attacker's side (its own messages are `assistant`):
    tool calls and results are not shown (a real user does not see them), nor the rounds before a
    turn's reply."""
    flip = {"user": "assistant", "assistant": "user"}
    return [{"role": flip[m["role"]], "content": str(m["content"])} for m in messages
            if m["role"] == "user" or is_reply(m, golden=True)]


def replied(transcript: Transcript, who: str) -> Transcript:
    """A simulated conversation that ended before any assistant reply is an error, never a run of checks
    over zero replies (`not-after`, `at-most`, `turn-count` would all pass on nothing)."""
    if transcript.error is None and not any(m["role"] == "assistant" for m in transcript.messages):
        transcript.error = (f"the {who} stopped ({transcript.stop_reason}) before the assistant replied: "
                            "a simulated conversation needs at least one reply")
        transcript.stop_reason = "error"
    return transcript


async def play_turns(source: Source, instance: Instance, call: SendTurn, kit: ToolKit | None) -> Transcript:
    """Play `source`'s messages against `call` until the source or a stop condition ends the conversation."""
    transcript = Transcript()
    try:
        transcript.stop_reason = cast(StopReason, await _play(source, transcript, call, kit, tool_context(instance, call)))
    except TurnError as exc:
        transcript.stop_reason, transcript.error = "error", str(exc)
        transcript.attribution = exc.attribution
    return replied(transcript, source.who) if source.who is not None else transcript


async def _play(source: Source, transcript: Transcript, call: SendTurn, kit: ToolKit | None,
                context: ToolContext) -> str:
    """The conversation's stop reason; a failure raises TurnError."""
    while (said := await source.next_message(transcript)) is not None:
        transcript.messages.append(said.message)
        if said.stop is not None:
            return said.stop
        if not said.call:
            continue
        turn = cast(int, said.message["turn"])  # a sent user turn has its number
        try:
            reply = await play_turn(call, transcript, turn, kit, context, assistant_message,
                                    silent_ok=said.silent_ok)
        except ProviderError as exc:
            raise TurnError(f"turn {turn}: {exc}") from exc
        if (stop := await source.stop_after(transcript, reply, turn)) is not None:
            return stop
    return source.stop_reason
