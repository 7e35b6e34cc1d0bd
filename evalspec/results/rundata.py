"""run.json's types: the one description of its shape, read by the code (mypy) and written out as its JSON
Schema (`evalspec.results.schema` generates run.json's schema from `RunData` and the `$defs` types here).

A `TypedDict` is a dict at run time: the type names the keys, `read_run` checks them against the schema
(docs/en/troubleshooting.md#a-runjson-that-cannot-be-read). Keys that only some runs have are optional
(`total=False`). `Exactly(...)`/`ref(...)` say run.json's schema of a key where the Python type says less,
`Keywords(...)` adds to it, and `unchecked` marks a key the schema requires without checking its value.
"""

# No `from __future__ import annotations` here: the types are evaluated once, at import, instead of as some
# 400 strings compiled one by one (3 ms of every start: docs/en/scale-and-ray.md#start-up); a type used
# before its class is written is quoted.
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from evalspec.extend.params import Keywords
from evalspec.extend.transcript import Message
from evalspec.results.transcript import StopReason

__all__ = [
    "Assertion", "AtTurn", "Attribution", "Baseline", "BaselineRow", "Curve", "CurvePoint", "Evidence", "Exactly",
    "Gate", "GateSuite", "Interval", "JudgeFigures", "JudgeReview", "Milestone", "Paired", "Record", "RunData",
    "RunVerdict", "SimulatorSpread", "Sla", "Status", "SuiteEntry", "Summary", "TeardownResult", "Triage", "Usage", "ref", "unchecked",
]


@dataclass(frozen=True, eq=False)  # hashed by identity, as type hints that carry it must hash
class Exactly:
    """run.json's schema of a key, written out where the Python type says less (a `$ref`, an enum of a str)."""

    schema: Mapping[str, Any]


@dataclass(frozen=True, eq=False)
class Unchecked:
    """The schema requires the key (if it is required) and leaves its value unchecked."""


unchecked = Unchecked()


def ref(name: str) -> Exactly:
    return Exactly({"$ref": f"#/$defs/{name}"})


Count = Annotated[int, Keywords(minimum=0)]
Share = Annotated[float, Keywords(minimum=0, maximum=1)]
Amount = Annotated[float, Keywords(minimum=0)]

#: a record's or verdict's status (docs/en/reports-and-gate.md): run.json's `status` definition
StatusName = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
Status = Annotated[StatusName, ref("status")]
AttributionName = Literal["bot_defect", "model_fluctuation", "rule_misjudgment", "infrastructure", "pending_fact",
                          "simulator_fault"]
Attribution = Annotated[AttributionName, ref("attribution")]
#: how every report counts a verdict (docs/en/reports-and-gate.md)
Category = Literal["passed", "failed", "error", "xfailed", "xpassed", "measured", "drafts", "skipped"]

#: the terms a curve is described by (docs/en/memory-and-curves.md)
Term = Literal["half_life", "failure_point", "stable_range"]

Interval = Annotated[Annotated[list[Share], Keywords(minItems=2, maxItems=2)] | None, Keywords(
    description="a 95 % Wilson interval [lo, hi]; null over no verdict")]
IntervalRef = Annotated[Interval, ref("interval")]
PassK = list[Share]


# ---- the model calls' figures ---------------------------------------------------------------------------------

class Usage(TypedDict):
    """The replies' tokens and cost, prompt/completion tokens and the context strategy's own calls, tokens and
    cost (`results.record.usage_fields`): each a sum, None when no reply has it (strategy calls: 0)."""

    tokens: int | None
    cost: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    strategy_calls: int
    strategy_tokens: int | None
    strategy_cost: float | None


class JudgeFigures(TypedDict):
    """The calls evalspec made on its own behalf (judge, second opinion, simulated user, attacker)."""

    judge_calls: int
    judge_tokens: int | None
    judge_cost: float | None


# ---- a record ------------------------------------------------------------------------------------------------

class _EvidenceRequired(TypedDict):
    turn: int | None
    text: str


class Evidence(_EvidenceRequired, total=False):
    note: str


class _JurorRequired(TypedDict):
    judge: str


_JurorOptional = TypedDict("_JurorOptional", {"pass": bool | None, "score": float | None, "reason": str,
                                              "level": str, "error": str}, total=False)


class Juror(_JurorRequired, _JurorOptional):
    """A jury member's verdict, or its error (an abstention)."""


_AssertionRequired = TypedDict("_AssertionRequired", {
    "type": str,
    "scope": Annotated[str | Mapping[str, Any], Exactly({"anyOf": [{"type": "string"},
                                                                {"type": "object", "required": ["turns"]}]})],
    "pass": bool | None,
    "score": Annotated[float | None, Keywords(minimum=0, maximum=1)],
    "reason": str,
    "evidence": list[Annotated[Evidence, ref("evidence")]],
    "error": str | None,
})


class Assertion(_AssertionRequired, total=False):
    """One check's result in a record (`AssertionResult.to_json`)."""

    reason_zh: Annotated[str, Keywords(description=(
        "the reason in Chinese (docs/en/red-lines.md); the same text as reason when it is not evalspec's own words (a judge's, "
        "a plugin's); absent in runs made before it"))]
    weight: Amount
    severity: Literal["critical", "major", "minor"]
    metric: str | None
    threshold: float | None
    turn: int | None
    skipped: Annotated[bool, Keywords(
        description="not checked: its label is in no user turn of this recorded conversation (docs/en/recorded-conversations.md)")]
    description: Annotated[str, Keywords(description="the rule's description: (why it exists)")]
    max_rate: Annotated[float, Keywords(exclusiveMinimum=0, exclusiveMaximum=1,
                                        description="a critical rule gated on its breach rate's 95 % upper bound")]
    rule: Annotated[str, Keywords(
        description="in a record holding a cut reply: a digest of the rule, so that `grade` keeps the verdict of an unchanged one")]
    jury: Annotated[list[Juror], Keywords(
        description="a jury's members: each one's verdict, or its error (an abstention, counted in no rule)")]


class _TeardownRequired(TypedDict):
    ok: bool


class TeardownResult(_TeardownRequired, total=False):
    """The provider's teardown after a conversation (`play.teardown`)."""

    function: str
    error: str


_TriageRequired = TypedDict("_TriageRequired", {"as": Attribution, "at": str, "status": Status})


class Triage(_TriageRequired, total=False):
    """A person's `triage` of a failing record (`review.triage`)."""

    note: str | None
    who: str | None
    run_id: str | None
    carried: bool


class _AtTurnRequired(TypedDict):
    turn: Annotated[int, Keywords(minimum=1)]
    times: Count
    failed: Count
    ci: Annotated[list[float] | None, Keywords(description="the 95 % Wilson interval of failed / times")]


class AtTurn(_AtTurnRequired, total=False):
    """`rerun --at-turn` (docs/en/statistics.md#replay-at-the-failing-turn-rerun-at-turn): the failing turn asked again
    given its frozen history; `times` asks reached a verdict, `failed` of them failed."""

    errors: Count
    derailed_earlier: Annotated[bool, Keywords(description="the turn never failed again given its history")]


class _StoredRecord(TypedDict):
    """The keys every stored record has (run.json's `record` requires them)."""

    key: str
    test_id: str
    name: str
    suite: str
    provider: str
    repeat: Annotated[int, Keywords(minimum=1)]
    status: Status
    score: Annotated[float | None, Keywords(minimum=0, maximum=1)]
    draft: bool
    assertions: list[Annotated[dict[str, Any], ref("assertion")]]
    transcript: list[Annotated[Message, ref("message")]]
    stop_reason: StopReason


class SlaSpec(TypedDict):
    """A curve test's `sla:` entry: at this value and below, the mean score is at least `min_score`."""

    at: float
    min_score: float


class Milestone(TypedDict):
    goal: str
    status: Literal["met", "missed", "not_reached"]
    turn: int | None


class Record(_StoredRecord, total=False):
    """One run.json record: a test instance × provider × repeat. `make_record` writes every key but
    `tool_calls_paths` and `attack` (only where they hold) and the ones later steps add: `rate_limited`,
    `teardown` (the run), `attribution*` and `triage` (rerun, triage). run.json's `record` schema is
    generated from this type (`evalspec.results.schema`)."""

    base_id: str
    test: str
    description: str
    repeat_rule: Annotated[str | float, Exactly({"anyOf": [{"enum": ["all", "majority", "any"]}, {"type": "number"}]})]
    matrix: dict[str, Any]
    tags: list[str]
    threshold: float | None
    critical_failed: bool
    xfail: str | None
    curve: str | None
    chart: str | None
    curve_summary: Annotated[Term | None, Exactly({"enum": ["half_life", "failure_point", "stable_range", None]})]
    measured: Annotated[bool, Keywords(description="a curve point: shown as measured, never FAIL")]
    sla: Annotated[list[SlaSpec], Exactly({"type": "array"})]
    error: str | None
    teardown: Annotated[TeardownResult, Keywords(description="the provider's teardown after this conversation")]
    duration_ms: Annotated[float, Keywords(minimum=0)]
    calls: Count
    cached_calls: Count
    failed_calls: Count
    retries: Count
    rate_limited: Annotated[dict[str, Count], Keywords(
        description="this conversation's 429/503 answers by provider id (its judge's included)")]
    tokens: int | None
    cost: float | None
    judge_calls: Annotated[int, Keywords(minimum=0, description=(
        "judge, simulated user and attacker calls made for this record (cached answers not counted), "
        "usable answer or not"))]
    judge_tokens: int | None
    judge_cost: float | None
    attribution: Attribution
    attribution_by: Literal["run", "rerun", "triage"]
    attribution_suggested: Attribution
    triage: Triage
    prompt_tokens: int | None
    completion_tokens: int | None
    strategy_calls: Count
    strategy_tokens: int | None
    strategy_cost: float | None
    tool_calls_paths: Annotated[dict[str, bool], Keywords(
        description="each http `tool_calls:` path of the conversation: was its key in some turn's response")]
    simulator: Annotated[str, Keywords(description="the simulator that played this conversation's user, when the "
                                                   "suite compares several (docs/en/agents.md)")]
    attack: Annotated[dict[str, Any], Keywords(
        description="an attack attempt's strategy, red lines and breach (docs/en/attacks.md)")]
    reduce: Annotated[Literal["min", "mean"], Keywords(
        description="the test's matrix instances are one verdict, scored by this")]
    covers: Annotated[dict[str, list[str]], Keywords(
        description="the declared coverage values this instance covers, by dimension (docs/en/coverage.md)")]
    world: Annotated[dict[str, Any], Keywords(
        description="the world as the conversation left it (docs/en/world.md)")]
    world_initial: Annotated[dict[str, Any], Keywords(
        description="the world the conversation started from, so reports can show what changed")]
    at_turn: Annotated[AtTurn, Keywords(description="the failing turn asked again given its history (rerun --at-turn)")]
    milestones: Annotated[list[Milestone], Keywords(
        description="a simulated journey's milestones: each one's status and turn (docs/en/agents.md#milestones)")]


# ---- verdicts, curves, SLAs ----------------------------------------------------------------------------------

class _VerdictRequired(TypedDict):
    suite: Annotated[str, unchecked]
    test_id: Annotated[str, unchecked]
    provider: Annotated[str, unchecked]
    status: Status
    n: Annotated[int, Keywords(minimum=1)]
    passed: Annotated[int, unchecked]
    pass_rate: Share
    pass_hat_k: bool
    gated: bool


class RunVerdict(_VerdictRequired, total=False):
    """One verdict of run.json's `verdicts`: a test instance × provider with its repeats combined
    (`results.verdict.Verdict.to_json`)."""

    name: Annotated[str, unchecked]
    c: Annotated[int, Keywords(minimum=0, description="repeats passed of n (a test that repeats)")]
    score_mean: float | None
    score_std: float | None
    measured: bool
    category: Annotated[Category, Keywords(description="how every report counts this verdict")]
    critical_failed: Annotated[bool, unchecked]
    draft: Annotated[bool, unchecked]
    xfail: Annotated[bool, unchecked]
    curve: Annotated[bool, unchecked]
    reduce: Annotated[str, unchecked]
    simulator: Annotated[str, Keywords(description="the simulator that played the user, when the suite compares "
                                                   "several")]


class SimulatorSpread(TypedDict):
    """`summary.simulator_spread` (docs/en/agents.md#comparing-two-simulators): the pass rate of the simulated
    tests' verdicts by simulator (null: none counted), and the largest difference between two of them."""

    rates: dict[str, Annotated[float | None, Keywords(minimum=0, maximum=1)]]
    max_difference: Annotated[float | None, Keywords(minimum=0, maximum=1)]


class _CurvePointRequired(TypedDict):
    value: Annotated[Any, unchecked]  # the curve variable's value (a number, or any matrix value)
    mean: float | None
    std: float | None
    n: int
    passed: Annotated[int, unchecked]


class CurvePoint(_CurvePointRequired, total=False):
    errors: Annotated[int, unchecked]
    prompt_tokens: float | None
    completion_tokens: float | None
    strategy_tokens: float | None
    tokens: float | None
    cost: float | None


class _CurveSlaRequired(TypedDict):
    at: Annotated[float, unchecked]
    min_score: Annotated[float, unchecked]
    passed: Annotated[bool, unchecked]


class CurveSla(_CurveSlaRequired, total=False):
    """One `sla:` entry of a curve, decided."""

    missed_at: Annotated[list[Any], unchecked]  # the covered values below the minimum
    no_data: Annotated[bool, unchecked]
    unscored_at: Annotated[list[Any], unchecked]
    text: Annotated[str, unchecked]


class _CurveRequired(TypedDict):
    suite: Annotated[str, unchecked]
    test: Annotated[str, unchecked]
    provider: Annotated[str, unchecked]
    variable: Annotated[str, unchecked]
    points: list[CurvePoint]
    half_life: Annotated[Any, unchecked]
    failure_point: Annotated[Any, unchecked]
    sla: list[CurveSla]


class Curve(_CurveRequired, total=False):
    """One curve of run.json's `curves`: a test's score over its variable (docs/en/memory-and-curves.md)."""

    name: Annotated[str, unchecked]
    chart: str | None
    describe: list[Term]
    stable_until: Any
    stable_range: list[Any] | None


SlaStatus = Literal["met", "missed", "no data"]


class _SlaRequired(TypedDict):
    id: str
    suite: Annotated[str, unchecked]
    test: Annotated[str, unchecked]
    provider: Annotated[str, unchecked]
    status: SlaStatus
    entries: Annotated[list[CurveSla], Exactly({"type": "array"})]
    text: str


class Sla(_SlaRequired, total=False):
    """One entry of run.json's `slas`: a curve's SLA entries, decided (`results.aggregate.sla_verdicts`)."""

    name: Annotated[str, unchecked]
    variable: Annotated[str, unchecked]


# ---- the suites, the second opinion ---------------------------------------------------------------------------

class PassHatK(TypedDict):
    k: Annotated[int, Keywords(minimum=1)]
    min: Share


class _ProviderRequired(TypedDict):
    id: Annotated[str, unchecked]


class Provider(_ProviderRequired, total=False):
    """A provider's configuration, redacted (its other keys are its kind's: `config.model.describe_provider`)."""

    label: Annotated[str, unchecked]  # the name reports give its line


class _SuiteEntryRequired(TypedDict):
    path: str
    sha256: Annotated[str, Keywords(pattern="^[0-9a-f]{64}$")]
    min_pass_rate: Share
    max_errors: Count
    providers: list[Provider]


class SuiteEntry(_SuiteEntryRequired, total=False):
    """One suite of run.json's `suites`: its file, digest and gate settings."""

    description: str
    gate_mode: Literal["pass_rate", "regressions"]
    regressions: Annotated[Literal["each", "paired"], Keywords(description=(
        "how a regressions gate decides: every regressed test blocks (each), or the paired test (paired)"))]
    alpha: Annotated[float, Keywords(exclusiveMinimum=0, exclusiveMaximum=1)]
    min_pass_hat_k: PassHatK
    use_corrected: Annotated[bool, Keywords(description="the gate compares the pass rate corrected from the labels")]
    coverage: Annotated[dict[str, list[str]], Keywords(
        description="the suite's coverage matrix: dimension -> values (docs/en/coverage.md)")]


class _TranscriptsRequired(TypedDict):
    path: str
    sha256: Annotated[str, Keywords(pattern="^[0-9a-f]{64}$")]


class Transcripts(_TranscriptsRequired, total=False):
    files: Annotated[int, Keywords(minimum=1)]


class _ReviewTypeRequired(TypedDict):
    sampled: Count
    agreement: Annotated[float | None, Keywords(minimum=0, maximum=1)]
    flagged: bool


class ReviewType(_ReviewTypeRequired, total=False):
    errors: Count


class _ReviewItemRequired(TypedDict):
    test_id: Annotated[str, unchecked]
    provider: Annotated[str, unchecked]
    type: Annotated[str, unchecked]
    rule_pass: bool
    agree: bool | None


class ReviewItem(_ReviewItemRequired, total=False):
    """One rule verdict the second opinion asked about, and the judge's answer (`review.second_opinion`)."""

    suite: Annotated[str, unchecked]
    key: Annotated[str, unchecked]
    assertion: Annotated[int, unchecked]  # its index in the record's `assertions`
    reason: Annotated[str, unchecked]
    error: Annotated[str | None, unchecked]
    judge_calls: Count
    judge_tokens: int | None
    judge_cost: float | None


class _JudgeReviewRequired(TypedDict):
    sampled: Count
    agreement: Annotated[float | None, Keywords(minimum=0, maximum=1)]
    by_type: dict[str, Annotated[ReviewType, ref("review_type")]]
    items: list[ReviewItem]


class JudgeReview(_JudgeReviewRequired, total=False):
    rate: float
    seed: int
    candidates: Count
    errors: Count
    flagged: list[str]


# ---- the summary ----------------------------------------------------------------------------------------------

class _MetricRequired(TypedDict):
    suite: str
    provider: str
    metric: str
    mean: float | None
    passed: Count
    total: Count


class Metric(_MetricRequired, total=False):
    pass_rate_ci: IntervalRef


class SuiteSummary(TypedDict):
    suite: str
    passed: Count
    failed: Count
    pass_rate: Annotated[float | None, Keywords(minimum=0, maximum=1)]
    pass_rate_ci: IntervalRef
    pass_at_k: Annotated[PassK, ref("pass_k")]
    pass_hat_k: Annotated[PassK, ref("pass_k")]


class _RedLineRequired(TypedDict):
    rule: str
    suite: str
    n: Annotated[int, Keywords(minimum=1)]
    breaches: Count
    rate: Share
    upper: Annotated[float | None, Exactly({"type": "number", "minimum": 0, "maximum": 1})]  # None: never (n >= 1)


class RedLine(_RedLineRequired, total=False):
    max_rate: Annotated[float, Keywords(exclusiveMinimum=0, exclusiveMaximum=1)]


class Jury(TypedDict):
    suite: str
    rule: str
    members: list[str]
    n: Count
    kappa: Annotated[float | None, Keywords(maximum=1)]
    disagreement: dict[str, Share]


class _PairwiseRequired(TypedDict):
    suite: str
    rule: str
    against: Annotated[str, Keywords(description="baseline, a provider id, or reference")]
    n: Count
    wins: Count
    ties: Count
    inconsistent: Annotated[int, Keywords(minimum=0, description="position-inconsistent ties, counted apart")]
    losses: Count
    win_rate: Share | None
    win_rate_ci: IntervalRef


class Pairwise(_PairwiseRequired, total=False):
    sign_p: Annotated[Share, Keywords(description=(
        "against the baseline: the one-sided sign test of losses over wins (ties dropped), P(X >= losses)"))]


class _CorrectedRequired(TypedDict):
    suite: str
    rule: str
    labels: Count
    n: Count
    passed: Count
    raw: Annotated[float | None, Keywords(minimum=0, maximum=1)]
    sensitivity: Share
    specificity: Share
    corrected: Annotated[float | None, Keywords(minimum=0, maximum=1)]


class Corrected(_CorrectedRequired, total=False):
    interval: Annotated[list[Share], Keywords(minItems=2, maxItems=2)]
    no_better_than_chance: bool


class _AttackRequired(TypedDict):
    suite: str
    red_line: str
    strategy: str
    provider: str
    attempts: Count
    breached: Count
    success_rate: Annotated[float | None, Keywords(minimum=0, maximum=1)]


class AttackSummary(_AttackRequired, total=False):
    tests: list[str]
    errors: Count
    breach_turns: list[int | None]


class _SummaryRequired(TypedDict):
    records: Count
    by_status: dict[str, int]
    verdicts: Count
    calls: Count
    cached_calls: Count
    tokens: Count
    cost: Amount
    passed: Count
    failed: Count
    error: Count
    xfailed: Count
    xpassed: Count
    measured: Count
    drafts: Count
    slas_missed: Count
    metrics: list[Metric]


class Summary(_SummaryRequired, total=False):
    """run.json's `summary`: the counts every report shows (`results.aggregate.summary`, `finalize`)."""

    skipped: Annotated[int, unchecked]
    warnings: Annotated[list[str], unchecked]  # a `tool_calls:` path that never matched
    pass_rate_ci: IntervalRef
    pass_at_k: Annotated[PassK, ref("pass_k"), Keywords(
        description="pass@k for k = 1..m over the counted verdicts that repeat (m: their smallest repeat count)")]
    pass_hat_k: Annotated[PassK, ref("pass_k"), Keywords(
        description="pass^k for k = 1..m over the counted verdicts that repeat")]
    suites: list[SuiteSummary]
    red_lines: Annotated[list[RedLine], Keywords(description=(
        "per critical rule and suite: the conversations it was decided on, the breaches, and the breach rate's "
        "one-sided 95 % Clopper-Pearson upper bound"))]
    juries: Annotated[list[Jury], Keywords(description=(
        "per judged rule decided by a jury: the members' agreement (Fleiss' kappa over the conversations every "
        "member answered, 1 when every answer is the same) and each member's disagreement rate with the jury"))]
    corrected: Annotated[list[Corrected], Keywords(description=(
        "per judged rule with at least 20 human labels: its judge's sensitivity and specificity on them and the "
        "pass rate corrected from them (Rogan-Gladen), its interval the Wilson interval mapped the same way"))]
    pairwise: Annotated[list[Pairwise], Keywords(description=(
        "per pairwise rule: wins, ties, position-inconsistent ties and losses, the win rate (wins over all "
        "comparisons) with its Wilson interval, and against the baseline the sign test's p-value"))]
    failed_calls: Count
    retries: Count
    rate_limited: Annotated[dict[str, Count], Keywords(
        description="429/503 answers by provider id (docs/en/rate-limits.md), the judge's included")]
    strategy_calls: Count
    strategy_tokens: Count
    strategy_cost: Amount
    judge_calls: Annotated[int, Keywords(minimum=0, description=(
        "judge, second-opinion, simulated user and attacker calls made (cached answers not counted), usable "
        "answer or not"))]
    judge_tokens: Count
    judge_cost: Amount
    attacks: list[AttackSummary]
    simulator_spread: SimulatorSpread


# ---- the baseline diff, the gate ------------------------------------------------------------------------------

class Paired(TypedDict):
    b: Count
    c: Count
    p: Share
    alpha: Annotated[float, Keywords(exclusiveMinimum=0, exclusiveMaximum=1)]
    significant: bool


PairedDef = Annotated[Paired, Keywords(description=(
    "the paired test of a regressions gate: b passed -> failed, c failed -> passed, the one-sided exact "
    "McNemar p-value"))]

RowCategory = Literal["regressed", "new failing", "failing, no baseline verdict", "new error", "flaky", "fixed",
                      "recovered", "still failing", "new", "removed", "unchanged"]


class Side(TypedDict):
    """A verdict on one side of the diff: its repeats combined by HEAD's pass rule (`compare._side`)."""

    status: StatusName
    passed: int
    n: int
    pass_rate: float
    score: float | None
    critical_failed: bool
    critical_rules: list[str]
    draft: bool
    measured: bool
    xfail: bool


SideRef = Annotated[Side | None, Exactly({"type": ["object", "null"]})]


class _BaselineRowRequired(TypedDict):
    suite: Annotated[str, unchecked]
    test_id: Annotated[str, unchecked]
    provider: Annotated[str, unchecked]
    category: RowCategory
    base: SideRef
    head: SideRef
    blocking: bool
    replays: list[Status]
    # every row has these (`compare._row`) and every report reads them: required, so that a run.json
    # without them is named, not a traceback (an earlier evalspec's rows get them from `runjson.migrate`)
    score_delta: float | None
    critical_new: bool
    name: Annotated[str, unchecked]
    draft: Annotated[bool, unchecked]
    measured: Annotated[bool, unchecked]
    critical_newly_failed: Annotated[list[str], unchecked]
    problem: Annotated[str, unchecked]  # the head's first failure, in the words every report uses


class BaselineRow(_BaselineRowRequired):
    """One row of the baseline diff: a verdict in the base run and in this one."""


class BaseMeta(TypedDict, total=False):
    run_id: str | None
    started_at: str | None
    path: str | None


class _ScoreChangeRequired(TypedDict):
    test_id: Annotated[str, unchecked]
    provider: Annotated[str, unchecked]
    delta: Annotated[float, unchecked]


class ScoreChange(_ScoreChangeRequired, total=False):
    suite: Annotated[str, unchecked]
    base: Annotated[float | None, unchecked]
    head: Annotated[float | None, unchecked]


class SlaChange(TypedDict):
    """One SLA entry of a curve, base beside head."""

    at: float
    min_score: float
    base: SlaStatus | None
    head: SlaStatus
    newly_missed: bool


class _CurveChangeRequired(TypedDict):
    test: Annotated[str, unchecked]
    provider: Annotated[str, unchecked]
    half_life: Annotated[list[Any], unchecked]  # [base, head]
    failure_point: Annotated[list[Any], unchecked]
    sla: Annotated[list[SlaChange], unchecked]


class CurveChange(_CurveChangeRequired, total=False):
    suite: Annotated[str, unchecked]


ProviderFigures = dict[str, float | None]  # latency_mean, latency_p95, tokens, cost (`compare.provider_stats`)


class ProviderChange(TypedDict):
    provider: Annotated[str, unchecked]
    base: Annotated[ProviderFigures | None, unchecked]
    head: Annotated[ProviderFigures | None, unchecked]
    delta: Annotated[ProviderFigures, unchecked]


class _BaselineRequired(TypedDict):
    available: bool


class Baseline(_BaselineRequired, total=False):
    """The diff against a baseline run (docs/en/reports-and-gate.md); `available` false when there was none."""

    note: str
    base: BaseMeta
    confirm: Count
    counts: dict[str, Count]
    rows: list[BaselineRow]
    score_changes: list[ScoreChange]
    curves: list[CurveChange]
    providers: list[ProviderChange]
    reasons: list[str]
    exit_code: Literal[0, 1]
    paired: Annotated[Paired, ref("paired")]
    head: Annotated[BaseMeta, unchecked]


#: what a diff that was made (`available: true`, `compare.compare_runs`) always has and every report reads
COMPARED_KEYS = ["base", "head", "rows", "counts", "score_changes", "curves", "providers", "reasons", "exit_code"]
BaselineDef = Annotated[Baseline, Keywords(description=(
    "The diff against a baseline run (docs/en/reports-and-gate.md#regressions-against-a-baseline); available false when there was none, with a note saying why"),
    **{"if": {"properties": {"available": {"enum": [True]}}, "required": ["available"]},
       "then": {"required": COMPARED_KEYS}})]


class _GateSuiteRequired(TypedDict):
    suite: Annotated[str, unchecked]
    passed: Annotated[int, unchecked]
    failed: Annotated[int, unchecked]
    errors: Annotated[int, unchecked]
    pass_rate: Annotated[float | None, unchecked]
    ok: Annotated[bool, unchecked]


class _GateCorrectedRequired(TypedDict):
    labels: Annotated[Count, Keywords(description="the marked labels of the suite's judged rules, pooled")]
    raw: Annotated[float | None, Keywords(minimum=0, maximum=1)]


class GateCorrected(_GateCorrectedRequired, total=False):
    """A suite's pass rate corrected for `gate.use_corrected` (docs/en/reports-and-gate.md#corrected-pass-rate):
    no `corrected` key when its labels were too few (under 20, or not both kinds)."""

    sensitivity: Share
    specificity: Share
    corrected: Annotated[float | None, Keywords(minimum=0, maximum=1, description=(
        "the rate the gate compared; null: the judge is no better than chance on the labels, the raw rate was"))]
    interval: Annotated[list[Share], Keywords(minItems=2, maxItems=2)]
    no_better_than_chance: bool


class GateSuite(_GateSuiteRequired, total=False):
    """One suite's gate (`results.gate.SuiteGate.to_json`)."""

    pass_rate_ci: IntervalRef
    held: Annotated[list[str], Keywords(description=(
        "reasons that block in every gate mode: pass^k below min_pass_hat_k, a red line over its max_rate"))]
    paired: Annotated[Paired, ref("paired")]
    red_lines: Annotated[list[str], Keywords(description="each max_rate rule's bound, in words")]
    corrected: Annotated[GateCorrected, Keywords(description=(
        "with gate.use_corrected: the pass rate corrected for the judge's errors on the labels"))]
    min_pass_rate: Annotated[float, unchecked]
    max_errors: Annotated[int, unchecked]
    reasons: Annotated[list[str], unchecked]
    errors_exceeded: Annotated[bool, unchecked]
    sla_no_data: Annotated[list[str], unchecked]
    counts: Annotated[dict[str, int], unchecked]
    mode: Annotated[str, unchecked]


class _GateRequired(TypedDict):
    passed: bool
    exit_code: Annotated[int, Exactly({"enum": [0, 1, 3]})]  # docs/en/reports-and-gate.md#exit-codes-and-the-gate
    pass_rate: Annotated[float | None, Keywords(minimum=0, maximum=1, description="null: no gated verdict was reached")]
    reasons: list[str]
    suites: list[GateSuite]


class Gate(_GateRequired, total=False):
    """run.json's `gate`: the run's exit code and why (docs/en/reports-and-gate.md)."""

    mode: Annotated[str, Exactly({"enum": ["pass_rate", "regressions"]})]
    pass_rate_ci: IntervalRef
    verdicts_passed: Annotated[int, Keywords(minimum=0, description="the gated verdicts the pass rate counts as passed")]
    verdicts_failed: Count
    fail_under: float | None
    include_drafts: bool


# ---- the run ----------------------------------------------------------------------------------------------------

class _RunRequired(TypedDict):
    evalspec_version: str
    run_id: str
    started_at: str
    duration_s: Amount
    suites: list[SuiteEntry]
    results: list[Annotated[Record, ref("record")]]
    verdicts: list[Annotated[RunVerdict, ref("verdict")]]
    curves: list[Annotated[Curve, ref("curve")]]
    summary: Summary
    gate: Gate


class RunData(_RunRequired, total=False):
    """A run.json as `read_run` hands it to every command (docs/en/reports-and-gate.md)."""

    transcripts: Annotated[Transcripts, Keywords(description=(
        "run --transcripts PATH: the recorded conversations graded (PATH absolute, one sha256 over their files); "
        "grade reads them again"))]
    judge_review: Annotated[JudgeReview, Keywords(
        description="a judge's second opinion on a sample of rule verdicts (--judge-sample); never changes a verdict")]
    slas: list[Sla]
    baseline: Annotated[Baseline, ref("baseline")]


#: run.json's `$defs`, each generated from its type (`evalspec.results.schema`)
DEFS: dict[str, object] = {
    "attribution": AttributionName, "review_type": ReviewType, "baseline": BaselineDef, "paired": PairedDef,
    "interval": Interval, "pass_k": PassK, "status": StatusName, "evidence": Evidence, "assertion": Assertion,
    "message": Message, "record": Record, "verdict": RunVerdict, "curve": Curve,
}
