"""`evalspec judge-eval`: measure a judge against labelled transcripts before trusting a gate to it.

Each line of LABELS.jsonl is `{"transcript": [...], "assert": {<an assertion>}, "label": true|false|"<level>"}`.
The assertion grades the transcript at its usual default scope; its answer is compared with the label:
agreement, unweighted Cohen's kappa (levels are categories), the confusion matrix, agreement per
assertion type and, with `--samples K`, self-consistency (the share of items whose K answers all agree).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypedDict, cast

from evalspec.assertions.evaluate import evaluate
from evalspec.config.asserts import parse_assertion
from evalspec.config.model import AssertionSpec
from evalspec.config.paths import LineMap
from evalspec.core.errors import ConfigError, Problem
from evalspec.extend.check import GradingContext, JudgeFn, JudgeRequest, JudgeVerdict
from evalspec.extend.transcript import Message

Answer = bool | str | None  # a label or the judge's answer: pass/fail, a level's name; None: no answer


class _Graded(TypedDict):
    line: int
    type: str
    label: bool | str
    answer: Answer
    answers: list[Answer] | None  # the K answers, with `--samples K` > 1
    agree: bool | None
    consistent: bool | None
    error: str | None


class GradedItem(_Graded, total=False):
    """One labelled item as `judge-eval` graded it (a row of the report's `results`)."""

    example: str  # an item taken from a suite's `examples:`: where it is written
    jury: list[list[Mapping[str, object]]]  # with a jury: each sample's member votes (docs/en/judges.md#juries)
    pairwise: list[str]  # a pairwise rule: each sample's outcome (win, tie, inconsistent, loss)


class TypeAgreement(TypedDict):
    items: int
    answered: int
    agreement: float | None


class _Figures(TypedDict):
    items: int
    answered: int
    errors: int
    agreement: float | None
    kappa: float | None
    confusion: dict[str, dict[str, int]]
    by_type: dict[str, TypeAgreement]
    samples: int
    self_consistency: float | None


class JudgeEvalReport(_Figures, total=False):
    """What `judge-eval` prints and writes with `-o`: the figures, then every graded item."""

    duration_s: float
    results: list[GradedItem]
    judge: Mapping[str, object]  # the judge's configuration, redacted (the CLI adds it)


@dataclass
class LabelledItem:
    line: int
    transcript: list[Message]
    spec: AssertionSpec
    label: bool | str
    example: str = ""  # `file:line: path: fail example N` for an item taken from a suite's `examples:`
    labels: dict[str, int] | None = None
    at: Problem | None = None  # where that example is written (`example` as a Problem)
    rule: str = ""  # the rule an example belongs to, as reports name it


def example_items(suite: Any) -> list[LabelledItem]:
    """The `examples:` of `suite`'s model-graded assertions as labelled items (docs/en/rule-self-tests.md): a `fail` example
    is labelled false, a `pass` example true; each assertion once (defaults are shared by the tests)."""
    from evalspec.config.rule_examples import example_transcript, examples_of
    from evalspec.extend.registry import model_needed
    from evalspec.plan.examples import as_tried

    items: list[LabelledItem] = []
    seen: set[Any] = set()
    for test in suite.tests:
        for spec in [*(a for t in test.conversation for a in t.asserts), *test.asserts]:
            if spec.where in seen or not spec.examples or model_needed(spec) is None:
                continue
            seen.add(spec.where)
            for kind, n, example, where in examples_of(spec):
                problem = suite.lines.problem(where, f"{kind} example {n}") if suite.lines else None
                transcript, labels = example_transcript(example)
                value = f": {spec.value}" if isinstance(spec.value, str) else ""
                items.append(LabelledItem(problem.line or 0 if problem else 0, transcript, as_tried(spec, example),
                                          kind == "pass", str(problem) if problem else f"{kind} example {n}", labels,
                                          problem or Problem(str(suite.path), None, "", f"{kind} example {n}"),
                                          f"{spec.name}{value}"))
    return items


def numbered(messages: list[object]) -> list[Message]:
    """OpenAI-style messages with turn numbers (each user message opens a turn), as evalspec records them."""
    out: list[Message] = []
    turn = 0
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system"):
            continue
        if m["role"] == "user":
            turn += 1
        if m["role"] != "system":
            out.append(cast(Message, {"role": m["role"], "content": str(m.get("content") or ""), "turn": m.get("turn", turn)}))
    return out


def load_labels(path: Path) -> list[LabelledItem]:
    """Parse LABELS.jsonl, collecting every problem with its line before raising."""
    problems: list[Problem] = []
    items = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue

        def bad(message: str, line: int = n) -> None:
            problems.append(Problem(str(path), line, "", message))

        try:
            entry = json.loads(raw)
        except ValueError as exc:
            bad(f"not JSON: {exc}")
            continue
        if not isinstance(entry, dict) or not {"transcript", "assert", "label"} <= set(entry):
            bad('each line is {"transcript": [...], "assert": {...}, "label": true|false|"<level>"}')
            continue
        found: list[Problem] = []
        spec = parse_assertion(entry["assert"], ("assert",), LineMap(str(path)), found, None)
        problems.extend(Problem(str(path), n, p.path, p.message) for p in found)
        label = entry["label"]
        if spec is None or found:
            continue
        levels = spec.options.get("levels")
        if not isinstance(label, (bool, str)):
            bad(f"label must be true, false or a level name, got {label!r}")
        elif isinstance(label, str) and not (isinstance(levels, dict) and label in levels or levels == "default"):
            bad(f"label {label!r} is a level name, but the assertion has no such level")
        elif not isinstance(entry["transcript"], list) or not entry["transcript"]:
            bad("transcript must be a non-empty list of {role, content} messages")
        else:
            items.append(LabelledItem(n, numbered(entry["transcript"]), spec, label))
    if problems:
        raise ConfigError(problems)
    return items


def kappa(pairs: list[tuple[Any, Any]]) -> float | None:
    """Unweighted Cohen's kappa of (label, answer) pairs; None without pairs, 1.0 when chance agreement is total
    and every pair agrees."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(1 for a, b in pairs if a == b) / n
    labels, answers = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(labels[c] * answers.get(c, 0) for c in labels) / (n * n)
    if expected >= 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1 - expected)


def answer_of(result: Any, spec: AssertionSpec) -> bool | str | None:
    """The judge's answer as a label: the level for a graded rubric, else pass/fail."""
    if result.error or result.passed is None:
        return None
    level = result.details.get("level")
    if spec.options.get("levels") is not None and isinstance(level, str):
        return level
    return bool(result.passed)


async def grade_item(item: LabelledItem, judge: JudgeFn, k: int) -> GradedItem:
    answers: list[Answer] = []
    errors: list[str] = []
    juries: list[list[Mapping[str, object]]] = []  # with a jury: each sample's member votes (docs/en/judges.md#juries)
    outcomes: list[str] = []
    for sample in range(k):
        ctx = GradingContext(transcript=item.transcript, labels=item.labels or {}, vars={}, test_id=f"line-{item.line}", turn=None,
                             suite_dir=Path("."), judge=_offset(judge, sample * 100))
        result = await evaluate(item.spec, ctx)
        answers.append(answer_of(result, item.spec))
        if result.details.get("jury"):
            juries.append(list(result.details["jury"]))
        if isinstance(pair := result.details.get("pairwise"), dict):  # docs/en/judges.md#comparing-two-bot-versions-pairwise
            outcomes.append(str(pair.get("outcome")))
        if result.error:
            errors.append(result.error)
    first = answers[0]
    row: GradedItem = {"line": item.line, "type": item.spec.name, "label": item.label, "answer": first,
                       "answers": answers if k > 1 else None, "agree": None if first is None else first == item.label,
                       "consistent": len(set(map(json.dumps, answers))) == 1 if k > 1 else None,
                       "error": errors[0] if errors else None}
    if juries:
        row["jury"] = juries
    if outcomes:
        row["pairwise"] = outcomes
    if item.example:  # `example` second, as run.json readers have always seen it
        return {"line": row["line"], "example": item.example, **row}
    return row


def _offset(judge: JudgeFn, offset: int) -> JudgeFn:
    """The same judge, its samples numbered from `offset` (distinct cache keys for the K repetitions)."""
    from evalspec.assertions.jury import wrapped

    if not offset:
        return judge

    def shift(one: JudgeFn) -> JudgeFn:
        async def shifted(request: JudgeRequest) -> JudgeVerdict:
            return await one(replace(request, sample=request.sample + offset))

        return shifted

    return wrapped(judge, shift)  # a jury stays a jury


def category(value: Any) -> str:
    """A label or answer as a confusion-matrix category: true / false / the level name / error."""
    if value is None:
        return "error"
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def metrics(rows: list[GradedItem], samples: int) -> JudgeEvalReport:
    answered = [r for r in rows if r["answer"] is not None]
    pairs = [(category(r["label"]), category(r["answer"])) for r in answered]
    confusion: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        confusion[category(r["label"])][category(r["answer"])] += 1
    by_type: dict[str, TypeAgreement] = {}
    for name in sorted({r["type"] for r in rows}):
        group = [r for r in rows if r["type"] == name]
        done = [r for r in group if r["answer"] is not None]
        by_type[name] = {"items": len(group), "answered": len(done),
                         "agreement": round(sum(1 for r in done if r["agree"]) / len(done), 6) if done else None}
    k = kappa(pairs)
    out: JudgeEvalReport = {
        "items": len(rows), "answered": len(answered), "errors": len(rows) - len(answered),
        "agreement": round(sum(1 for r in answered if r["agree"]) / len(answered), 6) if answered else None,
        "kappa": round(k, 6) if k is not None else None,
        "confusion": {label: dict(row) for label, row in sorted(confusion.items())},
        "by_type": by_type, "samples": samples,
        "self_consistency": round(sum(1 for r in rows if r["consistent"]) / len(rows), 6)
        if samples > 1 and rows else None,
    }
    return out


async def judge_eval(items: list[LabelledItem], judge: JudgeFn, samples: int = 1,
                     concurrency: int = 4) -> JudgeEvalReport:
    """Grade every labelled item `samples` times and compare with the labels."""
    start = time.perf_counter()
    slots = asyncio.Semaphore(max(1, concurrency))

    async def one(item: LabelledItem) -> GradedItem:
        async with slots:
            return await grade_item(item, judge, samples)

    rows = list(await asyncio.gather(*(one(i) for i in items)))
    return {**metrics(rows, samples), "duration_s": round(time.perf_counter() - start, 3), "results": rows}


def render(report: JudgeEvalReport) -> str:
    """The plain-text summary `judge-eval` prints."""
    def pct(x: float | None) -> str:
        return "—" if x is None else f"{x:.1%}"

    lines = [f"items {report['items']}, answered {report['answered']}, errors {report['errors']}, "
             f"{report['duration_s']:.1f}s",
             f"agreement {pct(report['agreement'])}   Cohen's kappa "
             f"{'—' if report['kappa'] is None else format(report['kappa'], '.3f')}"]
    if report.get("self_consistency") is not None:
        lines.append(f"self-consistency ({report['samples']} samples) {pct(report['self_consistency'])}")
    columns = sorted({a for row in report["confusion"].values() for a in row})
    width = max([len("label \\ answer"), *map(len, report["confusion"])]) + 2
    lines += ["", "confusion (rows: label, columns: judge's answer)",
              "label \\ answer".ljust(width) + "".join(c.rjust(max(8, len(c) + 2)) for c in columns)]
    for label, row in report["confusion"].items():
        lines.append(label.ljust(width) + "".join(str(row.get(c, 0)).rjust(max(8, len(c) + 2)) for c in columns))
    lines += ["", "per type"]
    for name, t in report["by_type"].items():
        lines.append(f"  {name:<28} {t['items']:>4} items  agreement {pct(t['agreement'])}")
    return "\n".join(lines)
