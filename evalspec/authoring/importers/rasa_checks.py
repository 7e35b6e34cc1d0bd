"""The checks a Rasa test writes, as evalspec's `state:` checks over a turn's tracker state: JMESPath
literals and field names, slots set (`slot_was_set`); shared by end-to-end tests and test stories."""

from __future__ import annotations

import json
import re
from typing import Any

from evalspec.authoring.importers import plain

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def jp_literal(value: Any) -> str:
    """A JMESPath JSON literal: `"x"` in backticks."""
    return "`" + json.dumps(value, ensure_ascii=False).replace("`", "\\`") + "`"


def jp_field(name: str) -> str:
    return name if _IDENT.match(name) else json.dumps(name, ensure_ascii=False)


def _has(key: str, value: str) -> str:
    return f"contains({key}, {jp_literal(value)})"


def _state(expr: str, negated: bool = False) -> dict[str, object]:
    return {("not-state" if negated else "state"): plain(expr)}


def _slot_items(value: Any) -> list[tuple[str, bool, Any]]:
    """`slot_was_set` entries: `{name, value}`, `{slot: value}` or a bare name -> (name, has_value, value)."""
    out: list[tuple[str, bool, Any]] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            out.append((item, False, None))
        elif isinstance(item, dict) and "name" in item:
            out.append((str(item["name"]), "value" in item, item.get("value")))
        elif isinstance(item, dict):
            out += [(str(k), True, v) for k, v in item.items()]
    return out


def slot_checks(value: Any, negated: bool) -> list[dict[str, object]]:
    checks = []
    for name, has_value, slot_value in _slot_items(value):
        key = f"slots_set.{jp_field(name)}"
        if not has_value:
            checks.append(_state(f"contains(keys(slots_set), {jp_literal(name)})", negated))
        elif slot_value is None:
            checks.append(_state(f"contains(keys(slots_set), {jp_literal(name)}) && {key} == `null`", negated))
        else:
            checks.append({("not-state" if negated else "state"): {"path": plain(key), "equals": plain(slot_value)}})
    return checks
