"""Verdicts, curves, summary and the gate (decided by results/gate.py) — computed from run.json records alone."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, cast

from evalspec.config.repeats import Repeats
from evalspec.core.errors import ConfigError, Problem
from evalspec.results import verdict as reduction  # docs/en/recorded-conversations.md `reduce:`
from evalspec.results.agreement import Juries
from evalspec.results.attacks import AttackRows
from evalspec.results.curves import CurveSamples, binding_point, covered_points, sla_entry_status
from evalspec.results.errorbars import RedLines, interval, run_figures
from evalspec.results.gate import decide
from evalspec.results.pairwise import PairwiseCounts
from evalspec.results.rundata import Curve, CurveSla, Metric, Record, RunVerdict, Sla, StatusName, Summary
from evalspec.results.spread import simulator_spread
from evalspec.results.stream import DiskRows, Fold, JournalRecords, fed
from evalspec.results.verdict import (
    Verdict,
    VerdictTally,
    category,
    combine_repeats,
    is_gated,
    mean_std,
    suite_counts,
    tallied,
)

if TYPE_CHECKING:
    from evalspec.results.corrected import Corrections


class Repeat(TypedDict):
    """One repeat's outcome on a metric's checks, combined as the test's repeats are (`combine_repeats`)."""

    status: StatusName
    rule: str | float


class JudgeTotals(TypedDict):
    judge_calls: int
    judge_tokens: int
    judge_cost: float


def verdict_stream(records: Iterable[Mapping[str, Any]], include_drafts: bool = False) -> Iterator[Verdict]:
    """One verdict per test instance × provider, repeats combined by the test's pass rule (`Verdicts`)."""
    made = Verdicts(include_drafts, whole=isinstance(records, list))
    for r in records:
        yield from made.add(r)
    yield from made.close()


class Verdicts:
    """The verdicts made as the records arrive (a fold, as `stream.Fold`, whose `add` and `close` give the
    verdicts ready): one per test instance × provider, repeats combined by the test's pass rule. Records
    read back from disk are in plan order, which puts an instance's repeats × providers next to each other:
    each run of records of one (suite, instance) makes its verdicts, and a `reduce:` test's group closes
    when the next test starts — memory that does not grow with the run (docs/en/scale-and-ray.md#memory).
    `whole`: a list in memory (small runs, hand-made records), grouped whole at `close`, in whatever order
    it came."""

    def __init__(self, include_drafts: bool = False, whole: bool = False, most: int = 0) -> None:
        self.include_drafts, self.whole = include_drafts, whole
        # where each run of one instance's records starts, marked to find one that starts twice (`apart`)
        self.starts: Repeats[int] | None = Repeats(most) if most and not whole else None
        self.marks = _RunStarts()
        self.reducer = reduction.Reducer(include_drafts)
        self.groups: dict[tuple[str, str, str], list[tuple[int, Record]]] = defaultdict(list)  # `whole`
        self.window: list[tuple[int, Record]] = []
        self.test: tuple[str, str] | None = None
        self.seen = 0

    def add(self, record: Mapping[str, Any]) -> list[Verdict]:
        r, i = cast(Record, record), self.seen
        self.seen += 1
        if self.whole:
            self.groups[(r["suite"], r["base_id"], r["provider"])].append((i, r))
            return []
        if self.starts is not None:
            for mark in self.marks.of(r):
                self.starts.add(mark)
        out: list[Verdict] = []
        window = self.window
        if window and (r["base_id"] != window[0][1]["base_id"] or r["suite"] != window[0][1]["suite"]):
            for v, first in _window(window, self.include_drafts):
                out += self.reducer.add(v, first)
            window = self.window = []
        if not window:
            if (mine := (str(r["suite"]), reduction.verdict_key(r))) != self.test:  # a new test: reduced groups close
                out += self.reducer.close()
            self.test = mine
        window.append((i, r))
        return out

    def apart(self, records: Iterable[Mapping[str, Any]]) -> tuple[str, int, int] | None:
        """(test, the position of its first record, that of a later one) when one instance's records are
        not next to each other (a run.json edited or joined by hand): its verdicts would be made twice, each
        from part of its repeats. `records`: the same records again, read only when a start was suspect."""
        starts, self.starts = self.starts, None
        if starts is None:
            return None
        found = next(starts.found(_run_starts(records)), None)
        if found is None:
            return None
        test, suite, _ = found[0].split("\0")
        return f"{test} ({suite})", found[1], found[2]

    def close(self) -> list[Verdict]:
        """The verdicts still held: the last instance's, every reduced group's (a list's: all of them)."""
        out: list[Verdict] = []
        if self.whole:
            for (_, _, provider), mine in self.groups.items():
                recs = [r for _, r in mine]
                out += self.reducer.add(_verdict(recs, [i for i, _ in mine], provider, self.include_drafts), recs[0])
            self.groups.clear()
        else:
            for v, first in _window(self.window, self.include_drafts):
                out += self.reducer.add(v, first)
            self.window = []
        return out + self.reducer.close()


class _RunStarts:
    """The marks of where each run of one instance's records starts, and each run of one verdict group's
    (its instance, or its test under `reduce:`, whose instances make one verdict): made as `Verdicts`
    takes the records, and made again the same way by `apart` to confirm a suspect."""

    def __init__(self) -> None:
        self.instance: str | None = None
        self.group: str | None = None

    def of(self, r: Mapping[str, Any]) -> list[str]:
        """The marks record `r` starts (none when it continues the runs before it)."""
        instance = f"{r['base_id']}\0{r['suite']}\0i"
        if instance == self.instance:
            return []
        self.instance = instance
        group = f"{reduction.verdict_key(cast(Record, r))}\0{r['suite']}\0t"
        if group == self.group:
            return [instance]
        self.group = group
        return [instance, group]


def _run_starts(records: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, int]]:
    """Each mark `_RunStarts` makes over `records`, with the position of the record that starts it."""
    marks = _RunStarts()
    for i, r in enumerate(records):
        for mark in marks.of(r):
            yield mark, i


def _window(window: list[tuple[int, Record]], include_drafts: bool) -> Iterator[tuple[Verdict, Record]]:
    """The verdicts of one instance's records (each provider's, in the order first seen), each with its first record."""
    if len(window) == 1:  # one provider, played once: most instances of a large run
        i, r = window[0]
        yield _verdict([r], [i], r["provider"], include_drafts), r
        return
    by_provider: dict[str, list[tuple[int, Record]]] = {}
    for i, r in window:
        by_provider.setdefault(r["provider"], []).append((i, r))
    for provider, mine in by_provider.items():
        recs = [r for _, r in mine]
        yield _verdict(recs, [i for i, _ in mine], provider, include_drafts), recs[0]


def _verdict(recs: list[Record], idx: list[int], provider: str, include_drafts: bool) -> Verdict:
    first = recs[0]
    status, ok, rate, hat = combine_repeats(recs, first.get("repeat_rule", "all"))
    mean, std = mean_std([s for r in recs if (s := r.get("score")) is not None and r["status"] != "error"])
    critical = status in ("failed",) and any(r.get("critical_failed") for r in recs)
    is_curve = bool(first.get("curve"))
    draft = bool(first.get("draft"))
    gated = is_gated({"status": status, "draft": draft, "xfail": first.get("xfail"), "curve": is_curve})
    # the words a million verdicts share are held once (records read back from disk each bring their own)
    simulator = first.get("simulator")
    return Verdict(_shared(first["suite"]), first["base_id"], _shared(first["name"]), _shared(provider), status,
                   len(recs), ok, rate, hat, mean, std, gated, critical, draft, bool(first.get("xfail")), is_curve,
                   idx, category(status, is_curve, draft, include_drafts),
                   simulator=_shared(simulator) if isinstance(simulator, str) else simulator)


_WORDS: dict[str, str] = {}
_WORDS_MOST = 10_000


def _shared(text: str) -> str:
    """One str for equal suite paths, test names and provider ids (at most `_WORDS_MOST` of them)."""
    return _WORDS.setdefault(text, text) if len(_WORDS) < _WORDS_MOST else _WORDS.get(text, text)


def sla_verdicts(curve_list: list[Curve]) -> list[Sla]:
    """One verdict per curve test × provider with an `sla`: met only when every entry holds."""
    out: list[Sla] = []
    for c in curve_list:
        if not c["sla"]:
            continue
        entries: list[CurveSla] = [{**x, "text": sla_text(c, x)} for x in c["sla"]]
        statuses = {sla_entry_status(x) for x in c["sla"]}
        status = next(s for s in ("missed", "no data", "met") if s in statuses)
        out.append({"id": f"sla: {c['test']} @ {c['provider']}", "suite": c["suite"], "test": c["test"],
                    "name": c.get("name", ""), "provider": c["provider"], "variable": c["variable"], "status": status,
                    "entries": entries, "text": "; ".join(x["text"] for x in entries)})
    return out


def sla_text(curve: Curve | Mapping[str, Any], sla: CurveSla) -> str:
    """The measured value beside the target: `at 5: 0.67 < 0.80` for each point below it (missed), or the
    point the SLA is measured by (met)."""
    target = sla["min_score"]
    covered = covered_points(curve["points"], sla["at"])
    if sla_entry_status(sla) == "missed":
        return "; ".join(f"at {p['value']}: {mean:.2f} < {target:.2f}" for p in covered
                         if (mean := p["mean"]) is not None and mean < target)
    if unscored := sla.get("unscored_at"):
        return (f"no scored sample at {', '.join(str(v) for v in unscored)}: every sample errored "
                f"(target ≥ {target:.2f})")
    if sla["no_data"] or not covered:
        return f"no measured point at or below {sla['at']:g} (target ≥ {target:.2f})"
    low = binding_point(covered)
    return f"at {low['value']}: {low['mean']:.2f} ≥ {target:.2f}"


def metrics(records: Iterable[Mapping[str, Any]]) -> list[Metric]:
    """The `metric:` scoreboard per suite × provider × metric (`MetricBoard`)."""
    return fed(records, MetricBoard(streamed=not isinstance(records, list))).result()


class MetricBoard:
    """The `metric:` scoreboard as the records pass by (a `stream.Fold`): per suite × provider × metric, the
    mean score of its checks, and how many verdicts (test instance × provider, repeats combined by the
    test's rule) passed every check of that metric, out of those that reached a verdict on it — counted
    like every other summary figure (docs/en/reports-and-gate.md#outputs). `streamed`: records read back
    from disk, in plan order: each test's repeats are combined once its records are by (as `Verdicts`
    does), so what is held is one test's."""

    def __init__(self, streamed: bool) -> None:
        self.streamed = streamed
        self.board: dict[tuple[str, str, str], _Board] = {}
        self.repeats: dict[tuple[str, str, str], dict[str, list[Repeat]]] = defaultdict(dict)
        self.test: tuple[str, str] | None = None

    def add(self, record: Mapping[str, Any]) -> None:
        r = cast(Record, record)
        # a test's held repeats are decided at the first record of another test (held: the last test's)
        if self.streamed and self.repeats and (str(r["suite"]), reduction.verdict_key(r)) != self.test:
            _decided(self.repeats, self.board)
        by_metric: dict[str, list[dict[str, Any]]] = {}  # a record's checks by metric
        for a in r.get("assertions", []):
            if a.get("metric") and not a.get("skipped"):  # a skipped check examined nothing
                by_metric.setdefault(str(a["metric"]), []).append(a)
        if by_metric and self.streamed:
            self.test = (str(r["suite"]), reduction.verdict_key(r))
        for metric, checks in by_metric.items():
            key = (r["suite"], r["provider"], metric)
            line = self.board.setdefault(key, _Board())
            for a in checks:
                if a.get("score") is not None:
                    line.total += a["score"]
                    line.scored += 1
            status: StatusName = ("failed" if any(a.get("pass") is False for a in checks)  # a failure beside an error
                      else "error" if any(a.get("error") or a.get("pass") is None for a in checks) else "passed")
            self.repeats[key].setdefault(reduction.verdict_key(r), []).append(
                {"status": status, "rule": r.get("repeat_rule", "all")})

    def result(self) -> list[Metric]:
        _decided(self.repeats, self.board)
        return [{"suite": key[0], "provider": key[1], "metric": key[2],
                 "mean": round(line.total / line.scored, 6) if line.scored else None,
                 "passed": line.passed, "total": line.decided, "pass_rate_ci": interval(line.passed, line.decided)}
                for key, line in self.board.items()]


@dataclass(slots=True)
class _Board:
    """One line of the metric scoreboard as its records arrive: the sum and count of its scores, the verdicts
    that passed, and those that reached a verdict."""

    total: float = 0
    scored: int = 0
    passed: int = 0
    decided: int = 0


def _decided(repeats: dict[tuple[str, str, str], dict[str, list[Repeat]]],
             board: dict[tuple[str, str, str], _Board]) -> None:
    """Each held test's repeats combined (`combine_repeats`) onto its scoreboard line; none held after."""
    for key, by_test in repeats.items():
        line = board[key]
        for recs in by_test.values():
            status = combine_repeats(recs, recs[0]["rule"])[0]
            line.passed += status == "passed"
            line.decided += status != "error"
    repeats.clear()


SUMMED = ("calls", "cached_calls", "failed_calls", "retries", "tokens", "cost", "strategy_calls", "strategy_tokens",
          "strategy_cost")


def summary(records: Iterable[Mapping[str, Any]], vs: VerdictTally | Iterable[Verdict], slas: list[Sla]) -> Summary:
    """run.json's `summary` counts and sums (`RecordSums`), the verdicts as tallied (`VerdictTally`)."""
    return fed(records, RecordSums(streamed=not isinstance(records, list))).result(vs, slas)


class RecordSums:
    """run.json's `summary` as the records pass by (a `stream.Fold`): the records by status, the calls,
    tokens and costs summed, the judge's, the 429/503 answers and the metric scoreboard; `result` adds the
    verdicts' counts."""

    def __init__(self, streamed: bool) -> None:
        self.by_status = {s: 0 for s in ("passed", "failed", "error", "skipped", "xfailed", "xpassed")}
        self.sums: dict[str, Any] = dict.fromkeys(SUMMED, 0)  # each key's own kind of number
        self.count = 0
        self.judge = JudgeSpend()
        self.limited = RateLimits()
        self.metrics = MetricBoard(streamed)

    def add(self, r: Mapping[str, Any]) -> None:
        self.count += 1
        self.by_status[r["status"]] += 1
        sums = self.sums
        for key in SUMMED:
            if value := r.get(key):  # a light record leaves out what is empty
                sums[key] += value
        self.judge.add(r)
        self.limited.add(r)
        self.metrics.add(r)

    def result(self, vs: VerdictTally | Iterable[Verdict], slas: list[Sla]) -> Summary:
        sums, counted = self.sums, tallied(vs)
        c = suite_counts(counted.run, slas)  # the verdict counts, in the words every report uses
        judge = self.judge.result()
        return {
            "passed": c["passed"], "failed": c["failed"], "error": c["error"], "xfailed": c["xfailed"],
            "xpassed": c["xpassed"], "measured": c["measured"], "drafts": c["drafts"], "skipped": c["skipped"],
            "slas_missed": c["slas_missed"],
            "records": self.count, "by_status": self.by_status, "verdicts": counted.count,
            "calls": sums["calls"], "cached_calls": sums["cached_calls"], "failed_calls": sums["failed_calls"],
            "retries": sums["retries"], "tokens": sums["tokens"], "cost": round(sums["cost"], 6),
            "strategy_calls": sums["strategy_calls"], "strategy_tokens": sums["strategy_tokens"],
            "strategy_cost": round(sums["strategy_cost"], 6),
            "judge_calls": judge["judge_calls"], "judge_tokens": judge["judge_tokens"],
            "judge_cost": judge["judge_cost"],
            "rate_limited": self.limited.result(),
            "metrics": self.metrics.result(),
        }


def judge_totals(parts: Iterable[Mapping[str, Any]], into: Mapping[str, Any] | None = None) -> JudgeTotals:
    """The summary's `judge_calls`, `judge_tokens` and `judge_cost`: those of `parts` (records, second-opinion
    items), added to the figures already `into` a summary when given (docs/en/rule-self-tests.md#verdicts-that-hold)."""
    return fed(parts, JudgeSpend(into)).result()


class JudgeSpend:
    """`judge_totals` as the parts pass by (a `stream.Fold`): the judge's calls, tokens and cost summed."""

    def __init__(self, into: Mapping[str, Any] | None = None) -> None:
        base = into or {}
        self.calls, self.tokens, self.cost = int(base.get("judge_calls") or 0), int(base.get("judge_tokens") or 0), \
            float(base.get("judge_cost") or 0.0)

    def add(self, p: Mapping[str, Any]) -> None:
        if calls := p.get("judge_calls"):
            self.calls += int(calls)
        if tokens := p.get("judge_tokens"):
            self.tokens += int(tokens)
        if cost := p.get("judge_cost"):
            self.cost += float(cost)

    def result(self) -> JudgeTotals:
        return {"judge_calls": self.calls, "judge_tokens": self.tokens, "judge_cost": round(self.cost, 6)}


def rate_limited(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The 429/503 answers of the run, by provider id (docs/en/rate-limits.md): each conversation's, its judge's included."""
    return fed(records, RateLimits()).result()


class RateLimits:
    """`rate_limited` as the records pass by (a `stream.Fold`)."""

    def __init__(self) -> None:
        self.total: dict[str, int] = {}

    def add(self, r: Mapping[str, Any]) -> None:
        for provider, n in (r.get("rate_limited") or {}).items():
            self.total[provider] = self.total.get(provider, 0) + int(n)

    def result(self) -> dict[str, int]:
        return self.total


def finalize(run: dict[str, Any], fail_under: float | None, include_drafts: bool,
             corrected: Corrections | None = None, stream: bool | None = None) -> dict[str, Any]:
    """Fill `verdicts`, `curves`, `summary` and `gate` of a run from its records (the light forms of
    records read back from disk: what the aggregates read); `corrected`: what the labels say of its judged
    rules, read from the whole records (results/corrected.py), for `summary.corrected` and the corrected gate.
    The records are read once: the verdicts and every aggregate are folds fed from one pass
    (`stream.Fold`). The verdicts are made and counted as the records stream by, each written as it is
    made: to a `DiskRows` when `stream` (by default: when the records are read back from disk), else to a
    list (docs/en/scale-and-ray.md#memory)."""
    records: Sequence[Record] = run["results"]
    if stream is None:
        stream = isinstance(records, JournalRecords)
    if isinstance(records, JournalRecords) and records.light is not None:
        records = cast(list[Record], records.light)  # Records without their heavy keys (`stream.light`)
    counted = VerdictTally(include_drafts)
    made: DiskRows | list[RunVerdict] = DiskRows() if stream else []
    in_memory = isinstance(records, list)
    verdicts = Verdicts(include_drafts, whole=in_memory, most=len(records))
    sums, cs, lines, juries, pairs, attacks, paths = (RecordSums(streamed=not in_memory), CurveSamples(),
                                                      RedLines(include_drafts), Juries(), PairwiseCounts(),
                                                      AttackRows(), ToolPaths())
    folds: tuple[Fold, ...] = (sums, cs, lines, juries, pairs, attacks, paths)
    for r in records:  # the one pass
        for v in verdicts.add(r):
            counted.add(v)
            made.append(v.to_json())
        for fold in folds:
            fold.add(r)
    for v in verdicts.close():
        counted.add(v)
        made.append(v.to_json())
    if (apart := verdicts.apart(records)) is not None:  # (never in a run.json evalspec wrote)
        test, first, again = apart
        raise ConfigError([Problem("results", None, "", (  # (the file read is the caller's: named as what it holds)
            f"the records of {test} are not next to each other (records {first + 1} and {again + 1}): evalspec "
            "writes each test's records together, so the file was edited or joined by hand, and the test's "
            "verdict would be made twice, each from part of its records. Put each test's records together "
            "and run the command again"))])
    run["curves"] = cs.result()
    run["slas"] = sla_verdicts(run["curves"])
    run["summary"] = sums.result(counted, run["slas"])
    run["summary"].update(run_figures(run["suites"], counted, include_drafts))  # docs/en/statistics.md
    run["summary"]["red_lines"] = lines.result()
    if review := run.get("judge_review"):  # the second opinion's calls are the run's, not a record's
        run["summary"].update(judge_totals(review.get("items") or [], run["summary"]))
    if corrected is not None and corrected.rules:  # docs/en/judges.md#labels-flow-back
        run["summary"]["corrected"] = corrected.rules
    run["gate"] = decide(run["suites"], counted, run["slas"], fail_under, include_drafts, run["summary"]["suites"],
                         run["summary"]["red_lines"], corrected.suites if corrected is not None else None).to_json()
    if found := juries.result():  # docs/en/judges.md#juries
        run["summary"]["juries"] = found
    if pairwise := pairs.result():  # docs/en/judges.md#comparing-two-bot-versions-pairwise
        run["summary"]["pairwise"] = pairwise
    if attacked := attacks.result():
        run["summary"]["attacks"] = attacked
    if spread := simulator_spread(counted, include_drafts):  # docs/en/agents.md#comparing-two-simulators
        run["summary"]["simulator_spread"] = spread
    if warnings := paths.result():
        run["summary"]["warnings"] = warnings
    run["verdicts"] = made
    return run


def path_warnings(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """One warning per http `tool_calls:` path whose key was in no turn of the run (a typo reads as "no calls")."""
    return fed(records, ToolPaths()).result()


class ToolPaths:
    """`path_warnings` as the records pass by (a `stream.Fold`): per provider and `tool_calls:` path, whether
    any turn found its key."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, str], bool] = {}

    def add(self, record: Mapping[str, Any]) -> None:
        for path, hit in (record.get("tool_calls_paths") or {}).items():
            key = (str(record["provider"]), str(path))
            self.found[key] = self.found.get(key, False) or bool(hit)

    def result(self) -> list[str]:
        return [f"provider '{provider}': tool_calls path '{path}' never matched: check the path"
                for (provider, path), hit in self.found.items() if not hit]
