"""Human labels flow back to the rules they judge (docs/en/judges.md#labels-flow-back).

A line of `.evalspec/labels.jsonl` (written by `evalspec view`, read by `judge-eval`) belongs to a rule when
its `assert` is that rule once `few_shot`, `examples`, `description` and `severity` are left out of both and
default scopes are written out (`rule_key`). `few_shot: labels` shows a rule's newest labels to its judge as
worked examples; with enough labels the judge's sensitivity and specificity on them correct a pass rate
(Rogan–Gladen: evalspec/results/corrected.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec.config.model import AssertionSpec
from evalspec.core.errors import Problem

LABELS_FILE = Path(".evalspec") / "labels.jsonl"
SCOPES_AS_WRITTEN = ("each_turn", "any_turn", "last_response", "conversation")  # scopes a label writes out
FEW_SHOT = 6  # labels shown to a judge with `few_shot: labels`
MIN_LABELS = 20  # labels a rule needs before its pass rate is corrected


def rule_key(spec: AssertionSpec) -> str:
    """The rule as labels and suites are matched on: everything written but `few_shot`, `examples`,
    `description` and `severity`; the default scope written out; `levels: default` as its levels."""
    from evalspec.assertions.rubrics import DEFAULT_LEVELS
    from evalspec.extend.registry import resolve_type

    options = {k: v for k, v in spec.options.items() if k != "few_shot"}
    if options.get("levels") == "default" and spec.type in DEFAULT_LEVELS:
        options["levels"] = DEFAULT_LEVELS[spec.type]
    if isinstance(options.get("levels"), dict):
        options["levels"] = {str(k): float(v) for k, v in options["levels"].items()}
    scope = spec.scope
    if scope is None:
        found = resolve_type(spec.type)
        scope = found[0].default_scope if found else "last_response"
    return json.dumps([spec.name, spec.value, options, spec.threshold, spec.weight, spec.metric, spec.max_rate,
                       spec.provider, scope], ensure_ascii=False, sort_keys=True, default=str)


@dataclass(frozen=True)
class Label:
    """One person's label of one judged verdict: the transcript, the right answer (`label`) and, when the
    person marked the judge, what the judge said (`judged`: the label when marked right, else its opposite)."""

    transcript: list[dict[str, Any]]
    label: bool | str
    judged: bool | str | None


def read_labels(path: Path = LABELS_FILE) -> dict[str, list[Label]]:
    """The labels of `path` by `rule_key`, newest first; unreadable lines are left out (`judge-eval` names them)."""
    from evalspec.config.asserts import parse_assertion
    from evalspec.config.paths import LineMap

    if not path.is_file():
        return {}
    out: dict[str, list[Label]] = {}
    for raw in reversed(path.read_text(encoding="utf-8").splitlines()):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("transcript"), list) or \
                not isinstance(entry.get("label"), (bool, str)):
            continue
        problems: list[Problem] = []
        spec = parse_assertion(entry.get("assert"), ("assert",), LineMap(str(path)), problems, None)
        if spec is None or problems:
            continue
        label, verdict = entry["label"], entry.get("verdict")
        judged = label if verdict == "right" else (not label if isinstance(label, bool) else None) \
            if verdict == "wrong" else None
        out.setdefault(rule_key(spec), []).append(Label(entry["transcript"], label, judged))
    return out


_READ: dict[str, tuple[float, dict[str, list[Label]]]] = {}  # path -> (its mtime, its labels): read once a run


def labels_for(spec: AssertionSpec, path: Path = LABELS_FILE) -> list[Label]:
    """`spec`'s labels in `path`, newest first (the file read again only when it changed)."""
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return []
    key = str(path.resolve())
    if key not in _READ or _READ[key][0] != stamp:
        _READ[key] = (stamp, read_labels(path))
    return _READ[key][1].get(rule_key(spec), [])


def few_shot_text(labels: list[Label]) -> str:
    """Up to six labels as worked examples for the judge's prompt (the newest first)."""
    parts = []
    for i, item in enumerate(labels[:FEW_SHOT], 1):
        lines = "\n".join(f"{'User' if m.get('role') == 'user' else 'Assistant'}: {m.get('content') or ''}"
                          for m in item.transcript if m.get("role") in ("user", "assistant"))
        answer = ("pass" if item.label else "fail") if isinstance(item.label, bool) else f"level {item.label}"
        parts.append(f"Worked example {i}:\n{lines}\nThe right answer: {answer}")
    return "Worked examples graded by a person (for calibration; do not grade them):\n\n" + "\n\n".join(parts)


def accuracy(labels: list[Label]) -> tuple[float, float, int] | None:
    """(sensitivity, specificity, n) of the judge on pass/fail labels that say what the judge answered;
    None without a label of each kind."""
    marked = [(x.label, x.judged) for x in labels if isinstance(x.label, bool) and isinstance(x.judged, bool)]
    positives = [j for lab, j in marked if lab]
    negatives = [j for lab, j in marked if not lab]
    if not positives or not negatives:
        return None
    return sum(positives) / len(positives), sum(1 for j in negatives if not j) / len(negatives), len(marked)
