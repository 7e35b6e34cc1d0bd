"""The corrected pass rate of a judged rule (docs/en/judges.md#labels-flow-back): the judge's sensitivity and
specificity on the rule's human labels (evalspec/assertions/labels.py) correct its raw pass rate in a run
(Rogan–Gladen), the interval being the Wilson interval of the raw rate mapped the same way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from evalspec.assertions.labels import (
    LABELS_FILE,
    MIN_LABELS,
    SCOPES_AS_WRITTEN,
    Label,
    accuracy,
    read_labels,
    rule_key,
)
from evalspec.core.errors import Problem
from evalspec.results.rundata import Corrected, GateCorrected


def rogan_gladen(p: float, sensitivity: float, specificity: float) -> float | None:
    """The true rate from an observed rate `p` (Rogan & Gladen 1978): (p + spec − 1) / (sens + spec − 1),
    clipped to [0, 1]; None when sens + spec ≤ 1 (the judge is no better than chance: no correction)."""
    youden = sensitivity + specificity - 1
    if youden <= 0:
        return None
    return min(1.0, max(0.0, (p + specificity - 1) / youden))


class _RateRequired(TypedDict):
    raw: float | None
    sensitivity: float
    specificity: float
    corrected: float | None


class CorrectedRate(_RateRequired, total=False):
    """A pass rate corrected by its judge's sensitivity and specificity, with its interval."""

    interval: list[float]
    no_better_than_chance: bool


def corrected_rate(passed: int, n: int, sensitivity: float, specificity: float) -> CorrectedRate:
    """The corrected pass rate of `passed` of `n` and its interval: the Wilson interval of the raw rate mapped
    the same way (docs/en/judges.md#labels-flow-back)."""
    from evalspec.results.stats import wilson

    raw = passed / n if n else None
    low, high = wilson(passed, n) or (None, None)
    corrected = None if raw is None else rogan_gladen(raw, sensitivity, specificity)
    out: CorrectedRate = {"raw": raw, "sensitivity": round(sensitivity, 4), "specificity": round(specificity, 4),
                           "corrected": None if corrected is None else round(corrected, 6)}
    if corrected is not None and low is not None and high is not None:
        out["interval"] = [round(rogan_gladen(low, sensitivity, specificity) or 0.0, 6),
                           round(rogan_gladen(high, sensitivity, specificity) or 0.0, 6)]
    else:
        out["no_better_than_chance"] = corrected is None and raw is not None
    return out


def record_rule_key(a: Mapping[str, Any]) -> str | None:
    """The `rule_key` of a judged check as run.json records it, built as `evalspec view` writes its labels."""
    from evalspec.config.asserts import parse_assertion
    from evalspec.config.paths import LineMap

    rule: dict[str, object] = {str(a["type"]): a.get("value")}  # the rule as a suite writes it
    levels = (a.get("details") or {}).get("levels")
    if isinstance(levels, dict):
        rule["levels"] = levels
    if isinstance(a.get("threshold"), (int, float)):
        rule["threshold"] = a["threshold"]
    if a.get("turn") is not None:
        rule["scope"] = "last_response"
    elif a.get("scope") in SCOPES_AS_WRITTEN:
        rule["scope"] = a["scope"]
    for candidate in (rule, {k: v for k, v in rule.items() if k != "scope"}):
        problems: list[Problem] = []
        spec = parse_assertion(candidate, ("assert",), LineMap(str(LABELS_FILE)), problems, None)
        if spec is not None and not problems:
            return rule_key(spec)
    return None


@dataclass(frozen=True)
class Corrections:
    """What a run's human labels say of its judged rules (docs/en/judges.md#labels-flow-back): `rules`, each
    judged rule with 20+ labels corrected (`summary.corrected`); `suites`, per suite the judge's accuracy
    pooled over the labels of every judged rule it ran (`gate.use_corrected`)."""

    rules: list[Corrected] = field(default_factory=list)
    suites: Mapping[str, list[Label]] = field(default_factory=dict)


def corrections(records: Iterable[Mapping[str, Any]], suites: Iterable[Mapping[str, Any]] = (),
                path: Path = LABELS_FILE) -> Corrections:
    """The corrections a run's records and the labels file as it is now give; `suites`: run.json's, whose
    `use_corrected` ones get their labels pooled. No record is read when no rule has 20 labels and no
    suite asks for the corrected gate."""
    labels = read_labels(path)
    pooling = {str(x.get("path")) for x in suites if x.get("use_corrected")}
    if not labels or not pooling and not any((found := accuracy(x)) is not None and found[2] >= MIN_LABELS
                                             for x in labels.values()):
        return Corrections()
    tally: dict[tuple[str, str], list[Any]] = {}
    for r in records:
        for a in r.get("assertions") or []:
            if not (a.get("details") or {}).get("verdicts") or a.get("pass") is None or a.get("skipped"):
                continue
            key = record_rule_key(a)
            if key is None or key not in labels:
                continue
            line = tally.setdefault((str(r.get("suite")), key), [a, 0, 0])
            line[1] += 1
            line[2] += a["pass"] is True
    from evalspec.results.errorbars import rule_name

    rules: list[Corrected] = []
    pooled: dict[str, list[Label]] = {}
    for (suite, key), (a, n, passed) in tally.items():
        if suite in pooling:
            pooled.setdefault(suite, []).extend(labels[key])
        found = accuracy(labels[key])
        if found is not None and found[2] >= MIN_LABELS:
            sensitivity, specificity, counted = found
            rules.append({"suite": suite, "rule": rule_name(a), "labels": counted, "n": n, "passed": passed,
                          **corrected_rate(passed, n, sensitivity, specificity)})
    return Corrections(rules, pooled)


def corrected_summary(records: Iterable[Mapping[str, Any]], path: Path = LABELS_FILE) -> list[Corrected]:
    """`summary.corrected`: per suite and judged rule with at least 20 marked labels, its raw pass rate in
    this run, the judge's sensitivity and specificity on the labels, and the corrected pass rate with its
    interval (or `no_better_than_chance`)."""
    return corrections(records, (), path).rules


def gate_correction(passed: int, failed: int, labels: list[Label]) -> GateCorrected:
    """A suite's pass rate corrected for `gate.use_corrected` (docs/en/reports-and-gate.md#corrected-pass-rate):
    with the judge's sensitivity and specificity pooled over `labels` (the labels of the suite's judged rules),
    once they are at least 20 with a label of each kind; else only how many there were."""
    n = passed + failed
    found = accuracy(labels)
    counted = found[2] if found is not None else sum(
        1 for x in labels if isinstance(x.label, bool) and isinstance(x.judged, bool))
    out: GateCorrected = {"labels": counted, "raw": passed / n if n else None}
    if found is None or counted < MIN_LABELS or not n:
        return out
    rate = corrected_rate(passed, n, found[0], found[1])
    out.update({"sensitivity": rate["sensitivity"], "specificity": rate["specificity"], "corrected": rate["corrected"]})
    if "interval" in rate:
        out["interval"] = rate["interval"]
    if rate.get("no_better_than_chance"):
        out["no_better_than_chance"] = True
    return out
