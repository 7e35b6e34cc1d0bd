"""How much a jury's members agree (docs/en/judges.md#juries): Fleiss' kappa per judged rule, over the
conversations every member answered, and each member's disagreement rate with the jury's verdict.
Read from run.json's records alone (each assertion result's `jury`), so every report can show it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalspec.results.errorbars import rule_name
from evalspec.results.rundata import Jury


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of `table` (one row per subject: how many raters chose each category; every row the
    same number of raters, at least two). 1 when every answer is the same; None with no subjects."""
    rows = [list(r) for r in table if sum(r)]
    if not rows:
        return None
    n = sum(rows[0])
    if n < 2 or any(sum(r) != n for r in rows):
        raise ValueError("every subject needs the same number of raters, at least two")
    subjects = len(rows)
    shares = [sum(r[j] for r in rows) / (subjects * n) for j in range(len(rows[0]))]
    observed = sum((sum(c * c for c in r) - n) / (n * (n - 1)) for r in rows) / subjects
    expected = sum(p * p for p in shares)
    if expected >= 1.0:  # every answer the same category: complete agreement
        return 1.0
    return (observed - expected) / (1.0 - expected)


def _answer(member: Mapping[str, Any]) -> str:
    """A member's answer as a category: its level when the rule is graded, else pass / fail."""
    return str(member["level"]) if member.get("level") is not None else ("pass" if member.get("pass") else "fail")


def jury_summary(records: Iterable[Mapping[str, Any]]) -> list[Jury]:
    """`summary.juries`: per suite and judged rule decided by a jury, the members, the conversations every
    member answered (`n`), Fleiss' kappa over them, and each member's disagreement rate with the jury's
    verdict (over the conversations that member answered and the jury decided)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        for a in r.get("assertions") or []:
            jury = a.get("jury")
            if not jury:
                continue
            key = (str(r.get("suite")), rule_name(a))
            line = found.setdefault(key, {"suite": key[0], "rule": key[1], "members": [m["judge"] for m in jury],
                                          "rows": [], "against": {}})
            answered = [m for m in jury if "error" not in m]
            if len(answered) == len(jury):
                line["rows"].append([_answer(m) for m in answered])
            if a.get("pass") is None:
                continue
            for m in answered:
                seen = line["against"].setdefault(m["judge"], [0, 0])
                seen[0] += 1
                seen[1] += bool(m.get("pass")) != bool(a["pass"])
    out: list[Jury] = []
    for line in found.values():
        categories = sorted({c for row in line["rows"] for c in row})
        table = [[row.count(c) for c in categories] for row in line["rows"]]
        kappa = fleiss_kappa(table)
        out.append({"suite": line["suite"], "rule": line["rule"], "members": line["members"],
                    "n": len(line["rows"]), "kappa": None if kappa is None else round(kappa, 4),
                    "disagreement": {judge: round(d / n, 4) for judge, (n, d) in line["against"].items() if n}})
    return out
