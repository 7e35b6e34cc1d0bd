"""Two runs -> a diff: every verdict matched and put in one category, score changes, curve changes
and per-provider latency / tokens / cost, computed from the two run.json files alone.

Verdicts are matched by suite path (relative to the working directory), instance id without `#k`
and provider; both sides' repeats are combined by HEAD's pass rule. The matching is a join in a private
temporary SQLite file (`_Joined`), so two runs of a million conversations are compared in flat memory
(docs/en/scale-and-ray.md#memory).
"""


from __future__ import annotations

import contextlib
import errno
import math
import os
import sqlite3
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from evalspec.extend.transcript import system_messages
from evalspec.results.curves import sla_entry_status
from evalspec.results.findings import first_failure, rule_text
from evalspec.results.journal import decode, encode
from evalspec.results.rundata import (
    Baseline,
    BaselineRow,
    BaseMeta,
    Curve,
    CurveChange,
    ProviderChange,
    ProviderFigures,
    Record,
    RowCategory,
    RunData,
    ScoreChange,
    Side,
    SlaChange,
)
from evalspec.results.stream import DiskRows
from evalspec.results.verdict import combine_repeats, is_gated, mean_std, reaches_gate

#: every category, in the order reports list them (the ones that block first)
CATEGORIES = ("regressed", "new failing", "failing, no baseline verdict", "new error", "flaky", "fixed", "recovered",
              "still failing", "new", "removed", "unchanged")
#: categories that fail a regressions gate (an SLA newly missed and a critical rule newly failed block too)
BLOCKING = ("regressed", "new failing", "failing, no baseline verdict")
NO_BASE_VERDICT: RowCategory = "failing, no baseline verdict"
FLAG_ONLY = "a critical assertion"  # a record with `critical_failed` but no failed critical assertion listed
SCORE_DELTA = 0.05

Key = tuple[str, str, str]


def suite_key(path: str) -> str:
    """A suite path as the working directory sees it, so runs made elsewhere still match."""
    p = Path(path)
    if p.is_absolute():
        try:
            return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            return p.as_posix()
    return Path(os.path.normpath(path)).as_posix()


def _outcome(status: str | None) -> str | None:
    """passed / failed / error, or None when there is no verdict (absent or skipped)."""
    if status in ("passed", "xpassed"):
        return "passed"
    if status in ("failed", "xfailed"):
        return "failed"
    if status == "error":
        return "error"
    return None


def category(base: str | None, head: str | None) -> RowCategory:
    """docs/en/reports-and-gate.md#regressions-against-a-baseline's categories, from -> to (statuses already reduced by `_outcome`)."""
    if head == "error":
        return "new error"
    if base is None:
        return "new" if head is None else "new failing" if head == "failed" else "new"
    if head is None:
        return "removed"
    if base == "error":  # docs/en/rule-self-tests.md#verdicts-that-hold: a failure after a base that reached no verdict is not a recovery
        return NO_BASE_VERDICT if head == "failed" else "recovered"
    moved: dict[tuple[str, str], RowCategory] = {("passed", "failed"): "regressed", ("failed", "passed"): "fixed",
                                                 ("failed", "failed"): "still failing"}
    return moved.get((base, head), "unchanged")


#: what a row reads of each repeat (`_side`, `combine_repeats`): the rest stays on disk
COMPARED = ("status", "score", "critical_failed", "xfail", "draft", "curve", "name", "repeat_rule")


#: what a row reads of a failed critical check (`critical_rules`, `verdict.breached_bounded_rule`)
CRITICAL = ("severity", "max_rate", "pass", "turn", "type", "value", "scope")


def _compared(r: Record) -> Record:
    kept = {k: r[k] for k in COMPARED if k in r}  # type: ignore[literal-required]
    checks = [{k: a[k] for k in CRITICAL if k in a} for a in r.get("assertions") or []  # type: ignore[literal-required]
              if a.get("severity") == "critical" and a.get("pass") is False]
    if checks:
        kept["assertions"] = checks
    return cast(Record, kept)


def critical_rules(records: Sequence[Record]) -> list[str]:
    """The critical assertions that failed in any repeat, each named by its rule and turn, in order (a rule
    under `max_rate` gates on its breach rate, not here: docs/en/statistics.md#red-lines-as-bounds)."""
    out: dict[str, None] = {}
    for r in records:
        for a in r.get("assertions") or []:
            if a.get("severity") == "critical" and a.get("max_rate") is None and a.get("pass") is False:
                where = f"turn {a['turn']}: " if a.get("turn") is not None else ""
                out[f"{where}{rule_text(a)} ({a.get('scope')})"] = None
    if not out and any(r.get("critical_failed") for r in records):
        out[FLAG_ONLY] = None
    return list(out)


def _side(records: list[Record] | None, rule: str | float) -> Side | None:
    if not records:
        return None
    status, ok, rate, _ = combine_repeats(records, rule)
    score, _ = mean_std([s for r in records if (s := r.get("score")) is not None and r["status"] != "error"])
    first = records[0]
    critical = critical_rules(records) if status == "failed" else []
    return {"status": status, "passed": ok, "n": len(records), "pass_rate": rate, "score": score,
            "critical_failed": bool(critical), "critical_rules": critical,
            "draft": bool(first.get("draft")), "measured": bool(first.get("curve")),
            "xfail": bool(first.get("xfail"))}


def newly_critical(base: Side | None, head: Side | None) -> list[str]:
    """The head's failed critical rules that did not also fail in the matched base verdict (docs/en/rule-self-tests.md#verdicts-that-hold)."""
    if head is None or not reaches_gate(head):
        return []
    known = set(base["critical_rules"]) if base is not None else set()
    if FLAG_ONLY in known:  # the base kept only the flag: any critical failure is one it had
        return []
    return [c for c in head["critical_rules"] if c not in known]


def first_problem(records: Iterable[Record] | None) -> str:
    """The first failure of the first failed (or errored) repeat, in the words every report uses."""
    for r in records or []:
        if r["status"] in ("failed", "xfailed", "error") and (line := first_failure(r)):
            return line[:300]
    return ""


class _Joined:
    """Both runs' records, as a row compares them, in a private temporary SQLite database (deleted when
    closed): a join by key that holds no row in memory, whatever the order of the two runs
    (docs/en/scale-and-ray.md#memory). Loading reads each run's full records once, in order; the
    provider figures are gathered in the same pass (their latencies kept on disk for the p95)."""

    def __init__(self) -> None:
        self.db = sqlite3.connect("")  # "": a temporary file that goes with the connection
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-2000;"
                              "CREATE TABLE recs (k TEXT, side INT, pos INT, data TEXT, problem TEXT);"
                              "CREATE TABLE lat (side INT, provider TEXT, ms REAL);")
        #: per side, per provider in order of first record: [latency sum, n, tokens sum, n, cost sum, n]
        self.figures: tuple[dict[str, list[float]], dict[str, list[float]]] = ({}, {})

    def load(self, side: int, run: Mapping[str, Any]) -> None:
        suites: dict[str, str] = {}  # a run has few suites and many records
        figures = self.figures[side]
        recs: list[tuple[str, int, int, str, str | None]] = []
        lats: list[tuple[int, str, float]] = []
        for pos, r in enumerate(run.get("results", [])):  # a streamed run's records are read one at a time
            suite = suites.get(r["suite"]) or suites.setdefault(r["suite"], suite_key(r["suite"]))
            provider = r["provider"]
            # as text: the bytes orjson gives keep their whole buffer (kilobytes each) while batched
            key = encode([suite, r.get("base_id") or r["test_id"], provider]).decode("utf-8")
            problem = first_problem([r])[:300] if side == HEAD and r["status"] in _STOPPED else None
            recs.append((key, side, pos, encode(_compared(r)).decode("utf-8"), problem or None))
            f = figures.get(provider) or figures.setdefault(provider, [0.0, 0, 0.0, 0, 0.0, 0])
            for m in system_messages(r.get("transcript", [])):
                if (ms := m.get("latency_ms")) is not None:
                    f[0] += float(ms)
                    f[1] += 1
                    lats.append((side, provider, float(ms)))
            if (t := r.get("tokens")) is not None:
                f[2] += float(t)
                f[3] += 1
            if (c := r.get("cost")) is not None:
                f[4] += float(c)
                f[5] += 1
            if len(recs) >= _BATCH:
                self._flush(recs, lats)
        self._flush(recs, lats)

    def _flush(self, recs: list[tuple[str, int, int, str, str | None]], lats: list[tuple[int, str, float]]) -> None:
        self.db.executemany("INSERT INTO recs VALUES (?, ?, ?, ?, ?)", recs)
        self.db.executemany("INSERT INTO lat VALUES (?, ?, ?)", lats)
        recs.clear()
        lats.clear()

    def groups(self) -> Iterator[tuple[Key, list[Record], list[Record], str, int]]:
        """(key, base repeats, head repeats, head's first problem and its record's position or -1) per
        instance: HEAD's in the order of their first record, then those only BASE had, in BASE's order."""
        self.db.executescript(
            "CREATE INDEX by_key ON recs (k, side, pos);"
            "CREATE TABLE keys AS SELECT k, MIN(CASE WHEN side = 1 THEN pos END) AS h,"
            " MIN(CASE WHEN side = 0 THEN pos END) AS b FROM recs GROUP BY k ORDER BY h IS NULL, h, b;")
        rows = self.db.execute("SELECT keys.rowid, r.k, r.side, r.pos, r.data, r.problem FROM keys CROSS JOIN recs r"
                               " ON r.k = keys.k ORDER BY keys.rowid, r.side, r.pos")
        at, key, problem, where = None, "", "", -1
        sides: tuple[list[Record], list[Record]] = ([], [])
        for rowid, k, side, pos, data, found in rows:
            if rowid != at:
                if at is not None:
                    yield cast(Key, tuple(decode(key))), sides[0], sides[1], problem, where
                at, key, sides, problem, where = rowid, k, ([], []), "", -1
            sides[side].append(decode(data))
            if found and not problem:
                problem, where = found, pos
        if at is not None:
            yield cast(Key, tuple(decode(key))), sides[0], sides[1], problem, where

    def provider_stats(self, side: int) -> dict[str, ProviderFigures]:
        """Per provider: mean and p95 reply latency (ms), tokens and cost per conversation."""
        self.db.execute("CREATE INDEX IF NOT EXISTS by_latency ON lat (side, provider, ms)")
        out: dict[str, ProviderFigures] = {}
        for provider, (lat, n_lat, tokens, n_tokens, cost, n_cost) in self.figures[side].items():
            out[provider] = {"latency_mean": lat / n_lat if n_lat else None, "latency_p95": self._p95(side, provider, int(n_lat)),
                             "tokens": tokens / n_tokens if n_tokens else None, "cost": cost / n_cost if n_cost else None}
        return out

    def _p95(self, side: int, provider: str, n: int) -> float | None:
        if not n:
            return None
        (ms,) = self.db.execute("SELECT ms FROM lat WHERE side = ? AND provider = ? ORDER BY ms LIMIT 1 OFFSET ?",
                                (side, provider, max(0, math.ceil(0.95 * n) - 1))).fetchone()
        return float(ms)

    def close(self) -> None:
        self.db.close()


BASE, HEAD = 0, 1
_STOPPED = ("failed", "xfailed", "error")
_BATCH = 2000


def _row(key: Key, b_recs: list[Record], h_recs: list[Record], problem: str) -> BaselineRow:
    """One matched verdict: both sides' repeats combined by HEAD's pass rule, and the change's category."""
    first = (h_recs or b_recs)[0]  # every group has a record
    rule = first.get("repeat_rule", "all")
    b, h = _side(b_recs, rule), _side(h_recs, rule)
    cat = category(_outcome(b["status"] if b else None), _outcome(h["status"] if h else None))
    loose = h if h is not None else b
    assert loose is not None
    # drafts, measured points and xfail tests are compared but never block
    gated = h is not None and is_gated(h)
    delta = (h["score"] - b["score"]) if h and b and h["score"] is not None and b["score"] is not None else None
    return {
        "suite": key[0], "test_id": key[1], "provider": key[2], "name": first.get("name", key[1]), "category": cat,
        "base": b, "head": h, "score_delta": round(delta, 6) if delta is not None else None,
        "draft": loose["draft"], "measured": loose["measured"],
        # every critical failure gates (curve points and xfail tests too, never drafts) unless the base had it
        "critical_new": bool(newly_critical(b, h)), "critical_newly_failed": newly_critical(b, h),
        "blocking": gated and cat in BLOCKING, "replays": [], "problem": problem,
    }


class _Fold:
    """What the gate and the headline read of a diff's rows, gathered as the rows go by (one pass, and
    nothing per row kept but what is listed: score changes and blocking reasons)."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(CATEGORIES, 0)
        self.score_changes: list[ScoreChange] = []
        self.blocked: list[str] = []
        self.critical: list[str] = []

    def add(self, r: Mapping[str, Any]) -> None:
        self.counts[r["category"]] += 1
        if r["score_delta"] is not None and abs(r["score_delta"]) >= SCORE_DELTA - 1e-9:
            self.score_changes.append({"suite": r["suite"], "test_id": r["test_id"], "provider": r["provider"],
                                       "base": r["base"]["score"], "head": r["head"]["score"], "delta": r["score_delta"]})
        if r["blocking"]:
            self.blocked.append(f"{r['category']}: {r['test_id']} @ {r['provider']}")
        elif r["critical_new"]:
            self.critical.append(f"critical assertion newly failed: {r['test_id']} @ {r['provider']}")

    def into(self, diff: dict[str, Any]) -> dict[str, Any]:
        slas = _sla_reasons(diff["curves"], None)
        diff["counts"], diff["score_changes"] = self.counts, self.score_changes
        diff["reasons"] = self.blocked + self.critical + slas
        diff["exit_code"] = 1 if self.blocked or slas else 0
        return diff


def _curve_key(c: Curve) -> Key:
    return suite_key(c["suite"]), c["test"], c["provider"]


def compare_curves(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[CurveChange]:
    """Half-life, failure point and SLA verdicts per curve test × provider, base beside head."""
    b_curves = {_curve_key(c): c for c in base.get("curves", [])}
    out: list[CurveChange] = []
    h_curves = {_curve_key(c): c for c in head.get("curves", [])}
    for key in list(h_curves) + [k for k in b_curves if k not in h_curves]:
        b, h = b_curves.get(key), h_curves.get(key)
        slas: list[SlaChange] = []
        b_sla = {(x["at"], x["min_score"]): x for x in (b["sla"] if b else [])}
        for x in h["sla"] if h else []:
            was = b_sla.get((x["at"], x["min_score"]))
            missed = sla_entry_status(x) == "missed"
            was_missed = was is not None and sla_entry_status(was) == "missed"
            slas.append({"at": x["at"], "min_score": x["min_score"],
                         "base": None if was is None else sla_entry_status(was),
                         "head": sla_entry_status(x),
                         "newly_missed": missed and not was_missed})
        out.append({"suite": key[0], "test": key[1], "provider": key[2],
                    "half_life": [b and b["half_life"], h and h["half_life"]],
                    "failure_point": [b and b["failure_point"], h and h["failure_point"]],
                    "sla": slas})
    return out


def provider_stats(run: Mapping[str, Any]) -> dict[str, ProviderFigures]:
    """Per provider: mean and p95 reply latency (ms), tokens and cost per conversation."""
    joined = _Joined()
    try:
        joined.load(HEAD, run)
        return joined.provider_stats(HEAD)
    finally:
        joined.close()


def compare_providers(b: Mapping[str, ProviderFigures], h: Mapping[str, ProviderFigures]) -> list[ProviderChange]:
    """Per provider, BASE's and HEAD's figures (`_Joined.provider_stats`) and their change."""
    rows: list[ProviderChange] = []
    for provider in list(h) + [p for p in b if p not in h]:
        bs, hs = b.get(provider, {}), h.get(provider, {})
        delta = {k: (hs[k] - bs[k]) if hs.get(k) is not None and bs.get(k) is not None else None  # type: ignore[operator]
                 for k in ("latency_mean", "latency_p95", "tokens", "cost")}
        rows.append({"provider": provider, "base": bs or None, "head": hs or None, "delta": delta})
    return rows


def _meta(run: Mapping[str, Any], path: str | None) -> BaseMeta:
    return {"run_id": run.get("run_id"), "started_at": run.get("started_at"), "path": path}


def counts(rows: Iterable[BaselineRow]) -> dict[str, int]:
    fold = _Fold()
    for r in rows:
        fold.add(r)
    return fold.counts


def _sla_reasons(curves: Iterable[Mapping[str, Any]], suite: str | None) -> list[str]:
    return [f"SLA newly missed: {c['test']} @ {c['provider']}: at {x['at']} min {x['min_score']}"
            for c in curves if suite is None or c["suite"] == suite_key(suite)
            for x in c["sla"] if x["newly_missed"]]


def blocking_reasons(diff: Baseline | Mapping[str, Any], suite: str | None = None, critical: bool = True,
                     each: bool = True) -> list[str]:
    """What fails a regressions gate (of one suite, or of the whole run); `evalspec diff` leaves out
    critical rules newly failing inside tests that already failed (`critical=False`); under the paired test
    (`each=False`) a regressed test does not block by itself, a critical rule newly failed still does.
    One pass over the rows (a large diff's are read back from disk one at a time)."""
    wanted = None if suite is None else suite_key(suite)
    blocked, newly = [], []
    for r in diff["rows"]:
        if wanted is not None and r["suite"] != wanted:
            continue
        if each and r["blocking"]:
            blocked.append(f"{r['category']}: {r['test_id']} @ {r['provider']}")
        # `flaky` never excuses a critical failure (docs/en/rule-self-tests.md#verdicts-that-hold)
        elif critical and r["critical_new"]:
            newly.append(f"critical assertion newly failed: {r['test_id']} @ {r['provider']}")
    return blocked + newly + _sla_reasons(diff["curves"], suite)


def finish(diff: dict[str, Any]) -> dict[str, Any]:
    """Recount after the rows changed (confirmation replays turn `regressed` into `flaky`): one pass."""
    fold = _Fold()
    for r in diff["rows"]:
        fold.add(r)
    return fold.into(diff)


def compare_runs(base: RunData | Mapping[str, Any], head: RunData | Mapping[str, Any], base_path: str | None = None,
                 head_path: str | None = None, rows_on_disk: bool = False, problems: array[int] | None = None) -> Baseline:
    """The diff of HEAD against BASE (the value of run.json's `baseline` key). With `rows_on_disk` (a
    large diff, `evalspec diff`) its rows are a `DiskRows`, written as they are made: nothing per row
    stays in memory but the score changes and blocking reasons (docs/en/scale-and-ray.md#memory).
    `problems`, when given, gets each row's position of the HEAD record its `problem` was taken from (-1:
    none), for the screen to word it again (`diffwords.spoken`)."""
    rows: list[BaselineRow] | DiskRows = DiskRows() if rows_on_disk else []
    diff: dict[str, Any] = {"available": True, "base": _meta(base, base_path), "head": _meta(head, head_path),
                            "rows": rows}
    joined, fold = _Joined(), _Fold()
    try:
        joined.load(BASE, base)
        joined.load(HEAD, head)
        for key, b_recs, h_recs, problem, where in joined.groups():
            row = _row(key, b_recs, h_recs, problem)
            if problems is not None:
                problems.append(where)
            fold.add(row)
            rows.append(row)  # type: ignore[arg-type]  # a DiskRows takes a row as the mapping it is
        diff["curves"] = compare_curves(base, head)
        diff["providers"] = compare_providers(joined.provider_stats(BASE), joined.provider_stats(HEAD))
    except sqlite3.OperationalError as exc:  # a full disk under the join: an error that says so, never a traceback
        if not any(word in str(exc).lower() for word in _STORAGE_WORDS):
            raise
        raise storage_error(exc) from None
    finally:
        with contextlib.suppress(sqlite3.Error):  # (what failed was raised above)
            joined.close()
    return cast(Baseline, fold.into(diff))


_STORAGE_WORDS = ("disk", "full", "i/o", "unable to open")  # SQLite's words for a file it cannot write


def storage_error(exc: sqlite3.Error) -> OSError:
    """The join's temporary database could not be written (a full disk, a file size limit): an OSError
    naming the folder it is written in, as every other failed write is reported
    (docs/en/troubleshooting.md#resuming-and-storage)."""
    folder = os.environ.get("SQLITE_TMPDIR") or tempfile.gettempdir()
    return OSError(errno.ENOSPC, f"the diff's temporary database in this folder could not be written ({exc}): free "
                                 "some space there, or set TMPDIR to a folder with room", folder)  # run.json's `baseline`, as `rundata.Baseline` describes it
