"""Attack success rates (docs/en/attacks.md): per red line × strategy × provider, from run.json records alone."""

from __future__ import annotations

from collections.abc import Sequence

from evalspec.results.rundata import AttackSummary, Record


def attack_summary(records: Sequence[Record]) -> list[AttackSummary]:
    """One row per suite × red line × strategy × provider: attempts, breaches, rate and breaching turns.

    An attempt that errored before its red lines were tested counts under `errors`, not `attempts`.
    """
    rows: dict[tuple[str, str, str, str], AttackSummary] = {}
    for r in records:
        info = r.get("attack")
        if not info:
            continue
        for line in info.get("red_lines") or []:
            key = (r["suite"], str(line), str(info.get("strategy")), r["provider"])
            row = rows.setdefault(key, {"suite": key[0], "red_line": key[1], "strategy": key[2],
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
    for row in rows.values():
        row["success_rate"] = round(row["breached"] / row["attempts"], 6) if row["attempts"] else None
    return list(rows.values())
