"""The words and figures every report shares, written once: verdict counts, pass rate, the gate
headline, curve and SLA lines, the failing verdicts. Console, HTML, Markdown and JUnit render these,
so their counts cannot disagree (docs/en/reports-and-gate.md#outputs)."""

from __future__ import annotations

import datetime as dt
import heapq
import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from evalspec.core.text import strip_controls
from evalspec.reporters.catalogue import reason_text, words
from evalspec.reporters.verdict_records import records_of, verdict_finder
from evalspec.results.gate import gated_rate, pass_hat_k_reason
from evalspec.results.rundata import (
    Baseline,
    BaselineRow,
    Curve,
    Gate,
    GateSuite,
    Metric,
    Record,
    RunData,
    RunVerdict,
    Summary,
)
from evalspec.results.stats import clopper_pearson_upper, conversations_to_bound, format_rate
from evalspec.results.verdict import reaches_gate

if TYPE_CHECKING:
    from evalspec.results.findings import Fact, Finding

COUNT_LABELS = (("passed", "passed"), ("failed", "failed"), ("error", "error"), ("xfailed", "xfailed"),
                ("xpassed", "xpassed"), ("measured", "measured"), ("drafts", "drafts"),
                ("slas_missed", "SLAs missed"))
MAX_FAILURES = 50  # failing verdicts the console and Markdown list (docs/en/scale-and-ray.md#memory)
WHITESPACE = re.compile(r"\s+")
NO_BASELINE: Baseline = {"available": False}  # a run without `baseline` reads as one compared with nothing


def one_line(text: Any) -> str:
    """Controls stripped, runs of whitespace (newlines too) made one space; edges kept for excerpts."""
    return WHITESPACE.sub(" ", strip_controls(text))


def ensure_current(run: RunData) -> RunData:
    """A run.json written before the shared vocabulary gets its counts recomputed from its records."""
    if "slas" in run and "measured" in run.get("summary", {}):
        return run
    from evalspec.results.aggregate import finalize
    from evalspec.results.runjson import untyped

    gate: Mapping[str, Any] = run.get("gate") or {}
    finalize(untyped(run), gate.get("fail_under"), bool(gate.get("include_drafts")))  # in place
    return run


def count_keys(counts: Mapping[str, object]) -> list[tuple[str, int]]:
    """(key, count) in display order; `skipped` only when something was skipped. `counts`: run.json's
    `summary` or a suite gate's `counts`."""
    items = [(key, _count(counts, key)) for key, _ in COUNT_LABELS]
    if counts.get("skipped"):
        items.insert(5, ("skipped", _count(counts, "skipped")))
    return items


def _count(counts: Mapping[str, object], key: str) -> int:
    n = counts.get(key, 0)
    return int(n) if isinstance(n, (int, float)) else 0


def count_items(counts: Mapping[str, object]) -> list[tuple[str, int]]:
    """(English label, count) in display order: the names of machine-read fields (JUnit properties)."""
    labels = dict(COUNT_LABELS)
    return [(labels.get(key, key), n) for key, n in count_keys(counts)]


def count_words(counts: Mapping[str, object]) -> list[tuple[str, int]]:
    """(label in the report's language, count) in display order."""
    return [(words(key), n) for key, n in count_keys(counts)]


def counts_text(counts: Mapping[str, object]) -> str:
    return " · ".join(f"{n} {label}" for label, n in count_words(counts))


def pass_rate_text(rate: float | None, counted: Mapping[str, Any] | None = None) -> str:
    """No gated verdict reached: "—", never 100%. With what it counts (a suite gate's `passed` and `failed`,
    the run gate's `verdicts_passed` and `verdicts_failed`), its 95 % interval: `90% (77–96%, n=40)`
    (docs/en/statistics.md)."""
    if rate is None:
        return "—"
    if counted is not None:  # the run gate's `passed` says whether it passed: its counts have their own names
        keys = ("verdicts_passed", "verdicts_failed") if "verdicts_passed" in counted else ("passed", "failed")
        passed, failed = counted.get(keys[0]), counted.get(keys[1])
        if isinstance(passed, int) and isinstance(failed, int) and not isinstance(passed, bool) and passed + failed:
            return format_rate(passed, passed + failed)
    return f"{rate:.0%}"


def _whole_percent(x: float) -> str:
    return str(int(x * 100 + 0.5))


def milestones_text(milestones: list[Mapping[str, Any]]) -> str:
    """`milestones: 1 问清车况和价格: met at turn 1 · 2 谈分期: missed (turn 4)`: a simulated journey's
    milestones (docs/en/agents.md#milestones)."""
    parts = [f"{k} {m.get('goal')}: {words('milestone_' + str(m.get('status')), turn=m.get('turn'))}"
             for k, m in enumerate(milestones, 1)]
    return f"{words('milestones_title')}: " + " · ".join(parts)


def at_turn_text(at: Mapping[str, Any]) -> str:
    """`turn 3: fails 7/10 given this history (40–89 %)`: a record's replay at its failing turn
    (docs/en/statistics.md#replay-at-the-failing-turn-rerun-at-turn), `derailed earlier` when it never failed again."""
    turn, times, failed, ci = at.get("turn"), int(at.get("times") or 0), int(at.get("failed") or 0), at.get("ci")
    errors = int(at.get("errors") or 0)
    if not times or not isinstance(ci, list):
        return words("at_turn_none", turn=turn, n=errors)
    lo, hi = _whole_percent(float(ci[0])), _whole_percent(float(ci[1]))
    text = words("at_turn_derailed" if at.get("derailed_earlier") else "at_turn_fails",
                 turn=turn, failed=failed, times=times, lo=lo, hi=hi)
    return text + (f" · {words('at_turn_errors', n=errors)}" if errors else "")


def gate_headline(gate: Gate) -> str:
    key = {0: "gate_passed", 1: "gate_failed", 3: "gate_errors"}.get(gate["exit_code"])
    return words(key) if key else words("gate_exit", code=gate["exit_code"])


def gate_line(gate: Gate, rate: Callable[[str], str] = str) -> str:
    """`gate failed · pass rate 25%`: the run's headline in every report (`rate` marks up the figure)."""
    return words("gate_line", headline=gate_headline(gate), rate=rate(pass_rate_text(gate["pass_rate"], gate)))


def suite_gate_word(s: GateSuite) -> str:
    return "failed" if not s["ok"] else "errors" if s.get("errors_exceeded") else "ok"


def metric_columns() -> tuple[str, ...]:
    return tuple(words(key) for key in ("metric", "suite", "provider", "mean_score", "share_passed"))


METRIC_COLUMNS = ("metric", "suite", "provider", "mean score", "share of tests passed")


def metric_cells(m: Metric) -> list[str]:
    """One `summary.metrics` row as the scoreboard shows it: the mean score of the metric's checks beside
    the share of verdicts (test × provider, repeats combined) that passed every one of them, out of those
    that reached one — two different figures, each labelled (docs/en/rule-self-tests.md#verdicts-that-hold)."""
    share = format_rate(m["passed"], m["total"]) if m["total"] else "—"  # with its 95 % interval (statistics.md)
    return [str(m["metric"]), str(m["suite"]), str(m["provider"]),
            "—" if m["mean"] is None else f"{m['mean']:.2f}", share]


def score_text(score: Any, status: Any) -> str | None:
    """The score a report shows beside a test: none (None) for an errored test, whose checks were not all
    decided, so a number would read as a grade; else `0.50`, or `—` when nothing was scored."""
    if status == "error":
        return None
    return f"{score:.2f}" if isinstance(score, (int, float)) else "—"


def local_time(stamp: Any, zone: dt.tzinfo | None = None) -> str:
    """A time from run.json (ISO, UTC) in local time with its zone, `2025-05-01 18:00:03 UTC+08:00`
    (`zone`: the machine's own when None); a value that is not a time is shown as it is."""
    try:
        moment = dt.datetime.fromisoformat(str(stamp))
    except ValueError:
        return str(stamp or "")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    moment = moment.astimezone(zone)
    offset = moment.utcoffset() or dt.timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    utc = "UTC" if not minutes else f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return f"{moment:%Y-%m-%d %H:%M:%S} {utc}"


def conversations_text(n: int) -> str:
    return words("conversations_one" if n == 1 else "conversations_many", n=n)


def judge_text(summary: Summary) -> str:
    """`4 judge calls (60 tokens, $0.0001)`: the calls evalspec made on its own behalf (judge, second opinion,
    simulated user, attacker), apart from the system under test's; "" when none was made."""
    if not summary.get("judge_calls"):
        return ""
    n = summary["judge_calls"]
    return words("judge_calls_one" if n == 1 else "judge_calls_many", n=n, tokens=summary.get("judge_tokens") or 0,
                 cost=f"{summary.get('judge_cost') or 0.0:.4f}")


def curve_text(c: Curve) -> str:
    """Points, half-life and failure point spelled out, so a met SLA never reads as a contradiction."""
    pts = ", ".join(f"{p['value']}: {p['mean']:.2f}" if p["mean"] is not None else f"{p['value']}: —"
                    for p in c["points"])
    parts = [words("curve_points", variable=c["variable"], points=pts)]
    terms = c.get("describe") or ["half_life", "failure_point"]  # a curve's `summary:` term only (docs/en/rule-self-tests.md#verdicts-that-hold)
    if "half_life" in terms:
        parts.append(words("half_life", v=c["half_life"]) if c["half_life"] is not None
                     else words("half_life_none"))
    if "failure_point" in terms:
        parts.append(words("failure_point", v=c["failure_point"])
                     if c["failure_point"] is not None else words("failure_point_none"))
    if "stable_range" in terms:
        parts.append(stable_text(c))
    return " · ".join(parts)


def blocking_listed(run: RunData, limit: int) -> list[str]:
    """`blocking(run)`, its first `limit` items and then how many more there are (the console and Markdown
    list at most --max-failures, docs/en/scale-and-ray.md#memory)."""
    items = _blocks(run)
    shown = list(itertools.islice(items, limit))
    more = sum(1 for _ in items)
    return [*shown, words("more_blocking", n=more)] if more else shown


FAILING = ("failed", "error")  # the records that show why a verdict failed: its failing repeats


def failing_count(run: RunData) -> int:
    """How many verdicts `failing_stream` lists."""
    return sum(1 for v in run["verdicts"] if _is_failing(v))


def _is_failing(v: RunVerdict) -> bool:
    return v["category"] in ("failed", "error") or (v["category"] == "measured" and bool(v["critical_failed"]))


def _rank(v: RunVerdict) -> tuple[bool, bool]:
    """Where a failing verdict is listed: critical failures first, errors last."""
    return not v["critical_failed"], v["category"] == "error"


def failing_stream(run: RunData, limit: int | None = None) -> Iterator[tuple[RunVerdict, list[Record]]]:
    """Failed and errored verdicts (and measured points that failed a critical assertion), critical first,
    each with the records that show why (the failing repeats): the first `limit` of them (all when None),
    each verdict's records read as it is reached."""
    for _, v, recs in failing_at(run, limit):
        yield v, recs


def failing_at(run: RunData, limit: int | None = None) -> Iterator[tuple[int, RunVerdict, list[Record]]]:
    """`failing_stream` with each verdict's position in `verdicts`. Memory does not grow with the run
    (docs/en/scale-and-ray.md#memory): the first `limit` are a heap of that many, read in one walk; all of
    them are read rank by rank, one walk of the verdicts and records for each rank."""
    verdicts = run["verdicts"]
    if limit is not None:
        top = heapq.nsmallest(limit, ((_rank(v), i, v) for i, v in enumerate(verdicts) if _is_failing(v)),
                              key=lambda x: x[:2])
        found = records_of(run, [(i, v) for _, i, v in top], FAILING)
        for _, i, v in top:
            yield i, v, found[i]
        return
    for rank in sorted({_rank(v) for v in verdicts if _is_failing(v)}):
        find = verdict_finder(run)
        for i, v in enumerate(verdicts):
            if _is_failing(v) and _rank(v) == rank:
                yield i, v, find(v, FAILING)


def repeats_text(v: RunVerdict) -> str:
    return words("repeats_failed", failed=v["n"] - v["passed"], n=v["n"]) if v["n"] > 1 else ""


def stable_text(c: Curve) -> str:
    """`stable until 6 (0.8, or the SLA minimum)`: how long a
    memory curve's score holds after a topic switch or a conflict (docs/en/memory-and-curves.md)."""
    if c.get("stable_until") is None:
        return words("stable_none")
    return words("stable_until", v=c["stable_until"])


_WHERE = re.compile(r"^(?:(turns?) ([\d, ]+)|(whole conversation)|(before the first reply))$")


def where_text(where: str) -> str:
    """A finding's place (`turn 2`, `turns 1, 3`, `whole conversation`) in the report's language."""
    m = _WHERE.match(where)
    if m is None:
        return where
    if m.group(1):
        return words("turn_n" if m.group(1) == "turn" else "turns_n", n=m.group(2))
    return words("whole_conversation" if m.group(3) else "before_first_reply")


def finding_text(f: Finding) -> str:
    """`turn 2: not-regex: 1[3-9]\\d{9} [critical]: unexpected: matched '139…'` — one finding on one line."""
    text = (where_text(f.where) + (f": {f.rule}" if f.rule else "") + (f" [{words('critical')}]" if f.critical else "")
            + ": " + (f"{words('error_colon')} {f.error}" if f.error else reason_text(f.reason, f.reason_zh)))
    return one_line(text)


def first_problem(record: Mapping[str, Any]) -> str:
    """The first finding of a failed, xfailed or errored conversation on one line ("" when there is none)."""
    from evalspec.results.findings import findings  # (docs/en/scale-and-ray.md#start-up)

    found = findings(record)
    return finding_text(found[0]) if found else ""


def _who(v: RunVerdict | BaselineRow) -> str:
    return f"{one_line(v['name'])} ({one_line(v['test_id'])} @ {one_line(v['provider'])})"


def blocking(run: RunData) -> list[str]:
    """What blocks the release (`_blocks`), every item."""
    return list(_blocks(run))


def _blocks(run: RunData) -> Iterator[str]:
    """What blocks the release, in the report's language (docs/en/reports-and-gate.md#language): critical failures, missed SLAs, gated
    regressions, then the gate's other reasons (pass rate, errors) — from the run's data, not from the
    English sentences of `gate.reasons`. A suite gated on regressions is blocked only by what got worse."""
    gate = run["gate"]
    drafts_gate = bool(gate.get("include_drafts"))
    diff = run.get("baseline") or NO_BASELINE
    rows = diff.get("rows", []) if diff.get("available") else []
    for s in gate["suites"]:
        if s.get("mode") == "regressions":
            from evalspec.results.compare import suite_key

            key = suite_key(s["suite"])
            mine = [r for r in rows if r["suite"] == key]
            yield from [words("blocks_regressed", what=f"{_who(r)} — {words(r['category'])}") for r in mine if r["blocking"]]
            yield from [words("blocks_critical", what=_who(r)) for r in mine if r.get("critical_new") and not r["blocking"]]
            yield from [words("blocks_sla", what=f"{c['test']} @ {c['provider']}") for c in diff.get("curves", [])
                        if c["suite"] == key and any(x["newly_missed"] for x in c["sla"])]
            yield from paired_blocks(s) + held_blocks(run, s)
            continue
        yield from (words("blocks_critical", what=_who(v)) for v in run["verdicts"] if v["suite"] == s["suite"]
                    and v["status"] == "failed" and v["critical_failed"] and reaches_gate(v, drafts_gate))
        yield from (words("blocks_sla", what=f"{x['id']}: {x['text']}") for x in run["slas"]
                    if x["suite"] == s["suite"] and x["status"] == "missed")
        corrected = s.get("corrected")
        if s["pass_rate"] is not None and (compared := gated_rate(s["pass_rate"], corrected)) < s["min_pass_rate"]:
            if corrected is not None and corrected.get("corrected") is not None:  # reports-and-gate.md#corrected-pass-rate
                yield words("blocks_rate_corrected", suite=s["suite"], rate=f"{compared:.2%}",
                            min=f"{s['min_pass_rate']:.2%}", raw=f"{s['pass_rate']:.2%}", labels=corrected["labels"])
            else:  # the rate with its 95 % interval (statistics.md)
                yield words("blocks_rate", suite=s["suite"], rate=pass_rate_text(s["pass_rate"], s),
                            min=f"{s['min_pass_rate']:.2%}")
        yield from held_blocks(run, s)
    fail_under, rate = gate.get("fail_under"), gate["pass_rate"]
    if fail_under is not None and rate is not None and rate < fail_under:
        yield words("blocks_run_rate", rate=pass_rate_text(rate, gate), min=f"{fail_under:.2%}")
    if gate["exit_code"] == 3:
        yield from [words("blocks_errors", suite=s["suite"], n=s["errors"], max=s["max_errors"])
                    for s in gate["suites"] if s.get("errors_exceeded")]
        yield from [words("blocks_no_data", suite=s["suite"], what=x) for s in gate["suites"] for x in s.get("sla_no_data") or []]
        errors = sum(s["errors"] for s in gate["suites"])
        if gate["pass_rate"] is None and errors:
            yield words("blocks_no_verdict", n=errors)
        skipped = sum((s.get("counts") or {}).get("skipped", 0) for s in gate["suites"])
        if gate["pass_rate"] is None and skipped and not errors:
            yield words("blocks_nothing_checked", n=skipped)


def paired_blocks(suite_gate: GateSuite) -> list[str]:
    """The paired test's block (docs/en/statistics.md#regressions-decided-by-a-paired-test), when it was
    significant for this suite."""
    test = suite_gate.get("paired")
    if not isinstance(test, Mapping) or not test.get("significant"):
        return []
    return [words("blocks_paired", suite=suite_gate["suite"], b=test["b"], c=test["c"], p=f"{float(test['p']):.3g}",
                  alpha=f"{float(test['alpha']):g}")]


def held_blocks(run: RunData, suite_gate: GateSuite) -> list[str]:
    """The blocks that hold in every gate mode, from the run's figures: the suite's pass^k below its
    `min_pass_hat_k`, each red line whose bound is over its `max_rate` (docs/en/statistics.md)."""
    path = suite_gate["suite"]
    summary = run.get("summary") or {}
    meta = next((m for m in run.get("suites") or [] if m.get("path") == path), None)
    figures = next((f for f in summary.get("suites") or [] if f.get("suite") == path), None)
    out = []
    if meta is not None and figures is not None and pass_hat_k_reason(meta, figures):
        k, least = int(meta["min_pass_hat_k"]["k"]), float(meta["min_pass_hat_k"]["min"])
        out.append(words("blocks_pass_hat_k", suite=path, k=k, value=f"{figures['pass_hat_k'][k - 1]:.2f}",
                         min=f"{least:.2f}"))
    for line in summary.get("red_lines") or []:
        if line.get("suite") != path or line.get("max_rate") is None:
            continue
        limit, n, breaches = float(line["max_rate"]), int(line["n"]), int(line["breaches"])
        upper = clopper_pearson_upper(breaches, n)
        if upper is not None and upper <= limit:
            continue
        if breaches == 0:
            out.append(words("blocks_max_rate_need", suite=path, max=f"{limit * 100:g}%", rule=line["rule"], n=n,
                             need=conversations_to_bound(limit)))
        else:
            out.append(words("blocks_max_rate", suite=path, max=f"{limit * 100:g}%", rule=line["rule"], n=n,
                             breaches=breaches, upper=f"{(upper or 1.0) * 100:.1f}%"))
    return out


def state_changes(run: RunData) -> Iterator[tuple[str, RunVerdict | BaselineRow]]:
    """Tests that changed state (docs/en/reports-and-gate.md#language): xpassed (remove the xfail?), drafts
    that fail, new errors — made as the verdicts are walked (twice), so a reader keeps only those it lists."""
    yield from (("state_xpassed", v) for v in run["verdicts"] if v["category"] == "xpassed")
    yield from (("state_draft", v) for v in run["verdicts"] if v["category"] == "drafts" and v["status"] in ("failed", "error"))
    diff = run.get("baseline") or NO_BASELINE
    yield from (("state_new_error", r) for r in diff.get("rows", []) if r.get("category") == "new error")


def fact_words(key: str, expected: str) -> tuple[str, str]:
    """A refers-to fact's key and expectation in the report's language (memory-recall keys are the suite's)."""
    if key == "distractor" and expected.startswith("none of "):
        return words("distractor"), words("none_of", list=expected.removeprefix("none of "))
    return (words("entity"), expected) if key == "entity" else (key, expected)


def shown_facts(f: Finding) -> list[Fact]:
    """A finding's facts as the report's language writes them."""
    from evalspec.results.findings import Fact

    return [Fact(*fact_words(x.key, x.expected), x.found, x.ok) for x in f.facts]


MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")
SPECIAL = re.compile(r"([\\`*_\[\]|~#])")


def md(text: Any) -> str:
    """One line of text from a run, safe in Markdown and table cells: no tags, no mentions, no markup."""
    out = one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = SPECIAL.sub(r"\\\1", out)
    return MENTION.sub("@&#8203;", out)
