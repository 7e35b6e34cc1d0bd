"""Tool calls and teardowns in reports (docs/en/agents.md): small render functions the reporters call.

HTML shows each call as a compact card (name, arguments, result) under the assistant message that
made it; Markdown and JUnit failure text list the calls of the failing turn. All read run.json only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from evalspec.extend.transcript import Message
from evalspec.reporters.catalogue import words
from evalspec.results.rundata import Record, RunData

if TYPE_CHECKING:
    from markupsafe import Markup

CSS = (".calls{margin:2px 0 6px;max-width:75%}.call{background:#fff7ed;border:1px solid #fed7aa;border-radius:8px;"
       "padding:4px 8px;margin:4px 0;font-size:13px}.call b{font-family:ui-monospace,monospace;color:#9a3412}"
       ".call code{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-word}"
       ".call .tag{font-size:11px;text-transform:uppercase;color:#9a3412;border:1px solid #fdba74;border-radius:4px;padding:0 3px}"
       ".call .res{color:#374151;display:block}.teardown{font-size:13px}")


def _args(arguments: Any, limit: int = 400) -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def results_by_call(transcript: list[Message]) -> dict[str, str]:
    """tool_call_id -> the result recorded for it."""
    return {str(m.get("tool_call_id")): str(m.get("content", "")) for m in transcript if m.get("role") == "tool"}


def calls_html(message: Message, transcript: list[Message]) -> Markup:
    """The call cards of one assistant message (empty for a message without calls)."""
    from markupsafe import Markup  # the HTML report only (docs/en/scale-and-ray.md#start-up)

    calls = message.get("tool_calls") or []
    if not calls:
        return Markup("")
    results = results_by_call(transcript)
    cards = []
    for c in calls:
        result = results.get(str(c.get("id")))
        shown = "" if result is None else Markup('<span class="res">→ <code>{}</code></span>').format(_args(result))
        cards.append(Markup('<div class="call"><span class="tag">{}</span> <b>{}</b> <code>{}</code>{}</div>').format(
            words("tool"), c.get("name"), _args(c.get("arguments")), shown))
    return Markup('<div class="calls">') + Markup("").join(cards) + Markup("</div>")


def calls_text(record: Record, turn: int | None, limit: int = 5) -> list[str]:
    """`tool NAME(ARGS) → RESULT` lines for the calls of `turn` (every turn when None), for failure text."""
    transcript = record.get("transcript") or []
    results = results_by_call(transcript)
    lines = []
    for m in transcript:
        if m.get("role") != "assistant" or (turn is not None and m.get("turn") != turn):
            continue
        for c in m.get("tool_calls") or []:
            result = results.get(str(c.get("id")))
            call = (f"{c.get('name')}({_args(c.get('arguments'), 200)})"
                    + ("" if result is None else f" → {_args(result, 200)}"))
            lines.append(words("call_line", turn=m.get("turn"), call=call))
    if len(lines) > limit:
        lines = lines[:limit] + [words("more_calls", n=len(lines) - limit)]
    return lines


def failing_calls_text(record: Record, limit: int = 5) -> list[str]:
    """The calls made in the turns a failing assertion points at (its turn, its evidence), for failure text."""
    turns: set[int] = set()
    for a in record.get("assertions") or []:
        if a.get("pass") is False or a.get("error"):
            turns.update(t for t in [a.get("turn"), *(e.get("turn") for e in a.get("evidence") or [])]
                         if isinstance(t, int))
    lines = [line for turn in sorted(turns) for line in calls_text(record, turn, limit)]
    if len(lines) > limit:
        lines = lines[:limit] + [words("more_calls", n=len(lines) - limit)]
    return lines


def teardown_text(record: Record) -> str | None:
    """'teardown failed: ...' for a record whose teardown failed (None when it ran fine or there is none)."""
    teardown = record.get("teardown")
    if isinstance(teardown, dict) and teardown.get("ok") is False:
        return words("teardown_failed", error=teardown.get("error"))
    return None


def failed_teardowns(run: RunData) -> list[tuple[Record, str]]:
    """Every record whose teardown failed, passed ones included: what an agent did may still be in place."""
    from evalspec.results.stream import records_where

    return [(r, text) for r in records_where(run.get("results", []), teardown_text, (b'"teardown"',))
            if (text := teardown_text(r))]


def teardown_html(record: Record) -> Markup:
    from markupsafe import Markup  # the HTML report only (docs/en/scale-and-ray.md#start-up)

    text = teardown_text(record)
    return Markup('<p class="teardown error">⚠ {}</p>').format(text) if text else Markup("")


def message_hidden(message: Message) -> bool:
    """Tool results are shown inside their call's card, not as messages of their own."""
    return message.get("role") == "tool"


__all__ = ["CSS", "calls_html", "calls_text", "failing_calls_text", "message_hidden", "teardown_html",
           "teardown_text"]
