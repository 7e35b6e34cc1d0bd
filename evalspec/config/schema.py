"""The suite JSON Schema, generated from code (the assertion registry included).

`suite_schema()` is what editors get (`schema/suite.schema.json`, `evalspec schema`);
`suite_schema(for_validation=True)` leaves assertions, turns and provider kinds to the
loader, whose messages are sharper than a JSON Schema's `oneOf` errors.
"""

from __future__ import annotations

from typing import Any

from evalspec.config.rule_examples import EXAMPLES_SCHEMA
from evalspec.extend.kinds import provider_kinds
from evalspec.extend.params import NORMALIZE_DOC, NormalizeValue, type_schema
from evalspec.extend.registry import COMMON_KEYS, REGISTRY, load_installed_plugins

SCHEMA_ID = "https://evalspec.dev/schema/suite.schema.json"

STRINGS = {"type": "array", "items": {"type": "string"}}
TEMPLATED_INT = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": r"\{\{"}]}
TURN_REF = {"type": ["integer", "string"]}


def _obj(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    out.update(extra)
    return out


def provider_schema(for_validation: bool, needs_id: bool = True) -> dict[str, Any]:
    """A provider mapping: its id, each registered kind's key and the keys the kinds read (from the
    kind registry), then the keys every provider has."""
    kinds = provider_kinds()
    props: dict[str, Any] = {"id": {"type": "string", "minLength": 1}, "label": {"type": "string"}}
    props.update({name: kind.schema for name, kind in kinds.items()})
    for kind in kinds.values():
        props.update({key: value for key, value in kind.keys.items() if key not in props})
    props.update({
        "max_concurrency": {"type": "integer", "minimum": 1},
        "rpm": {"type": "number", "exclusiveMinimum": 0},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "retries": {"type": "integer", "minimum": 0},
        **tool_properties(),
    })
    if not needs_id:  # a judge, simulator or embedder
        props["max_tokens"] = {"type": "integer", "minimum": 1,
                               "description": "cap on a judge's / simulated user's answer (default 512 / 256)"}
        props["batch"] = {"type": "boolean", "description": "a judge: one call per conversation for its "
                                                            "conversation-scope judged checks (default false)"}
    schema = _obj(props, ["id"] if needs_id else None)
    if not for_validation:
        schema["oneOf"] = [{"required": [name]} for name in kinds]
    return schema


def tool_properties() -> dict[str, Any]:
    """Provider keys for agents (SPEC §13)."""
    function = _obj({"name": {"type": "string", "minLength": 1}, "description": {"type": "string"},
                     "parameters": {"type": "object", "description": "the arguments' JSON Schema"},
                     "strict": {"type": "boolean"}}, ["name"])
    tool = _obj({"type": {"const": "function"}, "function": function}, ["function"])
    return {
        "tools": {"anyOf": [{"type": "array", "items": tool},
                            {"type": "string", "pattern": ":", "description": "FILE.py:NAME naming a list of tools"}],
                  "description": "OpenAI function tools the system may call"},
        "tool_results": {"type": "object", "description": "model providers: the result of each tool, by name",
                         "additionalProperties": {
                             "anyOf": [_obj({"python": {"type": "string", "pattern": ":"}}, ["python"]), {}],
                             "description": "a fixed value, a template over the call ({{ args.NAME }}), "
                                            "or {python: FILE.py:function} called as fn(args, context)"}},
        "max_tool_rounds": {"type": "integer", "minimum": 1,
                            "description": "model and python providers: tool rounds evalspec answers in one "
                                           "user turn (default 20); one more is an error"},
        "answer_tool_calls": {"type": "boolean",
                              "description": "model providers: false reports the model's tool calls as the "
                                             "turn's reply instead of answering them from tool_results "
                                             "(default true)"},
        "teardown": {"type": "string", "description": "FILE.py:function called as fn(context) after each conversation"},
        "setup": {"type": "string", "description": "FILE.py:function called as fn(context) before each conversation"},
    }


WORLD = {"type": "object", "description": "the world the bot acts on: a JSON object, or {file: PATH} (a template); "
                                          "each conversation starts from its own copy (docs/en/world.md)"}


def suite_tool_schema() -> dict[str, Any]:
    """One of the suite's `tools:` (docs/en/world.md#tools)."""
    return _obj({"name": {"type": "string", "minLength": 1}, "description": {"type": "string"},
                 "parameters": {"type": "object", "description": "the arguments' JSON Schema"},
                 "python": {"type": "string", "pattern": ":",
                            "description": "FILE.py:function called as fn(args, world); its return value is the "
                                           "result and it may change the world"},
                 "returns": {"description": "the result: a value, or a template over the call ({{ args.NAME }})"}},
                ["name"])


def assertion_schema(for_validation: bool) -> dict[str, Any]:
    if for_validation:
        return {"type": "object"}
    load_installed_plugins()
    common = {key: {"$ref": f"#/$defs/assertion_{key}"} for key in COMMON_KEYS if key not in ("type", "value")}
    names = sorted(REGISTRY)
    all_options: dict[str, Any] = {}
    for name in sorted(REGISTRY):
        all_options.update(REGISTRY[name].options)
    negatable = [n for n in names if not n.startswith("not-")]  # `not-tool-called` is a type of its own
    full = _obj({"type": {"enum": names + [f"not-{n}" for n in negatable]}, "value": {}, **common, **all_options},
                ["type"], title="full form")
    forms: list[dict[str, Any]] = [full]
    for name in names:
        t = REGISTRY[name]
        for written in (name, f"not-{name}") if name in negatable else (name,):
            forms.append(_obj({written: {"$ref": f"#/$defs/value_{name}"}, **common, **t.options}, [written],
                              title=written))
    return {"anyOf": forms}


def assertion_defs() -> dict[str, Any]:
    """Shared pieces of the assertion forms, referenced to keep the schema small."""
    load_installed_plugins()
    defs: dict[str, Any] = {
        "assertion_scope": {"anyOf": [
            {"enum": ["turn", "each_turn", "any_turn", "last_response", "conversation"]},
            _obj({"turns": {"anyOf": [TURN_REF, {"type": "array", "items": TURN_REF}]}}, ["turns"])]},
        "assertion_threshold": {"type": "number", "minimum": 0, "maximum": 1},
        "assertion_weight": {"type": "number", "minimum": 0},
        "assertion_metric": {"type": "string"},
        "assertion_severity": {"enum": ["critical", "major", "minor"]},
        "assertion_max_rate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                               "description": "with severity: critical, gate on the breach rate's 95 % upper "
                                              "bound (<= this) instead of on any breach"},
        "assertion_description": {"type": "string", "description": "what the rule is meant to catch"},
        "assertion_provider": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/provider_ref"}]},
        "assertion_examples": EXAMPLES_SCHEMA,
    }
    for name, t in sorted(REGISTRY.items()):
        value = dict(t.value_schema)
        value.setdefault("description", t.doc)
        defs[f"value_{name}"] = value
    return defs


CAPTURE_NAME = "^[A-Za-z_][A-Za-z0-9_]*$"


def fragment_schema() -> dict[str, Any]:
    """A file an `include:` turn splices (SPEC §24): its `conversation:` and the `vars:` it defaults."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **_obj({
        "description": {"type": "string"},
        "vars": {"type": "object"},
        "conversation": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/turn"}},
    }, ["conversation"]), "$defs": suite_schema(for_validation=True)["$defs"]}


NO_REPLY = {"const": "ok", "description": "the bot may stay silent on this turn (by design): no reply is then "
                                          "an empty reply that checks see as such, not an error"}


def turn_schema(for_validation: bool) -> dict[str, Any]:
    filler = {"anyOf": [TEMPLATED_INT, _obj({"count": TEMPLATED_INT, "pool": {**STRINGS, "minItems": 1}}, ["count"])]}
    schema = _obj({
        "user": {"type": "string"},
        "filler": filler,
        "assistant": {"type": "string"},
        "label": {"type": "string", "minLength": 1},
        "assert": {"type": "array", "items": {"$ref": "#/$defs/assertion"}},
        "vars": {"type": "object"},
        "metadata": {"type": "object", "description": "sent with this user turn (`rasa:` providers' REST channel)"},
        "click": {"type": "string", "minLength": 1,
                  "description": "a user turn that presses the previous reply's button with this title (else "
                                 "this payload) and sends its payload (SPEC §24)"},
        "no_reply": NO_REPLY,
        "include": {"type": "string", "minLength": 1,
                    "description": "FILE.yaml: splice the 'conversation:' of that file here (relative to this "
                                   "file; its 'vars:' are defaults the test's vars override)"},
        "capture": {"anyOf": [
            {"type": "string", "pattern": CAPTURE_NAME,
             "description": "store this turn's reply as the var NAME for the later turns and the test's "
                            "assertions ({{ NAME }})"},
            {"type": "object", "minProperties": 1, "propertyNames": {"pattern": CAPTURE_NAME},
             "additionalProperties": {"anyOf": [
                 {"const": "reply"},
                 _obj({"regex": {"type": "string", "minLength": 1}}, ["regex"]),
                 _obj({"state": {"type": "string", "minLength": 1}}, ["state"])]},
             "description": "NAME: reply | {regex: R} (its first group, else the whole match) | {state: PATH} "
                            "(JMESPath over the turn's state) (SPEC §24)"}]},
    })
    if not for_validation:
        schema["oneOf"] = [{"required": [k]} for k in ("user", "click", "filler", "assistant", "include")]
    return schema


def transcript_entry_schema(for_validation: bool) -> dict[str, Any]:
    """One entry of a recorded conversation held inline (`transcript:`, SPEC §19)."""
    schema = _obj({
        "user": {"type": "string"},
        "assistant": {"type": ["string", "null"],
                      "description": "the reply; null (no text) without tool_calls or parts is no reply: an "
                                     "error of its turn unless the user entry says no_reply: ok"},
        "tool": {"type": "string", "description": "a tool's result"},
        "label": {"type": "string", "minLength": 1},
        "no_reply": NO_REPLY,
        "assert": {"type": "array", "items": {"$ref": "#/$defs/assertion"},
                   "description": "checks on the assistant message that answers this user entry"},
        "tool_calls": {"type": "array", "items": {"type": "object"},
                       "description": "the assistant's tool calls (OpenAI format)"},
        "tool_call_id": {"type": "string"},
        "name": {"type": "string"},
        "state": {"type": "object", "description": "the bot's state after this reply (SPEC §24)"},
        "parts": {"type": "array", "items": {"type": "object"},
                  "description": "the reply's messages {text, buttons, image, custom}"},
        "finish_reason": {"type": "string", "minLength": 1,
                          "description": "why the model stopped: stop, length, content_filter, tool_calls "
                                         "(end_turn, max_tokens, tool_use ... are read as these)"},
    })
    if not for_validation:  # the loader names a missing or doubled kind itself
        schema["oneOf"] = [{"required": ["user"]}, {"required": ["assistant"]}, {"required": ["tool"]}]
    return schema


def transcripts_schema() -> dict[str, Any]:
    """`transcripts:`: recorded conversations graded by the suite's `defaults` (SPEC §19)."""
    return _obj({
        "path": {"type": "string", "minLength": 1,
                 "description": "a JSONL file (one OpenAI-format conversation a line) or a CSV "
                                "(conversation_id, turn, role, content), or a glob; relative to the suite"},
        "sample": {"type": "integer", "minimum": 1, "description": "a seeded random sample of this many"},
        "seed": {"type": "integer"},
        "where": {"type": "object", "description": "metadata equality filter"},
    }, ["path"])


def test_properties() -> dict[str, Any]:
    stop = {"anyOf": [_obj({"user_says": {"type": "string", "minLength": 1}}, ["user_says"]),
                      _obj({"assistant_matches": {"type": "string", "minLength": 1}}, ["assistant_matches"]),
                      _obj({"goal_met": {"type": "boolean"}}, ["goal_met"])]}
    return {
        "id": {"type": "string", "minLength": 1},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "tags": STRINGS,
        "draft": {"type": "boolean"},
        "xfail": {"type": ["string", "boolean"]},
        "vars": {"type": "object"},
        "providers": STRINGS,
        "conversation": {"type": "array", "items": {"$ref": "#/$defs/turn"}},
        "transcript": {"type": "array", "items": {"$ref": "#/$defs/transcript_entry"},
                       "description": "a recorded conversation, graded as it happened (nothing is called)"},
        "simulate": _obj({
            "persona": {"type": "string", "minLength": 1},
            "goal": {"type": "string", "minLength": 1},
            "opening": {"type": "string"},
            "fixed": STRINGS,
            "max_turns": {"type": "integer", "minimum": 1, "maximum": 50},
            "stop_when": {"type": "array", "items": stop},
            "model": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/provider_ref"}]},
            "python": {"type": "string", "description": "a scripted user: FILE.py:function called as "
                                                        "fn(transcript, context) -> next message, or None to stop"},
            "instructions": {"type": "string", "minLength": 1,
                             "description": "one text in place of persona + goal (tau-bench's form)"},
            "max_chars": {"type": "integer", "minimum": 1,
                          "description": "a longer simulator message is a simulator fault (default 600)"},
            "min_turns": {"type": "integer", "minimum": 1,
                          "description": "goal_met and checkpoints are first asked after this turn (default 1)"},
            "milestones": {"type": "array", "minItems": 1, "items": {"anyOf": [
                _obj({"goal": {"type": "string", "minLength": 1},
                      "done_when": _obj({"assistant_matches": {"type": "string", "minLength": 1},
                                         "state": {"type": "object"},
                                         "judge": {"type": "string", "minLength": 1}}, minProperties=1,
                                        maxProperties=1),
                      "max_turns": {"type": "integer", "minimum": 1, "maximum": 50}},
                     ["goal", "done_when", "max_turns"]),
                _obj({"user": {"type": "string", "minLength": 1}}, ["user"])]},
                "description": "in order: goals the user moves on from when met, and fixed user turns"},
            "checkpoints": {"type": "array", "items": _obj({
                "after_turn": {"type": "integer", "minimum": 1},
                "every": {"type": "integer", "minimum": 1},
                "criteria": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
                "min_turns": {"type": "integer", "minimum": 1},
            }, ["criteria"], oneOf=[{"required": ["after_turn"]}, {"required": ["every"]}]),
                "description": "judge criteria asked about the conversation so far at these turns"},
        }, ["max_turns"]),
        "attack": _obj({
            "goal": {"type": "string", "minLength": 1},
            "strategy": {"enum": ["crescendo", "persona", "goat", "mischievous"]},
            "max_turns": {"type": "integer", "minimum": 1, "maximum": 50},
            "attempts": {"type": "integer", "minimum": 1, "maximum": 100},
            "model": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/provider_ref"}]},
            "python": {"type": "string", "minLength": 3},
        }, ["max_turns"]),
        "assert": {"type": "array", "items": {"$ref": "#/$defs/assertion"}},
        "threshold": {"type": "number", "minimum": 0, "maximum": 1},
        "matrix": {"type": "object", "additionalProperties": {"type": "array", "minItems": 1}},
        "dataset": {"type": "string", "minLength": 1,
                    "description": "FILE.jsonl or FILE.csv (relative to the suite): one instance per row, the "
                                   "row's fields its vars; its id ID[row=N], or ID[VALUE] with an 'id' field"},
        "reduce": {"enum": ["min", "mean"], "description": "the matrix instances are one test, scored by the "
                                                            "minimum (or mean) of their scores"},
        "until_turn": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "minLength": 1}],
                       "description": "play the conversation up to this user turn (e.g. \"{{ turn }}\"): the "
                                      "turns before it are history, its golden reply is left out, and it is sent"},
        "repeat": {"anyOf": [{"type": "integer", "minimum": 1},
                             _obj({"n": {"type": "integer", "minimum": 1},
                                   "pass": {"anyOf": [{"enum": ["all", "majority", "any"]},
                                                      {"type": "number", "exclusiveMinimum": 0, "maximum": 1}]}},
                                  ["n"])]},
        "curve": {"anyOf": [
            {"type": "string", "description": "the matrix key the score is plotted against"},
            _obj({"x": {"type": "string", "description": "the matrix key the score is plotted against"},
                  "chart": {"type": "string", "description": "curve tests with the same chart are drawn together"},
                  "summary": {"enum": ["half_life", "failure_point", "stable_range"],
                              "description": "the term the curve is described by"}}, ["x"])]},
        "covers": {"type": "object", "additionalProperties": {"anyOf": [{"type": "string"}, {**STRINGS, "minItems": 1}]},
                   "description": "the values of the suite's 'coverage:' dimensions this test covers"},
        "state": {"type": "object", "description": "the bot's state before turn 1 (SPEC §24): `rasa:` providers get "
                                                   "its `slots` as slot events, others `context['state']` "
                                                   "and {{ state }}"},
        "tool_results": {"type": "object", "description": "this test's tool results, merged over its provider's"},
        "world": WORLD,
        "sla": {"type": "array", "items": _obj({"at": {"type": "number"}, "min_score": {"type": "number", "minimum": 0,
                                                                                       "maximum": 1}},
                                               ["at", "min_score"])},
    }


def suite_schema(for_validation: bool = False) -> dict[str, Any]:
    tests = test_properties()
    defaults = {k: v for k, v in tests.items() if k not in ("id", "name", "transcript", "dataset")}
    model_ref = {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/provider_ref"}]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "evalspec suite",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "description": {"type": "string"},
            "plugins": {"type": "array", "items": {"type": "string", "minLength": 1},
                        "description": "modules or FILE.py (relative to the suite) that register assertion "
                                       "types or provider kinds"},
            "tags": STRINGS,
            "vars": {"type": "object"},
            "providers": {"type": "array", "items": {"$ref": "#/$defs/provider"}, "minItems": 1},
            "targets": {"type": "array", "items": {"$ref": "#/$defs/provider"}, "minItems": 1},
            "judge": {"anyOf": [*model_ref["anyOf"], {"type": "array", "items": model_ref, "minItems": 2,
                                                       "description": "a jury: every member is asked"}]},
            "jury": _obj({"rule": {"enum": ["majority", "mean", "all", "any"],
                                   "description": "how the members' votes decide (default majority)"},
                          "quorum": {"type": "integer", "minimum": 1,
                                     "description": "answering members needed, else an error (default: a "
                                                    "majority of the members)"}}),
            "simulator": model_ref,
            "embedder": model_ref,
            "gate": _obj({"min_pass_rate": {"type": "number", "minimum": 0, "maximum": 1},
                          "max_errors": {"type": "integer", "minimum": 0},
                          "mode": {"enum": ["pass_rate", "regressions"]},
                          "regressions": {"enum": ["each", "paired"],
                                          "description": "against a baseline: every regressed test blocks "
                                                         "(each), or an exact paired test decides (paired)"},
                          "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                                    "description": "the paired test's level (default 0.05)"},
                          "min_pass_hat_k": _obj({"k": {"type": "integer", "minimum": 1},
                                                  "min": {"type": "number", "minimum": 0, "maximum": 1}},
                                                 ["k", "min"])}),
            "report": _obj({"lang": {"enum": ["zh", "en"],
                                     "description": "the language of every report of a run (default: Chinese when "
                                                    "most user turns are Chinese, else English)"}}),
            "options": _obj({"concurrency": {"type": "integer", "minimum": 1},
                             "timeout": {"type": "number", "exclusiveMinimum": 0},
                             "retries": {"type": "integer", "minimum": 0},
                             "cache": {"type": "boolean"},
                             "seed": {"type": "integer"},
                             "grade_timeout": {"type": "number", "exclusiveMinimum": 0},
                             "max_retry_wait": {"type": "number", "minimum": 0},
                             "max_reply_chars": {"type": "integer", "minimum": 1},
                             "normalize": {**type_schema(NormalizeValue), "description": (
                                 f"how every text check reads replies unless it says `normalize:` itself: "
                                 f"{NORMALIZE_DOC}")}}),
            "world": WORLD,
            "tools": {"type": "array", "items": suite_tool_schema(),
                      "description": "tools evalspec answers for every model: and python: provider "
                                     "(docs/en/world.md#tools)"},
            "defaults": _obj(defaults),
            "tests": {"type": "array", "items": {"$ref": "#/$defs/test"}},
            "transcripts": transcripts_schema(),
            "coverage": {"type": "object", "additionalProperties": {**STRINGS, "minItems": 1},
                         "description": "dimension: [values]: what the suite's tests must cover (evalspec coverage)"},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1},
                       "description": "label: pattern; the first user turn of a recorded conversation "
                                      "that matches gets the label"},
        },
        **({} if for_validation else {"anyOf": [{"required": ["tests"]}, {"required": ["transcripts"]}]}),
        "$defs": {
            "provider": provider_schema(for_validation),
            "provider_ref": provider_schema(for_validation, needs_id=False),
            "test": _obj(tests),
            "turn": turn_schema(for_validation),
            "transcript_entry": transcript_entry_schema(for_validation),
            "assertion": assertion_schema(for_validation),
            **({} if for_validation else assertion_defs()),
        },
    }


COMMON_ASSERTION_KEYS = COMMON_KEYS
