"""How much a jury's members agree (docs/en/judges.md#juries): Fleiss' kappa per judged rule, over the
conversations every member answered, and each member's disagreement rate with the jury's verdict.
Read from run.json's records alone (each assertion result's `jury`), so every report can show it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalspec.results.errorbars import rule_name
from evalspec.results.rundata import Jury
from evalspec.results.stream import fed


def fleiss_kappa(table: Sequence[Sequence[int]], times: Sequence[int] | None = None) -> float | None:
    """Fleiss' kappa of `table` (one row per subject: how many raters chose each category; every row the
    same number of raters, at least two), each row standing for `times[i]` subjects when given. 1 when
    every answer is the same; None with no subjects."""
    weighted = [(list(r), w) for r, w in zip(table, times if times is not None else [1] * len(table), strict=True)
                if sum(r) and w]
    if not weighted:
        return None
    n = sum(weighted[0][0])
    if n < 2 or any(sum(r) != n for r, _ in weighted):
        raise ValueError("every subject needs the same number of raters, at least two")
    subjects = sum(w for _, w in weighted)
    shares = [sum(r[j] * w for r, w in weighted) / (subjects * n) for j in range(len(weighted[0][0]))]
    observed = sum((sum(c * c for c in r) - n) / (n * (n - 1)) * w for r, w in weighted) / subjects
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
    return fed(records, Juries()).result()


class Juries:
    """`jury_summary` as the records pass by (a `stream.Fold`): per suite and jury-decided rule, the
    answers' table and each member's disagreements."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, str], dict[str, Any]] = {}

    def add(self, r: Mapping[str, Any]) -> None:
        for a in r.get("assertions") or []:
            jury = a.get("jury")
            if not jury:
                continue
            key = (str(r.get("suite")), rule_name(a))
            line = self.found.setdefault(key, {"suite": key[0], "rule": key[1], "members": [m["judge"] for m in jury],
                                               "rows": Counter(), "against": {}})
            answered = [m for m in jury if "error" not in m]
            if len(answered) == len(jury):  # the same answers, in any order, are the same row of the table
                line["rows"][tuple(sorted(_answer(m) for m in answered))] += 1
            if a.get("pass") is None:
                continue
            for m in answered:
                seen = line["against"].setdefault(m["judge"], [0, 0])
                seen[0] += 1
                seen[1] += bool(m.get("pass")) != bool(a["pass"])

    def result(self) -> list[Jury]:
        out: list[Jury] = []
        for line in self.found.values():
            categories = sorted({c for row in line["rows"] for c in row})
            table = [[row.count(c) for c in categories] for row in line["rows"]]
            kappa = fleiss_kappa(table, list(line["rows"].values()))
            out.append({"suite": line["suite"], "rule": line["rule"], "members": line["members"],
                        "n": sum(line["rows"].values()), "kappa": None if kappa is None else round(kappa, 4),
                        "disagreement": {judge: round(d / n, 4) for judge, (n, d) in line["against"].items() if n}})
        return out
