"""The validated suite, as plain dataclasses. Raw YAML values are kept where templates still apply."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from evalspec.config.nodes import CheckpointNode, PassHatK
from evalspec.config.paths import LineMap, PathKey

# a provider's spec is the contract a provider kind's builder receives: it lives in extend (extend/kinds.py)
from evalspec.extend.kinds import ProviderSpec as ProviderSpec
from evalspec.extend.kinds import describe_history as describe_history
from evalspec.extend.kinds import is_stateful

Severity = Literal["critical", "major", "minor"]
# the one check decided across a test's records, not on one transcript (`play.compare`)
SELECT_BEST = "select-best"
PAIRWISE = "pairwise"


@dataclass
class AssertionSpec:
    """One assertion as written: `type` without the `not-` prefix, `negate` for it."""

    type: str
    negate: bool
    value: Any
    scope: Any = None  # None until defaults apply; then a str or {"turns": [...]}
    threshold: float | None = None
    weight: float = 1.0
    metric: str | None = None
    severity: Severity = "major"
    max_rate: float | None = None  # a critical rule gated on its breach rate's 95 % bound, not on any breach
    provider: Any = None
    options: dict[str, Any] = field(default_factory=dict)  # the check's options, read by the check
    where: PathKey = ()
    value_where: PathKey = ()
    turn: int | None = None  # set for assertions attached to a turn
    description: str | None = None  # what the rule is meant to catch (shown to a second-opinion judge)
    # {fail: [...], pass: [...]}: replies or transcripts the rule must reject / accept (docs/en/rule-self-tests.md)
    examples: Mapping[str, object] | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return ("not-" if self.negate else "") + self.type

    parsed: Any = field(default=None, init=False, repr=False, compare=False)  # `params`, once made

    @property
    def params(self) -> Any:
        """The value and options as the type's parameter dataclass (made once per value; a rendered copy
        makes its own); the value itself for a plugin type declared by a JSON Schema."""
        if self.parsed is None:
            from evalspec.extend.params import make_params
            from evalspec.extend.registry import resolve_type

            resolved = resolve_type(self.type)
            declared = resolved[0].params if resolved else None
            self.parsed = self.value if declared is None else make_params(declared, self.value, self.options)
        return self.parsed

    def __getstate__(self) -> dict[str, object]:
        """Pickled without `parsed` (a plugin's dataclass may not import where the spec is unpickled)."""
        return {**self.__dict__, "parsed": None}


@dataclass
class TurnSpec:
    """One entry of a scripted conversation."""

    kind: Literal["user", "filler", "assistant", "tool"]
    text: Any = None  # user / assistant / tool text (template)
    count: Any = None  # filler count (int or template)
    pool: list[str] | None = None
    label: str | None = None
    asserts: list[AssertionSpec] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    where: PathKey = ()
    message: dict[str, Any] | None = None  # a recorded entry's other fields: tool_calls, tool_call_id, name
    capture: str | None = None  # a user turn's `capture:` names, as the transcript shows them (docs/en/recorded-conversations.md)
    # docs/en/state.md: each capture's source: NAME -> ("reply", "") | ("regex", R) | ("state", PATH)
    captures: dict[str, tuple[str, str]] = field(default_factory=dict)
    click: Any = None  # `click: T` (template): a user turn that presses the previous reply's button T (docs/en/state.md)
    metadata: dict[str, Any] | None = None  # a user turn's `metadata:`, sent with it (`rasa:`, docs/en/state.md)
    no_reply_ok: bool = False  # a user turn's `no_reply: ok`: the bot may stay silent (an empty reply, no error)
    no_reply: str | None = None  # a recorded assistant entry that holds no reply: why (an error of its turn)


@dataclass
class RepeatSpec:
    n: int = 1
    rule: str | float = "all"  # all | majority | any | a fraction


class StopWhen(TypedDict, total=False):
    """One of `simulate.stop_when` (the schema lets one key through)."""

    user_says: str
    assistant_matches: str
    goal_met: bool


class MilestoneStep(TypedDict, total=False):
    """One of `simulate.milestones`: a goal (`goal`, `done_when`, `max_turns`) or a fixed `user:` turn."""

    goal: str
    done_when: dict[str, object]  # one of assistant_matches | state | judge
    max_turns: int
    user: str


@dataclass
class SimulateSpec:
    persona: str
    goal: str
    max_turns: int
    opening: str | None = None
    fixed: list[str] = field(default_factory=list)
    stop_when: list[StopWhen] = field(default_factory=list)
    model: Any = None
    python: str | None = None  # a scripted user: FILE.py:function called as fn(transcript, context) -> str | None
    instructions: str | None = None  # one text in place of persona + goal (docs/en/agents.md#instructions)
    max_chars: int = 600  # a longer simulator message is a simulator fault
    min_turns: int = 1  # goal_met and checkpoints are asked after this turn, not before
    milestones: list[MilestoneStep] = field(default_factory=list)  # {goal, done_when, max_turns} | {user}
    checkpoints: list[CheckpointNode] = field(default_factory=list)  # {after_turn | every, criteria, min_turns}
    preset: str | None = None  # `persona: {preset}`: already in `persona` (docs/en/agents.md#persona-presets)


def milestone_goals(milestones: Sequence[Mapping[str, object]]) -> list[str]:
    """The goals of `simulate.milestones`, in order (fixed `user:` turns left out): milestone k is the k-th."""
    return [str(m["goal"]) for m in milestones if isinstance(m, dict) and "goal" in m]


@dataclass
class AttackSpec:
    """An adversarial simulated user aimed at the test's own red lines (docs/en/attacks.md)."""

    goal: str
    strategy: str
    max_turns: int
    attempts: int = 1
    model: Any = None
    python: str | None = None


@dataclass
class TestSpec:
    id: str
    name: str
    index: int
    description: str = ""
    tags: list[str] = field(default_factory=list)
    draft: bool = False
    xfail: str | None = None
    vars: dict[str, Any] = field(default_factory=dict)
    providers: list[str] | None = None
    conversation: list[TurnSpec] = field(default_factory=list)
    simulate: SimulateSpec | None = None
    attack: AttackSpec | None = None
    asserts: list[AssertionSpec] = field(default_factory=list)
    threshold: float | None = None
    matrix: dict[str, list[Any]] = field(default_factory=dict)
    reduce: str | None = None  # min | mean: a matrix test's instances are one verdict (docs/en/recorded-conversations.md)
    until_turn: Any = None  # an int or a template: the conversation is played up to that user turn
    repeat: RepeatSpec = field(default_factory=RepeatSpec)
    curve: str | None = None  # the x variable
    chart: str | None = None  # curve tests sharing a chart are drawn on one chart
    curve_summary: str | None = None  # half_life | failure_point | stable_range
    sla: list[dict[str, float]] = field(default_factory=list)
    where: PathKey = ()
    # a recorded conversation (docs/en/recorded-conversations.md): graded as it happened, nothing is called. "inline" for a
    # `transcript:` test, "file" for one conversation of the suite's `transcripts:`
    recorded: str | None = None
    metadata: Mapping[str, object] = field(default_factory=dict)  # a recorded conversation's own
    covers: dict[str, list[str]] = field(default_factory=dict)  # `covers:` (docs/en/coverage.md): dimension -> values
    state: Mapping[str, object] | None = None  # `state:` (docs/en/state.md): put in the bot before turn 1
    tool_results: Mapping[str, object] | None = None  # this test's tool results, over its provider's (docs/en/state.md)
    world: Any = None  # `world:` as written (a mapping, or {file: TEMPLATE}): replaces the suite's (docs/en/world.md)
    dataset: str | None = None  # `dataset: FILE.jsonl|FILE.csv`: one instance per row (docs/en/suite-format.md#dataset)


@dataclass
class ToolSpec:
    """One of the suite's `tools:` (docs/en/world.md#the-world-and-the-tools): its definition, sent to model providers, and
    how evalspec answers a call of it: `python: FILE.py:fn` called as fn(args, world), or `returns:`."""

    name: str
    description: str = ""
    parameters: Mapping[str, object] = field(default_factory=lambda: {"type": "object", "properties": {}})
    python: str | None = None
    returns: Any = None
    where: PathKey = ()

    def definition(self) -> dict[str, Any]:
        """The OpenAI function tool a model receives."""
        function: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


@dataclass
class TranscriptsSpec:
    """`transcripts:`: recorded conversations (JSONL in OpenAI chat format, or CSV) graded by `defaults`."""

    path: str  # a file or a glob, relative to the suite
    sample: int | None = None
    seed: int = 0
    where: Mapping[str, object] = field(default_factory=dict)  # metadata equality filter
    asserts: list[AssertionSpec] = field(default_factory=list)  # `defaults.assert`, parsed once
    threshold: float | None = None
    tags: list[str] = field(default_factory=list)
    at: PathKey = ("transcripts",)


JURY_RULES = ("majority", "mean", "all", "any")


@dataclass
class JurySpec:
    """`judge:` as a list: every member is asked; `rule` and `quorum` decide (docs/en/judges.md#juries)."""

    members: list[ProviderSpec]
    rule: str = "majority"  # majority | mean | all | any
    quorum: int = 1


@dataclass
class Suite:
    path: Path
    sha256: str
    description: str = ""
    tags: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    providers: list[ProviderSpec] = field(default_factory=list)
    judge: ProviderSpec | None = None  # a jury's first member when `judge:` is a list
    jury: JurySpec | None = None
    simulator: ProviderSpec | None = None  # `simulators:`' first when they are given
    # `simulators:`: every simulated test is played with each (docs/en/agents.md#comparing-two-simulators)
    simulators: list[ProviderSpec] = field(default_factory=list)
    embedder: ProviderSpec | None = None
    min_pass_rate: float = 1.0
    max_errors: int = 0
    gate_mode: str = "pass_rate"  # pass_rate | regressions (docs/en/reports-and-gate.md#regressions-against-a-baseline)
    regressions: str = "each"  # each | paired: how a regressions gate decides (docs/en/statistics.md)
    alpha: float = 0.05  # the paired test's level
    min_pass_hat_k: PassHatK | None = None  # {k, min}: the suite's pass^k must reach min
    use_corrected: bool = False  # `gate.use_corrected`: the gate compares the pass rate corrected from the labels
    report_lang: str | None = None  # `report: {lang: zh}` (docs/en/reports-and-gate.md#language); None: chosen from the conversations
    options: dict[str, Any] = field(default_factory=dict)
    tests: list[TestSpec] = field(default_factory=list)
    transcripts: TranscriptsSpec | None = None
    labels: dict[str, str] = field(default_factory=dict)  # label -> pattern over user turns (recorded)
    coverage: dict[str, list[str]] = field(default_factory=dict)  # `coverage:` (docs/en/coverage.md): dimension -> values
    world: Any = None  # `world:` as written: the initial world of every test that gives none (docs/en/world.md)
    tools: list[ToolSpec] = field(default_factory=list)  # `tools:`: answered by evalspec (docs/en/world.md#the-world-and-the-tools)
    secrets: set[str] = field(default_factory=set)
    lines: LineMap | None = None

    def option(self, key: str) -> Any:
        return self.options.get(key, DEFAULT_OPTIONS[key])


DEFAULT_OPTIONS: dict[str, object] = {"concurrency": 8, "timeout": 60, "retries": 3, "cache": True, "seed": 0,
                                   "grade_timeout": 30, "max_retry_wait": 60, "max_reply_chars": 100_000,
                                   "normalize": None}


def describe_provider(config: Mapping[str, object]) -> str:
    """A redacted provider configuration (as in run.json) as one short line."""
    if "model" in config:
        parts = [str(config["model"]), f"history {config.get('context', 'full')}"]
        if isinstance(params := config.get("params"), Mapping) and params:
            parts.append(", ".join(f"{k}={v}" for k, v in params.items()))
        if config.get("system_sha256"):
            parts.append(f"system #{config['system_sha256']}")
        return " · ".join(parts)
    if "http" in config:
        http = config["http"]
        url = http.get("url") if isinstance(http, Mapping) else None
        return f"http {url}" + (" (stateful)" if is_stateful(config, "http") else "")
    if "rasa" in config and isinstance(rasa := config["rasa"], Mapping):
        return f"rasa {rasa.get('url')}"
    if "python" not in config:  # a plugin's kind: `redacted` writes its key right after the id
        kind = next((k for k in config if k != "id"), "?")
        return f"{kind} {config.get(kind)}"
    return f"python {config.get('python')}" + (f" · history {config['context']}" if config.get("context", "full") != "full" else "")
