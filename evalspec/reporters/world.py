"""The world in reports (docs/en/world.md): what the conversation changed, read from run.json's
`world_initial` and `world` — each changed path with its old and new value (`inventory[2].stock: 2 →
1`), and for a list that grew or shrank the elements it gained or lost. A record without a world
shows nothing new.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from evalspec.core.jsondiff import Difference, differences, same
from evalspec.reporters.catalogue import words

LIMIT = 80  # characters of one shown value
MAX_LINES = 30

CSS = (".world{margin:6px 0;padding:6px 10px;border:1px solid #bfdbfe;background:#eff6ff;border-radius:8px;"
       "font-size:13px}.world b{color:#1d4ed8}.world ul{margin:4px 0 0 18px;padding:0}"
       ".world li{font-family:ui-monospace,monospace;word-break:break-word}.world s{color:#9ca3af}")


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= LIMIT else text[: LIMIT - 1] + "…"


def _list_lines(d: Difference) -> list[str]:
    """A list that changed length: the elements it gained (+) or lost (−)."""
    before, after = list(d.before), list(d.after)
    gained = [x for x in after if not any(same(x, y) for y in before)]
    lost = [x for x in before if not any(same(x, y) for y in after)]
    return [f"{d.path} + {_value(x)}" for x in gained] + [f"{d.path} − {_value(x)}" for x in lost] or \
        [f"{d.path}: {len(before)} → {len(after)}"]


def change_lines(record: Mapping[str, Any]) -> list[str] | None:
    """What the conversation changed in its world, one line per change; None when it has no world."""
    if "world" not in record or "world_initial" not in record:
        return None
    lines: list[str] = []
    for d in differences(record["world_initial"], record["world"]):
        if not d.had:
            lines.append(f"{d.path} + {_value(d.after)}")
        elif not d.has:
            lines.append(f"{d.path} − {_value(d.before)}")
        elif isinstance(d.before, list) and isinstance(d.after, list):
            lines += _list_lines(d)
        else:
            lines.append(f"{d.path}: {_value(d.before)} → {_value(d.after)}")
    return lines[:MAX_LINES]


def world_html(record: Mapping[str, Any]) -> Markup:
    """The record's world changes as a small block under its conversation (empty without a world)."""
    lines = change_lines(record)
    if lines is None:
        return Markup("")
    if not lines:
        return Markup('<div class="world"><b>{}</b></div>').format(words("world_same"))
    items = Markup("").join(Markup("<li>{}</li>").format(line) for line in lines)
    return Markup('<div class="world"><b>{}</b><ul>{}</ul></div>').format(words("world_title"), items)


def has_world(run: Mapping[str, Any]) -> bool:
    return any("world" in r for r in run.get("results", []))


def failing_world_text(record: Mapping[str, Any], limit: int = 5) -> list[str]:
    """`world: …` for a failing record's failure text (empty without a world)."""
    lines = change_lines(record)
    if lines is None:
        return []
    return [words("world_line", changes="; ".join(lines[:limit]) if lines else words("world_nothing"))]


__all__ = ["CSS", "change_lines", "failing_world_text", "has_world", "world_html"]
