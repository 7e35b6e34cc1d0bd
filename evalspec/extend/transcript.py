"""A transcript message, the one shape every folder reads: the conversation loops write it, checks read it,
run.json stores it (its `message` schema is generated from `Message`, `evalspec.results.schema`).

A `TypedDict` is a dict at run time: the type names the keys, nothing checks them. The six keys every
stored message has are required; the rest are written only where they hold (a flag only when true).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, TypedDict, TypeVar

from evalspec.extend.params import Keywords

__all__ = ["ChatMessage", "Message", "RoundFigures", "ToolCall", "WireCall", "is_reply", "is_sent_user_turn", "is_system_message", "is_written_user_turn", "replies",
           "sent_user_turns", "system_messages", "written_user_turns"]

Count = Annotated[int, Keywords(minimum=0)]


class ToolCall(TypedDict):
    """One tool call of an assistant message, as the provider returned it."""

    id: str
    name: str
    arguments: Any


class WireFunction(TypedDict):
    name: str
    arguments: str  # JSON text, as the OpenAI chat protocol carries it


class WireCall(TypedDict):
    """One tool call as the OpenAI chat protocol sends it back to a model (`ToolCall` on the wire)."""

    id: str
    type: Literal["function"]
    function: WireFunction


class ChatMessage(TypedDict, total=False):
    """One message of the OpenAI-style history a provider is sent (`Provider.respond`): what the system
    under test, a judge, a simulated user or an attacker reads. A transcript `Message` goes on the wire as
    one (`providers.tool_rounds.wire_message`); an embedder is sent one holding only `texts`."""

    role: str  # system, user, assistant or tool
    content: str
    tool_calls: list[WireCall]
    tool_call_id: str  # a tool result: the call it answers
    name: str  # a tool result: the tool's name (what a python agent reads)
    texts: list[str]  # an embedding request: the texts to embed


class RoundFigures(TypedDict, total=False):
    """One model call's figures of a turn with tool rounds (`Message.rounds`); the reply carries their sums."""

    latency_ms: float | None
    tokens: int | None
    cost: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    strategy_tokens: int | None
    strategy_cost: float | None
    strategy_calls: int


# a checkpoint criterion the judge was asked after a reply, and its verdict (`pass` is a keyword)
Checkpoint = TypedDict("Checkpoint", {"criterion": str, "pass": bool, "reason": str})


class _Stored(TypedDict):
    """The keys every stored message has (run.json's `message` requires them)."""

    role: Literal["user", "assistant", "tool"]
    content: str
    turn: int | None
    latency_ms: float | None
    tokens: int | None
    cost: float | None


class Message(_Stored, total=False):
    injected: bool  # an `assistant:` turn of the test: golden history, never a reply of the system
    filler: bool  # a `filler:` user turn
    history: bool  # a user turn of golden history (not sent on its own: the reply after it is injected)
    cached: bool  # the reply came from the response cache
    not_sent: bool  # the simulated user's last words, which ended the conversation (never sent)
    no_reply: Annotated[bool, Keywords(description="the bot gave no reply on a turn that says `no_reply: ok` "
                                                   "(silent by design): the content is empty, not an error")]
    original_chars: Annotated[int, Keywords(
        minimum=1, description="a reply stored cut (options.max_reply_chars): its full length; it was graded whole")]
    cut_at: Annotated[int, Keywords(minimum=1, description="a reply stored cut: the characters kept")]
    cached_tokens: Annotated[int | None, Keywords(
        minimum=0, description="prompt tokens the provider's prompt cache served (docs/en/rate-limits.md)")]
    prompt_tokens: int | None
    completion_tokens: int | None
    strategy_calls: Count
    strategy_tokens: int | None
    strategy_cost: float | None
    label: str
    tactic: Annotated[str, Keywords(description="an attack turn's GOAT tactic (docs/en/attacks.md)")]
    milestone: Annotated[int, Keywords(minimum=1, description="a simulated user's message for this milestone "
                                                              "(docs/en/agents.md#milestones)")]
    milestone_met: Annotated[int, Keywords(minimum=1, description="the reply that met this milestone")]
    checkpoints: Annotated[list[Checkpoint], Keywords(
        description="the checkpoints asked after this reply (docs/en/agents.md#checkpoints)")]
    capture: Annotated[str, Keywords(description="a user turn's `capture: NAME`: its reply became the var NAME "
                                                 "for the later turns (docs/en/recorded-conversations.md); a `capture:` mapping's names, "
                                                 "joined by ', ' (docs/en/state.md)")]
    click: Annotated[str, Keywords(description="a `click: T` user turn: the button title pressed; the content is "
                                               "what it sent, its payload (docs/en/state.md)")]
    tool_calls: list[ToolCall]
    tool_calls_path: Annotated[dict[str, Any], Keywords(
        description="an http provider's `tool_calls:` path and whether this turn's response had it ({path, found})")]
    intermediate: Annotated[bool, Keywords(description="a tool round before the turn's reply")]
    rounds: Annotated[list[dict[str, Any]], Keywords(
        description="each model call's figures of a turn with tool rounds")]
    tool_call_id: str
    name: str
    error: Annotated[str, Keywords(description="a tool result whose handler raised: its message (the agent "
                                               "got {\"error\": ...}; docs/en/world.md#the-world-and-the-tools)")]
    # docs/en/state.md: the bot's state after the turn, and the turn's
    # several messages, each with its buttons
    state: Annotated[dict[str, Any], Keywords(
        description="the bot's state after this turn (docs/en/state.md)")]
    parts: Annotated[list[dict[str, Any]], Keywords(
        description="the turn's several messages {text, buttons: [{title, payload}], image, custom} "
                    "(docs/en/state.md)")]
    finish_reason: Annotated[str, Keywords(
        minLength=1, description="why the model stopped: stop, length, content_filter, tool_calls (each "
                                 "provider's word mapped onto these), or the provider's own word; absent: "
                                 "the provider reported none")]


def is_sent_user_turn(m: Mapping[str, Any]) -> bool:
    """A user message the system under test received: fillers and golden history included, the simulated
    user's unsent last words not."""
    return m.get("role") == "user" and not m.get("not_sent")


def sent_user_turns(transcript: Iterable[Message]) -> list[Message]:
    """The user messages the system under test received (what `turn-count` counts)."""
    return [m for m in transcript if is_sent_user_turn(m)]


def is_written_user_turn(m: Mapping[str, Any]) -> bool:
    """A user message the person (or the simulated user) wrote and sent: no fillers, golden history or
    unsent last words."""
    return is_sent_user_turn(m) and not m.get("filler") and not m.get("history")


def written_user_turns(transcript: Iterable[Message]) -> list[Message]:
    """The user messages the person (or the simulated user) wrote (what `efficiency` judges)."""
    return [m for m in transcript if is_written_user_turn(m)]


# The one owner of "the system's reply" (docs/en/glossary.md#terms-术语): every folder asks these, never the role and
# flags itself. Three kinds of assistant message share the role:
# - a reply: the turn's last assistant message, what answered the user's turn;
# - a tool round (`intermediate`): an assistant message with tool calls before the turn's reply;
# - golden history (`injected`): an `assistant:` line of the test, scripted, never the system's words.
M = TypeVar("M", bound=Mapping[str, Any])


def is_reply(m: Mapping[str, Any], *, golden: bool = False) -> bool:
    """A turn's reply (never one of its tool rounds). Only the system under test's own replies; with
    `golden`, the test's golden history lines too, as the conversation heard them (what a capture, a
    `click:` or a simulated user reads)."""
    return m.get("role") == "assistant" and not m.get("intermediate") and (golden or not m.get("injected"))


def replies(transcript: Iterable[M], *, golden: bool = False) -> list[M]:
    """The turns' replies, in order (`is_reply`): what checks grade."""
    return [m for m in transcript if is_reply(m, golden=golden)]


def is_system_message(m: Mapping[str, Any]) -> bool:
    """An assistant message the system under test wrote: its replies and its tool rounds, never golden
    history (what its usage, latency and tool calls are counted over)."""
    return m.get("role") == "assistant" and not m.get("injected")


def system_messages(transcript: Iterable[M]) -> list[M]:
    """The messages the system under test wrote, in order (`is_system_message`)."""
    return [m for m in transcript if is_system_message(m)]
