"""The gate (docs/en/reference/cli.md, §8, §10, §17): ONE owner of the exit code, whether it passed and why.

`decide` reaches the usual gate from the verdicts: per suite its pass rate against `min_pass_rate` (with
`gate.use_corrected`, corrected for the judge's errors on the labels: `gated_rate`,
docs/en/reports-and-gate.md#corrected-pass-rate), a critical assertion that failed, an SLA missed; errors
beyond `max_errors`, an SLA without data and a run with no gated verdict exit 3 unless something failed. `GateDecision.with_baseline` is the regressions
gate (docs/en/reports-and-gate.md#regressions-against-a-baseline): with a baseline, "no regression" replaces the pass-rate check of the suites gated on
regressions — `regressed`, `new failing`, an SLA newly missed or a critical assertion that newly failed
exit 1; failures the baseline already had are shown but do not block; exit 3 for errors still applies.
Without a baseline the usual gate runs, and the run says so.

Every other place (run.json's `gate`, the CLI's exit code, the API's `Run.exit_code`, the reports) reads
the decision made here; `GateDecision.to_json()` is exactly run.json's `gate`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalspec.core.exitcodes import ExitCode
from evalspec.results.errorbars import interval
from evalspec.results.rundata import Baseline, Gate, GateCorrected, GateSuite, Paired
from evalspec.results.stats import clopper_pearson_upper, conversations_to_bound, mcnemar_exact_one_sided
from evalspec.results.verdict import Verdict, VerdictTally, is_gated, suite_counts, tallied

if TYPE_CHECKING:
    from evalspec.assertions.labels import Label

MODES = ("pass_rate", "regressions")
PAIRED = "regressions-paired"  # `--gate regressions-paired`, or `gate: {regressions: paired}`
ALPHA = 0.05


@dataclass(frozen=True)
class SuiteGate:
    """One suite's part of the gate: its figures, whether it passed and why not."""

    suite: str
    passed: int
    failed: int
    errors: int
    pass_rate: float | None
    min_pass_rate: float
    max_errors: int
    ok: bool
    reasons: tuple[str, ...]
    errors_exceeded: bool
    sla_no_data: tuple[str, ...]
    counts: Mapping[str, int]
    mode: str | None = None  # set by the regressions gate only
    # reasons that block in every mode: pass^k below `min_pass_hat_k`, a red line over its `max_rate`
    held: tuple[str, ...] = ()
    paired: Paired | None = None  # the paired test, when it decided this suite's regressions
    red_lines: tuple[str, ...] = ()  # each `max_rate` rule's bound, in words (passed or not)
    corrected: GateCorrected | None = None  # `gate.use_corrected`: the rate corrected from the labels

    def to_json(self) -> GateSuite:
        out: GateSuite = {"suite": self.suite, "passed": self.passed, "failed": self.failed, "errors": self.errors,
               "pass_rate": self.pass_rate, "pass_rate_ci": interval(self.passed, self.passed + self.failed),
               "min_pass_rate": self.min_pass_rate, "max_errors": self.max_errors,
               "ok": self.ok, "reasons": list(self.reasons), "errors_exceeded": self.errors_exceeded,
               "sla_no_data": list(self.sla_no_data), "counts": dict(self.counts)}
        if self.mode is not None:
            out["mode"] = self.mode
        if self.held:
            out["held"] = list(self.held)
        if self.paired is not None:
            out["paired"] = self.paired.copy()
        if self.red_lines:
            out["red_lines"] = list(self.red_lines)
        if self.corrected is not None:
            out["corrected"] = self.corrected.copy()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SuiteGate:
        return cls(data["suite"], data["passed"], data["failed"], data["errors"], data["pass_rate"],
                   data["min_pass_rate"], data["max_errors"], bool(data["ok"]), tuple(data["reasons"]),
                   bool(data.get("errors_exceeded")), tuple(data.get("sla_no_data") or ()),
                   dict(data.get("counts") or {}), data.get("mode"), tuple(data.get("held") or ()),
                   data.get("paired"), tuple(data.get("red_lines") or ()), data.get("corrected"))


@dataclass(frozen=True)
class GateDecision:
    """The gate of a run: passed (exit 0) or not, its exit code (docs/en/reference/cli.md) and its reasons, per suite too."""

    passed: bool
    exit_code: int
    pass_rate: float | None
    fail_under: float | None
    include_drafts: bool
    reasons: tuple[str, ...]
    suites: tuple[SuiteGate, ...]
    mode: str | None = None  # "pass_rate" / "regressions" once a baseline was asked for

    def to_json(self) -> Gate:
        """run.json's `gate`."""
        counted = sum(s.passed for s in self.suites), sum(s.failed for s in self.suites)
        out: Gate = {
            "passed": self.passed, "exit_code": self.exit_code, "pass_rate": self.pass_rate,
            "verdicts_passed": counted[0], "verdicts_failed": counted[1],
            "pass_rate_ci": interval(counted[0], counted[0] + counted[1]),
            "fail_under": self.fail_under, "include_drafts": self.include_drafts, "reasons": list(self.reasons),
            "suites": [s.to_json() for s in self.suites]}
        if self.mode is not None:
            out["mode"] = self.mode
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GateDecision:
        """The decision stored in a run.json's `gate`."""
        return cls(bool(data["passed"]), int(data["exit_code"]), data.get("pass_rate"), data.get("fail_under"),
                   bool(data.get("include_drafts")), tuple(data.get("reasons") or ()),
                   tuple(SuiteGate.from_json(s) for s in data.get("suites") or ()), data.get("mode"))

    def without_baseline(self, note: str) -> GateDecision:
        """Regressions were asked for but no baseline could be had: the usual gate stands, and says so."""
        return dataclasses.replace(self, mode="pass_rate",
                                   reasons=(*self.reasons, f"no baseline ({note}): the usual gate ran"))

    def with_baseline(self, diff: Mapping[str, Any], modes: Mapping[str, str],
                      alphas: Mapping[str, float] | None = None) -> GateDecision:
        """The regressions gate: the suites gated on regressions are blocked only by what got worse — each
        regressed test (`regressions`), or the paired test at the suite's alpha (`paired`)."""
        if not diff.get("available"):
            return self.without_baseline(str(diff.get("note")))
        suites = tuple(_on_regressions(s, diff) if modes.get(s.suite) == "regressions"
                       else _on_paired(s, diff, (alphas or {}).get(s.suite, ALPHA)) if modes.get(s.suite) == PAIRED
                       else s for s in self.suites)
        failures = [f"{s.suite}: {r}" for s in suites for r in s.reasons]
        # an earlier "no gated verdict" (exit 3) still counts; its reason is not repeated
        errors = self.exit_code == ExitCode.TOO_MANY_ERRORS or any(s.errors_exceeded or s.sla_no_data for s in suites)
        return _concluded(suites, failures, errors, [], self.pass_rate, self.fail_under, self.include_drafts,
                          "regressions")


def _on_regressions(suite: SuiteGate, diff: Mapping[str, Any]) -> SuiteGate:
    from evalspec.results.compare import blocking_reasons  # (docs/en/scale-and-ray.md#start-up)

    reasons = (*blocking_reasons(dict(diff), suite.suite), *suite.held)
    return dataclasses.replace(suite, mode="regressions", reasons=reasons, ok=not reasons)


def _on_paired(suite: SuiteGate, diff: Mapping[str, Any], alpha: float) -> SuiteGate:
    """Regressions decided by the paired test (docs/en/statistics.md#regressions-decided-by-a-paired-test):
    the regressed tests are listed in the diff, but only a significant p blocks; critical rules newly
    failed, SLAs newly missed and the reasons that hold in every mode still do."""
    from evalspec.results.compare import blocking_reasons

    test = paired_test(paired_rows(diff, suite.suite), alpha)
    reasons = blocking_reasons(dict(diff), suite.suite, each=False)
    if test["significant"]:
        reasons.insert(0, paired_text(test))
    reasons += suite.held
    return dataclasses.replace(suite, mode="regressions", reasons=tuple(reasons), ok=not reasons, paired=test)


def _outcome(side: Mapping[str, Any] | None) -> str | None:
    """passed / failed for a verdict the paired test can use: gated, reached, not failed by a critical rule."""
    if side is None or not is_gated(side) or side.get("critical_failed"):
        return None
    return {"passed": "passed", "failed": "failed"}.get(str(side.get("status")))


def paired_rows(diff: Mapping[str, Any], suite: str | None = None) -> Iterator[tuple[str, str]]:
    """(base, head) of every verdict both runs reached on the same instance (the diff's matching), leaving
    out drafts, xfail tests, curve points and verdicts failed by a critical rule in either run: one pass over
    the rows (a large diff's are read back from disk, docs/en/scale-and-ray.md#memory)."""
    from evalspec.results.compare import suite_key

    wanted = None if suite is None else suite_key(suite)
    for row in diff.get("rows") or []:
        if wanted is not None and row["suite"] != wanted:
            continue
        base, head = _outcome(row.get("base")), _outcome(row.get("head"))
        if base is not None and head is not None:
            yield base, head


def paired_test(pairs: Iterable[tuple[str, str]], alpha: float) -> Paired:
    """`{b, c, p, alpha, significant}`: b passed → failed, c failed → passed, the one-sided exact McNemar p."""
    b = c = 0
    for pair in pairs:
        b += pair == ("passed", "failed")
        c += pair == ("failed", "passed")
    p = mcnemar_exact_one_sided(b, c)
    return {"b": b, "c": c, "p": round(p, 6), "alpha": alpha, "significant": p < alpha}


def paired_text(test: Mapping[str, Any]) -> str:
    return (f"paired test: {test['b']} passed → failed, {test['c']} failed → passed: "
            f"p = {test['p']:.3g} < alpha {test['alpha']:g}")


def pass_hat_k_reason(suite: Mapping[str, Any], figures: Mapping[str, Any] | None) -> str | None:
    """`pass^3 0.72 < 0.80` when the suite's pass^k is below its `gate.min_pass_hat_k` (no repeated verdict
    reached: nothing to compare, the errors gate)."""
    wanted = suite.get("min_pass_hat_k")
    if not wanted or not figures:
        return None
    k, least = int(wanted["k"]), float(wanted["min"])
    curve = figures.get("pass_hat_k") or []
    if len(curve) < k or curve[k - 1] >= least:
        return None
    return f"pass^{k} {curve[k - 1]:.2f} < {least:.2f}"


def percent(x: float) -> str:
    return f"{x * 100:.1f} %"


def bound_text(line: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether a red line under `max_rate` holds (its 95 % upper bound ≤ max_rate), and why in words:
    "0 breaches in 300 conversations: breach rate < 1.0 % (95 %)"."""
    limit, n, breaches = float(line["max_rate"]), int(line["n"]), int(line["breaches"])
    upper = clopper_pearson_upper(breaches, n)
    seen = f"{breaches} breach{'es' if breaches != 1 else ''} in {n} conversation{'s' if n != 1 else ''}"
    if upper is not None and upper <= limit:
        return True, f"{line['rule']}: {seen}: breach rate < {percent(upper)} (95 %)"
    if breaches == 0:
        return False, (f"{line['rule']}: {seen}: not enough conversations to show < {limit * 100:g} %: "
                       f"need {conversations_to_bound(limit)}")
    return False, (f"{line['rule']}: {seen}: breach rate < {percent(upper or 1.0)} (95 %), "
                   f"above max_rate {limit * 100:g} %")


def exit_code(failed: bool, errors: bool) -> int:
    """docs/en/reference/cli.md: 1 when the gate failed, else 3 when errors left it without a verdict, else 0."""
    return int(ExitCode.GATE_FAILED if failed else ExitCode.TOO_MANY_ERRORS if errors else ExitCode.OK)


def _concluded(suites: tuple[SuiteGate, ...], failures: list[str], errors: bool, no_verdict: list[str],
               pass_rate: float | None, fail_under: float | None, include_drafts: bool,
               mode: str | None) -> GateDecision:
    """The one place an exit code is reached: the failures decide, then the errors (their reasons listed
    only when they decide)."""
    code = exit_code(bool(failures), errors)
    reasons = list(failures)
    if code == ExitCode.TOO_MANY_ERRORS:
        reasons += [f"{s.suite}: {s.errors} errors > max_errors {s.max_errors}" for s in suites if s.errors_exceeded]
        reasons += [f"{s.suite}: SLA no data: {x}" for s in suites for x in s.sla_no_data]
        reasons += no_verdict
    return GateDecision(code == ExitCode.OK, code, pass_rate, fail_under, include_drafts, tuple(reasons), suites, mode)


def decide(suites: Sequence[Mapping[str, Any]], vs: VerdictTally | Iterable[Verdict], slas: Sequence[Mapping[str, Any]],
           fail_under: float | None, include_drafts: bool, figures: Sequence[Mapping[str, Any]] = (),
           red_lines: Sequence[Mapping[str, Any]] = (), labels: Mapping[str, list[Label]] | None = None
           ) -> GateDecision:
    """The usual gate per suite and for the run, from the verdicts, the SLA verdicts, each suite's pass^k
    (`figures`, results/errorbars.py), the red lines' bounds (`red_lines`) and, for the suites with
    `gate.use_corrected`, the labels of their judged rules (`labels`, by suite: results/corrected.py).

    A pass rate over no gated verdict is None (shown "—"), never 100%."""
    by_suite = {f["suite"]: f for f in figures}
    counted = tallied(vs, include_drafts)
    per_suite = []
    all_passed = all_failed = all_errors = all_skipped = 0
    any_errors = False
    for s in suites:
        mine = counted.suite(s["path"])
        passed, failed, errors, skipped = mine.passed, mine.failed, mine.errors, mine.skipped
        rate = passed / (passed + failed) if passed + failed else None
        min_rate = fail_under if fail_under is not None else s["min_pass_rate"]
        mine_slas = [x for x in slas if x["suite"] == s["path"]]
        sla_missed = [f"{x['id']}: {x['text']}" for x in mine_slas if x["status"] == "missed"]
        corrected = None
        if s.get("use_corrected"):
            from evalspec.results.corrected import gate_correction

            corrected = gate_correction(passed, failed, (labels or {}).get(s["path"], []))
        reasons = []
        if rate is not None and (compared := gated_rate(rate, corrected)) < min_rate:
            reasons.append(rate_reason(compared, min_rate, corrected))
        if mine.critical:  # a critical failure gates wherever it happens: curve points and xfail tests, never drafts
            reasons.append("critical assertion failed: " + mine.critical_text())
        if sla_missed:
            reasons.append("SLA missed: " + "; ".join(sla_missed))
        held, bounds = [], []
        if below := pass_hat_k_reason(s, by_suite.get(s["path"])):
            held.append(below)
        for line in red_lines:
            if line["suite"] == s["path"] and line.get("max_rate") is not None:
                ok, text = bound_text(line)
                bounds.append(text)
                if not ok:
                    held.append(f"red line over max_rate: {text}")
        reasons += held
        # docs/en/rule-self-tests.md#verdicts-that-hold: an SLA without data gates like an error (exit 3 unless something failed)
        no_data = [f"{x['id']}: {x['text']}" for x in mine_slas if x["status"] == "no data"]
        too_many_errors = errors > s["max_errors"]
        per_suite.append(SuiteGate(s["path"], passed, failed, errors, rate, min_rate, s["max_errors"], not reasons,
                                   tuple(reasons), too_many_errors, tuple(no_data), suite_counts(mine, mine_slas),
                                   held=tuple(held), red_lines=tuple(bounds), corrected=corrected))
        all_passed, all_failed, all_errors = all_passed + passed, all_failed + failed, all_errors + errors
        all_skipped += skipped
        any_errors = any_errors or too_many_errors or bool(no_data)
    overall = all_passed / (all_passed + all_failed) if all_passed + all_failed else None
    failures = [f"{p.suite}: {r}" for p in per_suite for r in p.reasons]
    if fail_under is not None and overall is not None and overall < fail_under:
        failures.append(f"run pass rate {overall:.2%} < --fail-under {fail_under:.2%}")
    # docs/en/reports-and-gate.md#errors-and-failures, §26: whatever max_errors says; nothing checked is not a pass
    no_verdict = overall is None and all_errors + all_skipped > 0
    why = ["no gated verdict was reached: " + ", ".join(
        f"{n} {word}{'s' if n != 1 and word == 'error' else ''}"
        for n, word in ((all_errors, "error"), (all_skipped, "skipped")) if n)] if no_verdict else []
    return _concluded(tuple(per_suite), failures, any_errors or no_verdict, why, overall, fail_under, include_drafts,
                      None)


def gated_rate(rate: float, corrected: Mapping[str, Any] | None) -> float:
    """The pass rate a suite's gate compares with `min_pass_rate`: the corrected one when `gate.use_corrected`
    corrected it (docs/en/reports-and-gate.md#corrected-pass-rate), else the raw one."""
    if corrected is not None and isinstance(corrected.get("corrected"), (int, float)):
        return float(corrected["corrected"])
    return rate


def rate_reason(compared: float, min_rate: float, corrected: Mapping[str, Any] | None) -> str:
    """`pass rate 70.00% < 80.00%`, saying whether (and from how many labels) it was corrected."""
    if corrected is None:
        return f"pass rate {compared:.2%} < {min_rate:.2%}"
    n = corrected["labels"]
    if corrected.get("no_better_than_chance"):
        return (f"pass rate {compared:.2%} < {min_rate:.2%} (not corrected: on its {n} labels the judge is no "
                "better than chance)")
    if corrected.get("corrected") is None:
        from evalspec.assertions.labels import MIN_LABELS

        return (f"pass rate {compared:.2%} < {min_rate:.2%} (not corrected: {n} labels; at least {MIN_LABELS}, "
                "some that pass and some that fail, are needed)")
    return (f"corrected pass rate {compared:.2%} < {min_rate:.2%} (raw {float(corrected['raw']):.2%}, "
            f"corrected from {n} labels)")


def no_baseline(note: str) -> Baseline:
    """run.json's `baseline` value when none could be had."""
    return {"available": False, "note": note}


def suite_mode(suite_meta: Mapping[str, Any], cli_mode: str | None) -> str:
    """pass_rate, regressions (each regressed test blocks) or regressions-paired (the paired test decides):
    `--gate` first, else the suite's `gate: {mode, regressions}`."""
    mode = cli_mode or str(suite_meta.get("gate_mode") or "pass_rate")
    if mode == "regressions" and suite_meta.get("regressions") == "paired":
        return PAIRED
    return mode


def apply_baseline(run: dict[str, Any], diff: Baseline | dict[str, Any], cli_mode: str | None) -> dict[str, Any]:
    """Put the diff into the run and, for suites gated on regressions, replace their gate verdict; with the
    paired test, `baseline.paired` is its figures over every suite it decides."""
    run["baseline"] = diff
    modes = {s["path"]: suite_mode(s, cli_mode) for s in run["suites"]}
    if not {"regressions", PAIRED} & set(modes.values()):
        return run
    alphas = {s["path"]: float(s.get("alpha") or ALPHA) for s in run["suites"]}
    paired = [path for path, mode in modes.items() if mode == PAIRED]
    if paired and diff.get("available"):
        diff["paired"] = paired_test((p for path in paired for p in paired_rows(diff, path)),
                                     min(alphas[path] for path in paired))
    run["gate"] = GateDecision.from_json(run["gate"]).with_baseline(diff, modes, alphas).to_json()
    return run
