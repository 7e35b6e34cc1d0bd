"""What every report says about a failing assertion: the turn, the rule as written, its severity when
critical, and the reply as the bot wrote it — an excerpt around the matched text, which each format
highlights its own way (bold in Markdown and console, `<mark>` in HTML) — and the one line that names
a conversation's first failure (console progress, JUnit messages, the baseline diff's "first problem").

Read from run.json alone (reporters never re-grade), so an old run renders the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalspec.core.text import strip_controls
from evalspec.extend.transcript import Message, system_messages

EXCERPT_CHARS = 300
WHITESPACE = re.compile(r"\s+")
TURN_PREFIX = re.compile(r"(turn \d+): ")
RULE_CHARS = 120


@dataclass
class Excerpt:
    """A reply cut to at most EXCERPT_CHARS around `match` (empty when nothing in it is to blame)."""

    turn: int | None
    before: str
    match: str
    after: str

    @property
    def text(self) -> str:
        return self.before + self.match + self.after


@dataclass
class Fact:
    """memory-recall / refers-to: what was expected and what the reply actually named."""

    key: str
    expected: str
    found: str
    ok: bool


@dataclass
class Finding:
    """One failing (or erroring) assertion of one conversation."""

    rule: str
    critical: bool
    where: str
    reason: str
    error: str | None = None
    excerpts: list[Excerpt] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    description: str = ""  # the rule's `description:`: why it exists (docs/en/reports-and-gate.md#language)
    reason_zh: str | None = None  # the reason in Chinese (run.json's `reason_zh`; absent in older runs)


def rule_text(a: Mapping[str, Any]) -> str:
    """`not-regex: 到店|预约`, `at-most: pattern 预约|试驾, count 1` — the rule as the suite wrote it."""
    value = a.get("value")
    if value is None or value is True:
        return str(a["type"])
    shown = _flat(value)
    if len(shown) > RULE_CHARS:
        shown = shown[: RULE_CHARS - 1] + "…"
    return f"{a['type']}: {shown}"


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {_flat(v)}" for k, v in value.items())
    if isinstance(value, list):
        return " / ".join(_flat(v) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _replies(record: Mapping[str, Any]) -> list[Message]:
    return system_messages(record.get("transcript", []))


def excerpt(text: str, needle: str, turn: int | None, limit: int = EXCERPT_CHARS) -> Excerpt:
    """At most `limit` characters of `text` around the first occurrence of `needle` (case-insensitive)."""
    at = text.casefold().find(needle.casefold()) if needle else -1
    if at < 0:
        cut = text if len(text) <= limit else text[: limit - 1] + "…"
        return Excerpt(turn, cut, "", "")
    match = text[at:at + len(needle)][:limit]
    room = limit - len(match)
    start = max(0, at - room // 2)
    end = min(len(text), at + len(match) + (room - (at - start)))
    start = max(0, min(start, end - limit))
    before = ("…" if start > 0 else "") + text[start:at]
    after = text[at + len(match):end] + ("…" if end < len(text) else "")
    return Excerpt(turn, before, match, after)


def _blames(note: str, needle: str, reply: str) -> bool:
    """Evidence that names what matched (highlight it), not a snippet shown for want of a match."""
    if not needle or note in ("no match", "missing") or note.endswith(": missing"):
        return False
    return not (len(needle) >= 60 and reply.startswith(needle.rstrip("…")))


def _excerpts(record: Mapping[str, Any], a: Mapping[str, Any]) -> list[Excerpt]:
    """At most three excerpts; a check with facts (memory-recall, refers-to) shows each reply once, since
    its fact lines already say what was found."""
    per_reply = bool(_facts(a))
    replies = _replies(record)
    by_turn = {m.get("turn"): m for m in replies}
    out: list[Excerpt] = []
    seen: set[tuple[int | None, str]] = set()
    for e in a.get("evidence") or []:
        needle = str(e.get("text") or "")
        turn = e.get("turn")
        reply = by_turn.get(turn) if turn is not None else None
        if reply is None and turn is None and needle:
            reply = next((m for m in replies if needle.casefold() in str(m.get("content", "")).casefold()), None)
        if reply is None and a.get("turn") is not None:
            reply = by_turn.get(a["turn"])
        if reply is None:
            continue
        content = strip_controls(reply.get("content", ""))
        shown = excerpt(content, needle if _blames(str(e.get("note") or ""), needle, content) else "",
                        reply.get("turn"))
        key = (shown.turn, "" if per_reply else shown.match)
        if key not in seen:
            seen.add(key)
            out.append(shown)
        if len(out) == 3:
            break
    if not out and a.get("turn") is not None and a["turn"] in by_turn:
        out.append(excerpt(strip_controls(by_turn[a["turn"]].get("content", "")), "", a["turn"]))
    return out


def _facts(a: Mapping[str, Any]) -> list[Fact]:
    details = a.get("details") or {}
    if "facts" in details:
        return [Fact(str(f["key"]), " / ".join(map(str, f["expected"])), str(f.get("found") or ""),
                     bool(f.get("score") == 1)) for f in details["facts"]]
    if "entity" in details:
        d = details["entity"]
        facts = [Fact("entity", " / ".join(map(str, d["expected"])), str(d.get("found") or ""),
                      bool(d.get("found")) and not d.get("distractors"))]
        if d.get("distractors"):
            facts.append(Fact("distractor", "none of " + " / ".join(map(str, d.get("not", []))),
                              ", ".join(map(str, d["distractors"])), False))
        return facts
    return []


def _where(a: Mapping[str, Any], excerpts: list[Excerpt]) -> str:
    turns = sorted({x.turn for x in excerpts if x.turn is not None}
                   | {e["turn"] for e in a.get("evidence") or [] if isinstance(e.get("turn"), int)})
    if not turns and a.get("turn") is not None:
        turns = [a["turn"]]
    if not turns:
        return "whole conversation"
    return ("turn " if len(turns) == 1 else "turns ") + ", ".join(map(str, turns))


def explain(record: Mapping[str, Any], a: Mapping[str, Any]) -> Finding:
    """One failing or erroring assertion of `record`, explained."""
    shown = _excerpts(record, a) if not a.get("error") else []
    return Finding(rule_text(a), a.get("severity") == "critical" and a.get("pass") is False,
                   _where(a, shown), str(a.get("reason") or ""), a.get("error"), shown, _facts(a),
                   str(a.get("description") or ""), a.get("reason_zh"))


def findings(record: Mapping[str, Any]) -> list[Finding]:
    """Every failing or erroring assertion of a record, explained; a conversation error comes first."""
    out = []
    if record.get("error") and not any(a.get("error") for a in record.get("assertions", [])):
        error = str(record["error"])
        at = TURN_PREFIX.match(error)
        out.append(Finding("", False, at.group(1) if at else _last_turn(record), "",
                           error=error[at.end():] if at else error))
    out += [explain(record, a) for a in record.get("assertions", []) if a.get("pass") is False or a.get("error")]
    return out


def _last_turn(record: Mapping[str, Any]) -> str:
    turns = [m["turn"] for m in record.get("transcript", []) if isinstance(m.get("turn"), int)]
    return f"turn {max(turns)}" if turns else "before the first reply"


def finding_line(f: Finding) -> str:
    """`turn 2: not-regex: 1[3-9]\\d{9} [critical]: unexpected: matched '139…'` — one finding on one line."""
    text = f.where + (f": {f.rule}" if f.rule else "") + (" [critical]" if f.critical else "")
    return WHITESPACE.sub(" ", strip_controls(text + ": " + (f"error: {f.error}" if f.error else f.reason)))


def first_failure(record: Mapping[str, Any]) -> str:
    """The first finding of a failed, xfailed or errored conversation on one line ("" when there is none)."""
    found = findings(record)
    return finding_line(found[0]) if found else ""
