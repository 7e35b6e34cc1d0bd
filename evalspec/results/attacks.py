"""Attack success rates (docs/en/attacks.md): per red line × strategy × provider, from run.json records alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evalspec.results.rundata import AttackSummary
from evalspec.results.stream import fed


def attack_summary(records: Iterable[Mapping[str, Any]]) -> list[AttackSummary]:
    """One row per suite × red line × strategy × provider: attempts, breaches, rate and breaching turns.

    An attempt that errored before its red lines were tested counts under `errors`, not `attempts`.
    """
    return fed(records, AttackRows()).result()


class AttackRows:
    """`attack_summary` as the records pass by (a `stream.Fold`): one row per suite × red line × strategy × provider."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str, str], AttackSummary] = {}

    def add(self, r: Mapping[str, Any]) -> None:
        info = r.get("attack")
        if not info:
            return
        for line in info.get("red_lines") or []:
            key = (r["suite"], str(line), str(info.get("strategy")), r["provider"])
            row = self.rows.setdefault(key, {"suite": key[0], "red_line": key[1], "strategy": key[2],
                                             "provider": key[3], "tests": [], "attempts": 0, "breached": 0,
                                             "errors": 0, "breach_turns": [], "success_rate": None})
            if r["test"] not in row["tests"]:
                row["tests"].append(r["test"])
            if r.get("status") == "error" and r.get("stop_reason") != "breached":
                row["errors"] += 1
                continue
            row["attempts"] += 1
            if line in (info.get("breached") or []):
                row["breached"] += 1
                row["breach_turns"].append(info.get("breached_turn"))

    def result(self) -> list[AttackSummary]:
        for row in self.rows.values():
            row["success_rate"] = round(row["breached"] / row["attempts"], 6) if row["attempts"] else None
        return list(self.rows.values())
