"""The `Provider` protocol: one async method that answers a conversation's next user message."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalspec.core.errors import ProviderError
from evalspec.extend.transcript import ChatMessage


@dataclass
class CallContext:
    thread_id: str
    test_id: str
    turn: int
    vars: dict[str, Any] = field(default_factory=dict)
    repeat: int = 1
    params: dict[str, Any] | None = None  # per-call request params of evalspec's own calls (response_format, ...)
    state: Mapping[str, object] | None = None  # the test's `state:` seed (docs/en/state.md): `context["state"]`, `{{ state }}`
    metadata: dict[str, Any] | None = None  # the user turn's `metadata:` (sent by `rasa:` providers, docs/en/state.md)
    #: what a provider keeps for this conversation between its turns, and for no other conversation: the
    #: same object on each of its calls, a new empty one for the next conversation (`http:` keeps the
    #: cookies its bot sets here, docs/en/providers.md#cookies)
    conversation: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProviderResponse:
    content: str
    latency_ms: float | None = None
    tokens: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    tool_calls: list[Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    cached_tokens: int | None = None  # prompt tokens the provider's prompt cache served (docs/en/rate-limits.md)
    state: dict[str, Any] | None = None  # the bot's state after this turn (docs/en/state.md), None: no state read
    parts: list[dict[str, Any]] | None = None  # the turn's messages `{text, buttons, image, custom}` (docs/en/state.md)
    finish_reason: str | None = None  # why the model stopped (`normalize_finish_reason`), None: not reported
    #: the answer came within a session the system keeps for this conversation alone (an `http:` bot's
    #: cookies): a conversation replayed from the cache up to here cannot go on live (docs/en/providers.md#cookies)
    session: bool = False

    def to_cache(self) -> dict[str, Any]:
        return {"content": self.content, "latency_ms": self.latency_ms, "tokens": self.tokens,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cost": self.cost, "tool_calls": self.tool_calls, "metadata": self.metadata,
                **({"cached_tokens": self.cached_tokens} if self.cached_tokens is not None else {}),
                **({"state": self.state} if self.state is not None else {}),
                **({"parts": self.parts} if self.parts is not None else {}),
                **({"finish_reason": self.finish_reason} if self.finish_reason is not None else {}),
                **({"session": True} if self.session else {})}

    @classmethod
    def from_cache(cls, data: dict[str, Any]) -> ProviderResponse | None:
        """The cached response; None when the entry holds no reply (a miss, never an empty reply)."""
        if not isinstance(data.get("content"), str) and not data.get("tool_calls"):
            return None
        return cls(content=str(data.get("content") or ""), latency_ms=data.get("latency_ms"),
                   tokens=data.get("tokens"), prompt_tokens=data.get("prompt_tokens"),
                   completion_tokens=data.get("completion_tokens"), cost=data.get("cost"),
                   tool_calls=data.get("tool_calls"), metadata=data.get("metadata") or {}, cached=True,
                   cached_tokens=data.get("cached_tokens"), state=data.get("state"), parts=data.get("parts"),
                   finish_reason=data.get("finish_reason"), session=data.get("session") is True)


PART_KEYS = ("text", "buttons", "image", "custom")

# why a model stopped: OpenAI's words, which every provider's word for them is read as
REASON_WORDS = ("stop", "length", "content_filter", "tool_calls")
# each provider's word -> the OpenAI word (promptfoo's table, so that imported `finish-reason` checks read
# the same): anything else is kept as it is, lower-cased
FINISH_REASONS = {
    **{word: word for word in REASON_WORDS},
    "function_call": "tool_calls", "max_output_tokens": "length",  # OpenAI's legacy and Responses words
    "end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
    "model_context_window_exceeded": "length", "refusal": "content_filter",  # Anthropic's
    "tool-calls": "tool_calls", "content-filter": "content_filter",  # the Vercel AI SDK's
}


def normalize_finish_reason(raw: Any) -> str | None:
    """A provider's finish (stop) reason in one vocabulary: `stop`, `length`, `content_filter`,
    `tool_calls` for every provider's word for them (`end_turn`, `max_tokens`, `tool_use` ...), any
    other word lower-cased; None when there is none (not text, or blank)."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    word = raw.strip().lower()
    return FINISH_REASONS.get(word, word)


def as_parts(found: Any, where: str) -> list[dict[str, Any]]:
    """A turn's messages as parts `{text, buttons: [{title, payload}], image, custom}` (docs/en/state.md): each
    object is read by those keys, a missing key is null; anything but a list of objects is an error."""
    if not isinstance(found, list) or not all(isinstance(m, dict) for m in found):
        raise ProviderError(f"{where} found {type(found).__name__}, expected a list of message objects")
    parts = []
    for message in found:
        buttons = message.get("buttons")
        parts.append({"text": message.get("text"),
                      "buttons": [{"title": b.get("title"), "payload": b.get("payload")}
                                  for b in buttons if isinstance(b, dict)] if isinstance(buttons, list) else None,
                      "image": message.get("image"), "custom": json_safe(message.get("custom"))})
    return parts


def clean_text(text: str) -> str:
    """Text that can be written as UTF-8: lone surrogates (from a user's code) become U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def json_safe(value: Any) -> Any:
    """`value` as plain JSON data (what cannot be serialised becomes its repr), so a user's odd
    metadata can never stop the journal or the cache from being written."""
    if value is None:
        return None
    try:
        return json.loads(json.dumps(value, ensure_ascii=True, default=repr, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return repr(value)[:1000]


class Provider(Protocol):
    """A system under test, a judge or a simulator."""

    id: str

    async def respond(self, messages: list[ChatMessage], context: CallContext) -> ProviderResponse:
        """Answer the last user message of `messages` (OpenAI-style history)."""
        ...

    def cache_identity(self) -> dict[str, Any]:
        """The configuration that decides the answer (the cache key's provider part)."""
        ...


def url_problem(url: str) -> str | None:
    """What is wrong with an endpoint URL (a provider's `http.url`, a model's `api_base`), or None."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        return f"malformed URL {url!r}: expected http(s)://host[:port]/path"
    return None
