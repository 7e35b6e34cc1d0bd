"""What is a reply: the one owner every reply source goes through (docs/en/providers.md#no-reply).

A bot's answer holds a reply when it carries text (an explicit `""` too: a reply whose text is
empty), tool calls, or a part with text or buttons. An answer that holds none of these — a message
whose content is null or absent without tool calls, a reply path that finds nothing, an empty list
(`[]`, `{"messages": []}`), parts none of which carries text or buttons — is no reply: an error of
its turn (`NoReply`), never the text "". A turn that says `no_reply: ok` (a bot silent by design)
records the empty reply `NoReply.response` holds instead.

Sources: `python:`, `http:`, `rasa:` and `model:` providers (litellm and the lean OpenAI-compatible
client) raise `NoReply` through `reply`; recorded conversations (JSONL, CSV, inline `transcript:`)
ask `holds_reply` of each assistant message.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from evalspec.core.errors import ProviderError
from evalspec.extend.provider import ProviderResponse

__all__ = ["NoReply", "found_text", "holds_reply", "message_text", "reply"]


class NoReply(ProviderError):
    """The bot answered the turn with nothing. `response` is what came with the silence (latency,
    state, parts), its content "": the turn's reply where the turn says `no_reply: ok`."""

    def __init__(self, message: str, response: ProviderResponse) -> None:
        super().__init__(message)
        self.response = response

    def prefixed(self, prefix: str) -> NoReply:
        """The same silence, its message prefixed (`provider: ...`), as a caller re-raises it."""
        again = NoReply(f"{prefix}{self}", self.response)
        again.__cause__ = self
        return again


def message_text(content: Any) -> str | None:
    """A chat message's content as text: a string as it is; a list of content parts, the texts they
    carry joined (None when none carries text: `[]`, only images); None stays None (no text). Any other
    value is returned as None too: the caller decides whether it is an error."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p if isinstance(p, str) else p.get("text") for p in content if isinstance(p, (str, dict))]
        kept = [t for t in texts if isinstance(t, str)]
        return "".join(kept) if kept else None
    return None


def found_text(value: Any, where: str) -> str | None:
    """What a reply path found, as text: a string as it is, a number as written; a list of texts (the
    turn's several messages) joined by a newline, its nulls left out; None, `[]` or a list of only
    nulls is None (nothing found). An object, or a list holding anything else, is an error: not text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) or v is None for v in value):
        texts = [v for v in value if v is not None]
        return "\n".join(texts) if texts else None
    if isinstance(value, (dict, list)):
        raise ProviderError(f"{where} found {type(value).__name__}, not text: {str(value)[:200]}")
    return str(value)


def _carries(part: Any) -> bool:
    """A part carries a reply: it has text (an empty one too) or at least one button."""
    return isinstance(part, dict) and (isinstance(part.get("text"), str) or bool(part.get("buttons")))


def holds_reply(text: str | None, tool_calls: Any, parts: Any) -> bool:
    """Whether an answer is a reply: it has text, tool calls, or a part that carries text or buttons."""
    return text is not None or bool(tool_calls) or (isinstance(parts, list) and any(map(_carries, parts)))


def reply(response: ProviderResponse, text: str | None, where: str, why: str) -> ProviderResponse:
    """`response` with its reply text: `text`, else (it is None) the texts of its parts joined by a
    newline, or "" beside tool calls. No reply at all raises NoReply: "WHERE: no reply: WHY"."""
    if not holds_reply(text, response.tool_calls, response.parts):
        raise NoReply(f"{where}: no reply: {why}", dataclasses.replace(response, content=""))
    if text is None:
        text = "\n".join(p["text"] for p in response.parts or [] if isinstance(p.get("text"), str))
    return dataclasses.replace(response, content=text)
