"""What a check receives and returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalspec.core.errors import GradingError
from evalspec.extend.provider import CallContext
from evalspec.extend.reasons.en import REASONS as _EN
from evalspec.extend.reasons.zh import REASONS as _ZH
from evalspec.extend.transcript import (
    ChatMessage,
    Message,
    ToolCall,
    is_reply,
    replies,
    sent_user_turns,
    system_messages,
)


@dataclass
class Evidence:
    turn: int | None
    text: str
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"turn": self.turn, "text": self.text}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Undecided:
    """A part of a check that reached no verdict (no state on its turn, a judge that failed): its turn
    (None: not one turn's) and why (docs/en/reports-and-gate.md#errors-and-failures)."""

    turn: int | None
    error: str

    def evidence(self) -> Evidence:
        return Evidence(self.turn, self.error, "error")

    def text(self) -> str:
        """The error, named by its turn."""
        return self.error if self.turn is None or f"turn {self.turn}" in self.error else f"turn {self.turn}: {self.error}"


@dataclass(frozen=True)
class Said:
    """A check's reason in English and in Chinese (run.json's `reason` and `reason_zh`)."""

    en: str
    zh: str

    def __str__(self) -> str:
        return self.en


def say(key: str, /, **fields: Any) -> Said:
    """The reason `key` of the reason catalogue (evalspec/extend/reasons, `REASONS`) in both languages,
    its `{fields}` filled: a `Said` field in the same language, anything else as it is (a pattern, a
    reply's words, a number) (docs/en/reports-and-gate.md#language)."""
    if any(isinstance(v, Said) for v in fields.values()):  # (a check's every reason: kept cheap)
        return Said(_EN[key].format_map({k: v.en if isinstance(v, Said) else v for k, v in fields.items()}),
                    _ZH[key].format_map({k: v.zh if isinstance(v, Said) else v for k, v in fields.items()}))
    return Said(_EN[key].format_map(fields), _ZH[key].format_map(fields))


@dataclass
class Check:
    """The outcome of one check on one reply (or one transcript). `undecided`: parts it could not decide,
    its verdict standing whatever they would say (a pass beside them is an error, a failure is failed).
    `reason_zh`: the reason in Chinese; None: `reason` is not evalspec's own words (a judge's, a plugin's)
    and reads the same in both languages."""

    passed: bool
    score: float
    reason: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    undecided: list[Undecided] = field(default_factory=list)
    reason_zh: str | None = None

    @classmethod
    def of(cls, passed: bool, reason: str | Said = "", evidence: list[Evidence] | None = None, *,
           score: float | None = None, details: dict[str, Any] | None = None) -> Check:
        """A verdict, its reason (`say(...)`: in both languages) and evidence; `score` 1 or 0 unless given."""
        en, zh = (reason.en, reason.zh) if isinstance(reason, Said) else (reason, None)
        return cls(passed, (1.0 if passed else 0.0) if score is None else score, en, evidence or [],
                   details or {}, [], zh)

    @property
    def said(self) -> Said:
        """The reason in both languages (the same text twice when it is not evalspec's own words)."""
        return Said(self.reason, self.reason if self.reason_zh is None else self.reason_zh)


@dataclass
class Reply:
    """An assistant reply under check; on `conversation` scope, all replies joined."""

    text: str
    turn: int | None
    latency_ms: float | None = None
    tokens: int | None = None
    cost: float | None = None
    whole_conversation: bool = False
    finish_reason: str | None = None  # why the model stopped (the message's `finish_reason`), None: not reported


@dataclass(frozen=True)
class JudgeRequest:
    """One call evalspec makes on its own behalf (judge, second opinion, simulated user, attacker): the
    messages, the answer's JSON Schema (None: `{reason, pass}`) under `name`, and `role` (named in errors).
    `max_tokens` None: the judge's cap (its `max_tokens`, default 512) × `answers` (a batch's verdicts).
    `parse` False: the answer is left unread (`JudgeVerdict.answer` empty) for the caller to read.
    `context` None: the judge's own (`thread_id` "judge", repeat `sample` + 1); `seed` and `read` (the
    cache) as for any call."""

    messages: list[ChatMessage]
    schema: dict[str, Any] | None = None
    name: str = "verdict"
    sample: int = 0
    answers: int = 1
    max_tokens: int | None = None
    role: str = "judge"
    parse: bool = True
    context: CallContext | None = None
    seed: int | None = None
    read: bool = True


@dataclass(frozen=True)
class JudgeVerdict:
    """A `JudgeRequest`'s answer: the parsed object (`answer`), the raw `text`, and the call's `usage`
    (`{tokens, cost, cached}`, and `cached_tokens` when the provider's prompt cache served some)."""

    answer: dict[str, Any]
    text: str
    usage: dict[str, Any]

    def recorded(self) -> dict[str, Any]:
        """The verdict as run.json records it (`details.verdicts[*]`): the answer, its usage as `_judge`."""
        out = dict(self.answer)
        out.setdefault("_judge", self.usage)
        return out


JudgeFn = Callable[[JudgeRequest], Awaitable[JudgeVerdict]]
EmbedFn = Callable[[list[str]], Awaitable[list[list[float]]]]


@dataclass(frozen=True)
class WorldView:
    """The world a conversation played on (docs/en/world.md): as it started and as the bot left it."""

    initial: Mapping[str, Any]
    final: Mapping[str, Any]


@dataclass
class GradingContext:
    """Everything a check may read. `transcript` ends at `turn` for turn-attached assertions."""

    transcript: list[Message]
    labels: Mapping[str, int]
    vars: Mapping[str, Any]
    test_id: str
    turn: int | None
    suite_dir: Path
    judge: JudgeFn | None = None
    embed: EmbedFn | None = None
    tools: Any = None  # the provider's declared tools (a list, or FILE.py:NAME), for tool-args-valid
    provider: str | None = None  # the id of the provider that answered (`recorded` for recorded conversations)
    world: WorldView | None = None  # the test's world, at the start and at the end (docs/en/world.md)

    def until(self, turn: int) -> GradingContext:
        """The context of an assertion attached to `turn`: the transcript ends with that turn."""
        cut = object.__new__(type(self))  # a copy of every field (faster than dataclasses.replace)
        cut.__dict__.update(self.__dict__)
        cut.transcript, cut.turn = [m for m in self.transcript if (m.get("turn") or 0) <= turn], turn
        return cut

    def replies(self) -> list[Message]:
        """Assistant replies that answer a user turn (`replies`)."""
        return replies(self.transcript)

    def reply_for_turn(self, turn: int) -> Message | None:
        for m in self.transcript:
            if is_reply(m, golden=True) and m.get("turn") == turn:
                return m
        return None

    def tool_calls(self, turn: int | None = None) -> list[tuple[int | None, ToolCall]]:
        """(turn, call) for every tool call in the transcript, or only those made during `turn`."""
        return [(m.get("turn"), c) for m in system_messages(self.transcript) if turn is None or m.get("turn") == turn
                for c in m.get("tool_calls") or []]

    def user_turns(self) -> int:
        """How many user turns the system under test received (`sent_user_turns`)."""
        return len(sent_user_turns(self.transcript))

    def resolve_turn(self, ref: Any) -> int:
        """A turn number or a label -> turn number."""
        return resolve_turn(ref, self.labels)


def snippet(text: str, limit: int = 160) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"

def resolve_turn(ref: Any, labels: Mapping[str, int]) -> int:
    """A turn number, a label or a number written as text -> the turn number."""
    if isinstance(ref, bool):
        raise GradingError(f"turn reference {ref!r} is not a number or label")
    if isinstance(ref, int):
        return ref
    if isinstance(ref, str) and ref in labels:
        return labels[ref]
    if isinstance(ref, str) and ref.isdigit():
        return int(ref)
    raise GradingError(f"unknown turn label {ref!r}")
