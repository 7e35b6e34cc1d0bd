"""The suite file's shape, written once: each mapping of the YAML as a TypedDict whose keys carry their JSON
Schema keywords. `config.schema` generates the suite schema from these (as `extend.params` does for a
check's parameters) and the parser reads the loaded YAML as these types (docs/en/suite-format.md).

Every key is optional to the type checker (a document is read, with its problems reported, before it is
known to be valid); `REQUIRED` marks the keys the schema requires. Assertions, provider kinds and the
forms of a turn come from their registries and the loader's own checks (`config.schema`).
"""

# No `from __future__ import annotations` here: the nodes' types are evaluated once, at import, instead of as
# strings compiled one by one (docs/en/scale-and-ray.md#start-up); a type used before its class is quoted.
from collections.abc import Mapping
from typing import Annotated, Literal, TypedDict

from evalspec.config.personas import PresetName
from evalspec.extend.params import NORMALIZE_DOC, REQUIRED, Exactly, JsonSchema, Keywords, NormalizeValue, Ref

Text = Annotated[str, Keywords(minLength=1)]
Strings = list[str]
Object = Mapping[str, object]  # a user's own mapping (vars, state, metadata): any keys, any values
Fraction = Annotated[float, Keywords(minimum=0, maximum=1)]
TurnCount = Annotated[int, Keywords(minimum=1, maximum=50)]
AtLeastOne = Annotated[int, Keywords(minimum=1)]
FileFunction = Annotated[str, Keywords(pattern=":")]
# `Keywords()` keeps a union one `anyOf` where it stands inside another union
TemplatedInt = Annotated[Annotated[int, Keywords(minimum=0)] | Annotated[str, Keywords(pattern=r"\{\{")],
                         Keywords()]
TurnRef = int | str
Assertion = Annotated[Object, Ref("assertion")]  # checked by `config.asserts`, against the check registry
Turn = Annotated["TurnNode", Ref("turn")]
ModelRef = str | Annotated["ProviderRefNode", Ref("provider_ref")]
World = Annotated[Object, Keywords(description="the world the bot acts on: a JSON object, or {file: PATH} (a "
                                               "template); each conversation starts from its own copy "
                                               "(docs/en/world.md)")]
NO_REPLY = Annotated[Literal["ok"], Keywords(description="the bot may stay silent on this turn (by design): no "
                                                         "reply is then an empty reply that checks see as such, "
                                                         "not an error")]
ToolParameters = Annotated[Object, Keywords(description="the arguments' JSON Schema")]


# -- providers ------------------------------------------------------------------------------------------------
class ToolFunction(TypedDict, total=False):
    name: Annotated[Text, REQUIRED]
    description: str
    parameters: ToolParameters
    strict: bool


class ToolNode(TypedDict, total=False):
    type: Literal["function"]
    function: Annotated[ToolFunction, REQUIRED]


class PythonResult(TypedDict, total=False):
    python: Annotated[FileFunction, REQUIRED]


class ProviderNode(TypedDict, total=False):
    """A provider mapping; its kind's key (`python:`, `model:`, ...) and the keys the kinds read come from
    the kind registry (`config.schema.provider_schema`)."""

    id: Text
    label: str
    max_concurrency: AtLeastOne
    rpm: Annotated[float, Keywords(exclusiveMinimum=0)]
    timeout: Annotated[float, Keywords(exclusiveMinimum=0)]
    retries: Annotated[int, Keywords(minimum=0)]
    # provider keys for agents (docs/en/agents.md)
    tools: Annotated[list[ToolNode] | Annotated[str, Keywords(pattern=":", description="FILE.py:NAME naming " "a list of tools")],
                     Keywords(description="OpenAI function tools the system may call")]
    tool_results: Annotated[dict[str, Annotated[PythonResult | object, Keywords(
        description="a fixed value, a template over the call ({{ args.NAME }}), or {python: FILE.py:function} "
                    "called as fn(args, context)")]],
        Keywords(description="model providers: the result of each tool, by name")]
    max_tool_rounds: Annotated[int, Keywords(minimum=1, description="model and python providers: tool rounds "
                                                                    "evalspec answers in one user turn (default "
                                                                    "20); one more is an error")]
    answer_tool_calls: Annotated[bool, Keywords(description="model providers: false reports the model's tool "
                                                            "calls as the turn's reply instead of answering them "
                                                            "from tool_results (default true)")]
    teardown: Annotated[str, Keywords(description="FILE.py:function called as fn(context) after each conversation")]
    setup: Annotated[str, Keywords(description="FILE.py:function called as fn(context) before each conversation")]


class ProviderRefNode(ProviderNode, total=False):
    """A judge, simulator or embedder: a provider without a required id, with its answer's limits."""

    max_tokens: Annotated[int, Keywords(minimum=1, description="cap on a judge's / simulated user's answer "
                                                               "(default 512 / 256)")]
    batch: Annotated[bool, Keywords(description="a judge: one call per conversation for its conversation-scope "
                                                "judged checks (default false)")]


# -- an assertion's `examples:` (docs/en/rule-self-tests.md), checked by `config.rule_examples` ---------
_TOOL_CALL = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1},
                                               "arguments": {"type": "object"}},
              "required": ["name"], "additionalProperties": False}
_BUTTON = {"type": "object", "properties": {"title": {"type": ["string", "number"]}, "payload": {}},
           "additionalProperties": False}
_PART = {"type": "object", "additionalProperties": False, "properties": {
    "text": {"type": ["string", "null"]}, "buttons": {"type": "array", "items": _BUTTON}, "image": {}, "custom": {}}}
# what the bot reported with a reply (docs/en/state.md): its state after the turn, and the turn's messages;
# and why the model stopped (`finish-reason`)
_BOT_STATE = {"state": {"type": "object", "description": "the bot's state after the turn"},
              "parts": {"type": "array", "items": _PART,
                        "description": "the turn's messages, each {text, buttons: [{title, payload}], image, custom}"},
              "finish_reason": {"type": "string", "minLength": 1,
                                "description": "why the model stopped (stop, length, content_filter, tool_calls)"}}
REPORTED_KEYS = tuple(_BOT_STATE)
_ENTRY = {"anyOf": [
    {"type": "object", "properties": {"user": {"type": "string"}, "label": {"type": "string", "minLength": 1}},
     "required": ["user"], "additionalProperties": False},
    {"type": "object", "properties": {"assistant": {"type": "string"},
                                      "tool_calls": {"type": "array", "items": _TOOL_CALL}, **_BOT_STATE},
     "required": ["assistant"], "additionalProperties": False}]}
_EXAMPLE = {"anyOf": [{"type": ["string", "number"], "description": "a reply"},
                      {"type": "object", "properties": {"reply": {"type": ["string", "number"]}, **_BOT_STATE},
                       "minProperties": 1, "additionalProperties": False,
                       "description": "a reply with the bot's state and parts: {reply, state, parts, finish_reason}"},
                      {"type": "array", "items": _ENTRY, "minItems": 1,
                       "description": "a transcript: {user:, label:} and {assistant:, tool_calls:, state:, parts:, "
                                      "finish_reason:} entries"}]}
#: the `examples:` key of every assertion (the suite schema's `assertion_examples`)
EXAMPLES_SCHEMA: JsonSchema = {
    "type": "object", "minProperties": 1, "additionalProperties": False,
    "description": "replies (or transcripts) this rule must reject (fail) and accept (pass), checked by validate",
    "properties": {"fail": {"type": "array", "items": _EXAMPLE}, "pass": {"type": "array", "items": _EXAMPLE}},
}


# -- assertions: the keys every check has (the check's own value and options come from its registration) ------
class AssertionKeys(TypedDict, total=False):
    scope: 'Literal["turn", "each_turn", "any_turn", "last_response", "conversation"] | TurnsScope'
    threshold: Fraction
    weight: Annotated[float, Keywords(minimum=0)]
    metric: str
    severity: Literal["critical", "major", "minor"]
    max_rate: Annotated[float, Keywords(exclusiveMinimum=0, exclusiveMaximum=1,
                                        description="with severity: critical, gate on the breach rate's 95 % upper "
                                                    "bound (<= this) instead of on any breach")]
    description: Annotated[str, Keywords(description="what the rule is meant to catch")]
    provider: str | Annotated[ProviderRefNode, Ref("provider_ref")]
    examples: Annotated[Object, Exactly(EXAMPLES_SCHEMA)]


class TurnsScope(TypedDict, total=False):
    turns: Annotated[TurnRef | list[TurnRef], REQUIRED]


# -- conversations --------------------------------------------------------------------------------------------
CAPTURE_NAME = "^[A-Za-z_][A-Za-z0-9_]*$"


class FillerNode(TypedDict, total=False):
    count: Annotated[TemplatedInt, REQUIRED]
    pool: Annotated[Strings, Keywords(minItems=1)]


class RegexCapture(TypedDict, total=False):
    regex: Annotated[Text, REQUIRED]


class StateCapture(TypedDict, total=False):
    state: Annotated[Text, REQUIRED]


# "assert" is a Python keyword: these are written in TypedDict's call form
TurnNode = TypedDict("TurnNode", {  # one entry of a scripted conversation: one of user, click, filler, assistant, include
    "user": str,
    "filler": TemplatedInt | FillerNode,
    "assistant": str,
    "label": Text,
    "assert": list[Assertion],
    "vars": Object,
    "metadata": Annotated[Object, Keywords(description="sent with this user turn (`rasa:` providers' REST channel)")],
    "click": Annotated[Text, Keywords(description="a user turn that presses the previous reply's button with this "
                                                  "title (else this payload) and sends its payload (docs/en/state.md)")],
    "no_reply": NO_REPLY,
    "include": Annotated[Text, Keywords(description="FILE.yaml: splice the 'conversation:' of that file here "
                                                    "(relative to this file; its 'vars:' are defaults the test's "
                                                    "vars override)")],
    "capture": Annotated[str, Keywords(pattern=CAPTURE_NAME, description="store this turn's reply as the var NAME for the " "later turns and the test's assertions ({{ NAME }})")] | Annotated[dict[str, Literal["reply"] | RegexCapture | StateCapture], Keywords(minProperties=1, propertyNames={"pattern": CAPTURE_NAME}, description="NAME: reply | {regex: R} (its first group, else the whole match) | {state: PATH} " "(JMESPath over the turn's state) (docs/en/state.md)")],
}, total=False)

# one entry of a recorded conversation held inline (`transcript:`, docs/en/recorded-conversations.md)
TranscriptEntryNode = TypedDict("TranscriptEntryNode", {
    "user": str,
    "assistant": Annotated[str | None, Keywords(
        description="the reply; null (no text) without tool_calls or parts is no reply: an error of its turn "
                    "unless the user entry says no_reply: ok")],
    "tool": Annotated[str, Keywords(description="a tool's result")],
    "label": Text,
    "no_reply": NO_REPLY,
    "assert": Annotated[list[Assertion], Keywords(
        description="checks on the assistant message that answers this user entry")],
    "tool_calls": Annotated[list[Object], Keywords(description="the assistant's tool calls (OpenAI format)")],
    "tool_call_id": str,
    "name": str,
    "state": Annotated[Object, Keywords(description="the bot's state after this reply (docs/en/state.md)")],
    "parts": Annotated[list[Object], Keywords(description="the reply's messages {text, buttons, image, custom}")],
    "finish_reason": Annotated[Text, Keywords(description="why the model stopped: stop, length, content_filter, "
                                                          "tool_calls (end_turn, max_tokens, tool_use ... are read "
                                                          "as these)")],
}, total=False)


class FragmentNode(TypedDict, total=False):
    """A file an `include:` turn splices (docs/en/suite-format.md#tests-and-turns)."""

    description: str
    vars: Object
    conversation: Annotated[list[Turn], Keywords(minItems=1), REQUIRED]


# -- simulated users and attackers ----------------------------------------------------------------------------
class UserSays(TypedDict, total=False):
    user_says: Annotated[Text, REQUIRED]


class AssistantMatches(TypedDict, total=False):
    assistant_matches: Annotated[Text, REQUIRED]


class GoalMet(TypedDict, total=False):
    goal_met: Annotated[bool, REQUIRED]


class DoneWhen(TypedDict, total=False):
    assistant_matches: Text
    state: Object
    judge: Text


class MilestoneNode(TypedDict, total=False):
    goal: Annotated[Text, REQUIRED]
    done_when: Annotated[DoneWhen, Keywords(minProperties=1, maxProperties=1), REQUIRED]
    max_turns: Annotated[TurnCount, REQUIRED]


class FixedUserTurn(TypedDict, total=False):
    user: Annotated[Text, REQUIRED]


class CheckpointNode(TypedDict, total=False):
    after_turn: AtLeastOne
    every: AtLeastOne
    criteria: Annotated[list[Text], Keywords(minItems=1), REQUIRED]
    min_turns: AtLeastOne


class PersonaNode(TypedDict, total=False):
    """`persona:` as a preset (docs/en/agents.md#persona-presets), with text of its own or without."""

    preset: Annotated[PresetName, REQUIRED, Keywords(description="a tested description of this kind of user, "
                                                                "in the suite's language")]
    text: Text


class SimulateNode(TypedDict, total=False):
    persona: Text | PersonaNode
    goal: Text
    opening: str
    fixed: Strings
    max_turns: Annotated[TurnCount, REQUIRED]
    stop_when: list[UserSays | AssistantMatches | GoalMet]
    model: ModelRef
    python: Annotated[str, Keywords(description="a scripted user: FILE.py:function called as fn(transcript, "
                                                "context) -> next message, or None to stop")]
    instructions: Annotated[Text, Keywords(description="one text in place of persona + goal (tau-bench's form)")]
    max_chars: Annotated[int, Keywords(minimum=1, description="a longer simulator message is a simulator fault "
                                                              "(default 600)")]
    min_turns: Annotated[int, Keywords(minimum=1, description="goal_met and checkpoints are first asked after this "
                                                              "turn (default 1)")]
    milestones: Annotated[list[MilestoneNode | FixedUserTurn], Keywords(
        minItems=1, description="in order: goals the user moves on from when met, and fixed user turns")]
    checkpoints: Annotated[list[Annotated[CheckpointNode, Keywords(oneOf=[{"required": ["after_turn"]},
                                                                          {"required": ["every"]}])]],
                           Keywords(description="judge criteria asked about the conversation so far at these turns")]


class AttackNode(TypedDict, total=False):
    goal: Text
    strategy: Literal["crescendo", "persona", "goat", "mischievous"]
    max_turns: Annotated[TurnCount, REQUIRED]
    attempts: Annotated[int, Keywords(minimum=1, maximum=100)]
    model: ModelRef
    python: Annotated[str, Keywords(minLength=3)]


# -- tests ----------------------------------------------------------------------------------------------------
RepeatNode = TypedDict("RepeatNode", {
    "n": Annotated[AtLeastOne, REQUIRED],
    "pass": Literal["all", "majority", "any"] | Annotated[float, Keywords(exclusiveMinimum=0, maximum=1)],
}, total=False)

CurveX = Annotated[str, Keywords(description="the matrix key the score is plotted against")]


class CurveNode(TypedDict, total=False):
    x: Annotated[CurveX, REQUIRED]
    chart: Annotated[str, Keywords(description="curve tests with the same chart are drawn together")]
    summary: Annotated[Literal["half_life", "failure_point", "stable_range"],
                       Keywords(description="the term the curve is described by")]


class SlaPoint(TypedDict, total=False):
    at: Annotated[float, REQUIRED]
    min_score: Annotated[Fraction, REQUIRED]


TestNode = TypedDict("TestNode", {
    "id": Text,
    "name": str,
    "description": str,
    "tags": Strings,
    "draft": bool,
    "xfail": str | bool,
    "vars": Object,
    "providers": Strings,
    "conversation": list[Turn],
    "transcript": Annotated[list[Annotated[TranscriptEntryNode, Ref("transcript_entry")]], Keywords(
        description="a recorded conversation, graded as it happened (nothing is called)")],
    "simulate": SimulateNode,
    "attack": AttackNode,
    "assert": list[Assertion],
    "threshold": Fraction,
    "matrix": dict[str, Annotated[list[object], Keywords(minItems=1)]],
    "dataset": Annotated[Text, Keywords(
        description="FILE.jsonl or FILE.csv (relative to the suite): one instance per row, the row's fields its "
                    "vars; its id ID[row=N], or ID[VALUE] with an 'id' field")],
    "reduce": Annotated[Literal["min", "mean"], Keywords(
        description="the matrix instances are one test, scored by the minimum (or mean) of their scores")],
    "until_turn": Annotated[AtLeastOne | Text, Keywords(
        description="play the conversation up to this user turn (e.g. \"{{ turn }}\"): the turns before it are "
                    "history, its golden reply is left out, and it is sent")],
    "repeat": AtLeastOne | RepeatNode,
    "curve": CurveX | CurveNode,
    "covers": Annotated[dict[str, str | Annotated[Strings, Keywords(minItems=1)]], Keywords(
        description="the values of the suite's 'coverage:' dimensions this test covers")],
    "state": Annotated[Object, Keywords(description="the bot's state before turn 1 (docs/en/state.md): `rasa:` providers "
                                                    "get its `slots` as slot events, others `context['state']` "
                                                    "and {{ state }}")],
    "tool_results": Annotated[Object, Keywords(description="this test's tool results, merged over its provider's")],
    "world": World,
    "sla": list[SlaPoint],
}, total=False)
TEST_ONLY = ("id", "name", "transcript", "dataset")  # the keys of a test that `defaults:` cannot give


# -- the suite ------------------------------------------------------------------------------------------------
class JuryNode(TypedDict, total=False):
    rule: Annotated[Literal["majority", "mean", "all", "any"],
                    Keywords(description="how the members' votes decide (default majority)")]
    quorum: Annotated[int, Keywords(minimum=1, description="answering members needed, else an error (default: a "
                                                           "majority of the members)")]


class PassHatK(TypedDict, total=False):
    k: Annotated[AtLeastOne, REQUIRED]
    min: Annotated[Fraction, REQUIRED]


class GateNode(TypedDict, total=False):
    min_pass_rate: Fraction
    max_errors: Annotated[int, Keywords(minimum=0)]
    mode: Literal["pass_rate", "regressions"]
    regressions: Annotated[Literal["each", "paired"], Keywords(
        description="against a baseline: every regressed test blocks (each), or an exact paired test decides "
                    "(paired)")]
    alpha: Annotated[float, Keywords(exclusiveMinimum=0, exclusiveMaximum=1,
                                     description="the paired test's level (default 0.05)")]
    min_pass_hat_k: PassHatK
    use_corrected: Annotated[bool, Keywords(
        description="compare the pass rate corrected for the judge's errors on the labels of the suite's judged "
                    "rules (20+ labels; docs: reports-and-gate, corrected pass rate)")]


class ReportNode(TypedDict, total=False):
    lang: Annotated[Literal["zh", "en"], Keywords(description="the language of every report of a run (default: "
                                                              "Chinese when most user turns are Chinese, else "
                                                              "English)")]


class OptionsNode(TypedDict, total=False):
    concurrency: AtLeastOne
    timeout: Annotated[float, Keywords(exclusiveMinimum=0)]
    retries: Annotated[int, Keywords(minimum=0)]
    cache: bool
    seed: int
    grade_timeout: Annotated[float, Keywords(exclusiveMinimum=0)]
    max_retry_wait: Annotated[float, Keywords(minimum=0)]
    max_reply_chars: AtLeastOne
    normalize: Annotated[NormalizeValue, Keywords(description=f"how every text check reads replies unless it says "
                                                              f"`normalize:` itself: {NORMALIZE_DOC}")]


class SuiteToolNode(TypedDict, total=False):
    """One of the suite's `tools:` (docs/en/world.md#the-world-and-the-tools)."""

    name: Annotated[Text, REQUIRED]
    description: str
    parameters: ToolParameters
    python: Annotated[FileFunction, Keywords(description="FILE.py:function called as fn(args, world); its return "
                                                         "value is the result and it may change the world")]
    returns: Annotated[object, Keywords(description="the result: a value, or a template over the call "
                                                    "({{ args.NAME }})")]


class TranscriptsNode(TypedDict, total=False):
    """`transcripts:`: recorded conversations graded by the suite's `defaults` (docs/en/recorded-conversations.md)."""

    path: Annotated[Text, Keywords(description="a JSONL file (one OpenAI-format conversation a line) or a CSV "
                                               "(conversation_id, turn, role, content), or a glob; relative to "
                                               "the suite"), REQUIRED]
    sample: Annotated[int, Keywords(minimum=1, description="a seeded random sample of this many")]
    seed: int
    where: Annotated[Object, Keywords(description="metadata equality filter")]


Providers = Annotated[list[Annotated[ProviderNode, Ref("provider")]], Keywords(minItems=1)]


class SuiteNode(TypedDict, total=False):
    """A suite file."""

    description: str
    plugins: Annotated[list[Text], Keywords(description="modules or FILE.py (relative to the suite) that register "
                                                        "assertion types or provider kinds")]
    tags: Strings
    vars: Object
    providers: Providers
    targets: Providers
    judge: str | Annotated[ProviderRefNode, Ref("provider_ref")] | Annotated[list[ModelRef], Keywords(minItems=2, description="a jury: every member is asked")]
    jury: JuryNode
    simulator: ModelRef
    simulators: Annotated[list[ModelRef], Keywords(minItems=1, description=(
        "every simulated test is played with each (in place of simulator:; docs/en/agents.md"
        "#comparing-two-simulators)"))]
    embedder: ModelRef
    gate: GateNode
    report: ReportNode
    options: OptionsNode
    world: World
    tools: Annotated[list[SuiteToolNode], Keywords(description="tools evalspec answers for every model: and "
                                                               "python: provider (docs/en/world.md#the-world-and-the-tools)")]
    defaults: TestNode  # the test keys but TEST_ONLY
    tests: list[Annotated[TestNode, Ref("test")]]
    transcripts: TranscriptsNode
    coverage: Annotated[dict[str, Annotated[Strings, Keywords(minItems=1)]], Keywords(
        description="dimension: [values]: what the suite's tests must cover (evalspec coverage)")]
    labels: Annotated[dict[str, Text], Keywords(description="label: pattern; the first user turn of a recorded "
                                                            "conversation that matches gets the label")]
