"""The bot's own state in reports (docs/en/state.md): small pure functions over run.json's transcript.

Under each assistant turn that has `state`, a report shows the slots that changed since the previous state
(old → new; the `slots` mapping when the state has one, else the top-level keys), the notable keys
compactly (intent, active_flow, actions), and the buttons of the turn's `parts` as chips; a `click:` user
turn shows "clicked T". A transcript without state or parts shows nothing new.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from evalspec.reporters.catalogue import words

NOTABLE = ("intent", "active_flow", "actions")
LIMIT = 60  # characters of one shown value

CSS = (".state{margin:4px 0 2px;font-size:13px;color:#374151;white-space:normal}"
       ".state .chg{display:inline-block;background:#ecfdf5;border:1px solid #a7f3d0;border-radius:6px;"
       "padding:0 6px;margin:2px 4px 2px 0;font-family:ui-monospace,monospace;word-break:break-word}"
       ".state .chg s{color:#9ca3af}.state .key{color:#047857;font-weight:600}"
       ".state .note{display:inline-block;background:#f5f3ff;border:1px solid #ddd6fe;border-radius:6px;"
       "padding:0 6px;margin:2px 4px 2px 0;word-break:break-word}"
       ".buttons{margin:6px 0 2px;display:flex;gap:6px;flex-wrap:wrap;white-space:normal}"
       ".chip{display:inline-block;border:1px solid #6366f1;color:#4338ca;background:#fff;border-radius:999px;"
       "padding:1px 10px;font-size:13px;white-space:nowrap;max-width:100%;overflow:hidden;text-overflow:ellipsis}"
       ".clicked{font-size:12px;color:#4338ca}")


@dataclass(frozen=True)
class Change:
    key: str
    old: Any
    new: Any
    had: bool  # the key was there before (else: "—")


@dataclass(frozen=True)
class TurnState:
    """What a report shows under one assistant message."""

    changes: list[Change] = field(default_factory=list)
    notable: list[tuple[str, Any]] = field(default_factory=list)
    buttons: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.changes or self.notable or self.buttons)


def _slots(state: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    slots = state.get("slots")
    return (slots, True) if isinstance(slots, Mapping) else (state, False)


def changes(previous: Mapping[str, Any] | None, state: Mapping[str, Any]) -> list[Change]:
    """The slots (else the top-level keys, the notable ones aside) whose value differs from `previous`'s;
    a key missing before counts as null, so a slot still unset is no change."""
    now, by_slots = _slots(state)
    before: Mapping[str, Any] = _slots(previous)[0] if previous is not None else {}
    out = []
    for key, new in now.items():
        if not by_slots and key in NOTABLE:
            continue
        old = before.get(key)
        if old != new:
            out.append(Change(str(key), old, new, key in before))
    if previous is not None:  # a key that went away
        out += [Change(str(k), v, None, True) for k, v in before.items()
                if k not in now and v is not None and (by_slots or k not in NOTABLE)]
    return out


def notable(state: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """intent, active_flow and actions, when they hold something."""
    return [(k, state[k]) for k in NOTABLE if state.get(k) not in (None, "", [], {})]


def buttons(message: Mapping[str, Any]) -> list[str]:
    """The button titles of every part of the message, in order (a payload stands in for a missing title)."""
    titles = []
    for part in message.get("parts") or []:
        if not isinstance(part, Mapping):
            continue
        for b in part.get("buttons") or []:
            if isinstance(b, Mapping):
                title = b.get("title") if b.get("title") is not None else b.get("payload")
                if title is not None:
                    titles.append(str(title))
    return titles


def turn_states(transcript: Sequence[Mapping[str, Any]]) -> dict[int, TurnState]:
    """The index of every assistant message with something to show → what to show under it."""
    out: dict[int, TurnState] = {}
    previous: Mapping[str, Any] | None = None
    for i, m in enumerate(transcript):
        if m.get("role") != "assistant":
            continue
        state = m.get("state")
        shown = TurnState()
        if isinstance(state, Mapping):
            shown = TurnState(changes(previous, state), notable(state), [])
            previous = state
        shown = TurnState(shown.changes, shown.notable, buttons(m))
        if shown:
            out[i] = shown
    return out


def value_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= LIMIT else text[: LIMIT - 1] + "…"


def _notable_text(key: str, value: Any) -> str:
    if key == "actions" and isinstance(value, list):
        return f"{key}: " + value_text(", ".join(map(str, value)))
    return f"{key}: {value_text(value)}"


def change_text(c: Change) -> str:
    return f"{c.key}: {value_text(c.old) if c.had else '—'} → {value_text(c.new)}"


def turn_text(shown: TurnState) -> str:
    """One line: `state: car_model: — → 瑶光 · active_flow: book_test_drive · buttons: [周六] [周日]`."""
    pieces = []
    if shown.changes:
        pieces.append(", ".join(change_text(c) for c in shown.changes))
    pieces += [_notable_text(k, v) for k, v in shown.notable]
    text = words("state_line", changes=" · ".join(pieces)) if pieces else ""
    if shown.buttons:
        chips = " ".join(f"[{value_text(b)}]" for b in shown.buttons)
        text = (text + " · " if text else "") + words("buttons_line", buttons=chips)
    return text


def turn_html(shown: TurnState | None) -> Markup:
    """The changed slots as `key old → new` pills, the notable keys, the buttons as chips."""
    if not shown:
        return Markup("")
    html = Markup("")
    if shown.changes or shown.notable:
        pills = [Markup('<span class="chg"><span class="key">{}</span> {} → {}</span>').format(
            c.key, Markup("<s>{}</s>").format(value_text(c.old)) if c.had else "—", value_text(c.new))
            for c in shown.changes]
        pills += [Markup('<span class="note">{}</span>').format(_notable_text(k, v)) for k, v in shown.notable]
        html += Markup('<div class="state" title="{}">{} {}</div>').format(
            words("bot_state"), words("bot_state"), Markup("").join(pills))
    if shown.buttons:
        html += Markup('<div class="buttons">{}</div>').format(
            Markup("").join(Markup('<span class="chip">{}</span>').format(value_text(b)) for b in shown.buttons))
    return html


def clicked_text(message: Mapping[str, Any]) -> str:
    """'clicked T' for a user turn written as `click: T` (empty otherwise)."""
    click = message.get("click")
    return words("clicked", title=value_text(click)) if message.get("role") == "user" and click is not None else ""


def has_state(run: Mapping[str, Any]) -> bool:
    """Whether any message of the run carries state, parts or a click (the CSS is added only then)."""
    return any(m.get("state") is not None or m.get("parts") or m.get("click") is not None
               for r in run.get("results", []) for m in r.get("transcript") or [])


def failing_state_text(record: Mapping[str, Any], limit: int = 5) -> list[str]:
    """`turn N: state: …` lines for the turns a failing assertion points at, for failure text."""
    turns: set[int] = set()
    for a in record.get("assertions") or []:
        if a.get("pass") is False or a.get("error"):
            turns.update(t for t in [a.get("turn"), *(e.get("turn") for e in a.get("evidence") or [])]
                         if isinstance(t, int))
    transcript = list(record.get("transcript") or [])
    shown = turn_states(transcript)
    lines = [words("turn_state_line", turn=transcript[i].get("turn"), text=turn_text(s))
             for i, s in shown.items() if transcript[i].get("turn") in turns and not transcript[i].get("intermediate")]
    return lines[:limit]


__all__ = ["CSS", "Change", "TurnState", "buttons", "changes", "clicked_text", "failing_state_text", "has_state",
           "notable", "turn_html", "turn_states", "turn_text"]
