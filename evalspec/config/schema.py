"""The suite JSON Schema, generated from the suite's shape (`config.nodes`) and the registries of checks and
provider kinds.

`suite_schema()` is what editors get (`schema/suite.schema.json`, `evalspec schema`);
`suite_schema(for_validation=True)` leaves assertions, turns and provider kinds to the
loader, whose messages are sharper than a JSON Schema's `oneOf` errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalspec.config.nodes import (
    TEST_ONLY,
    AssertionKeys,
    FragmentNode,
    ProviderNode,
    ProviderRefNode,
    SuiteNode,
    TestNode,
    TranscriptEntryNode,
    TurnNode,
)
from evalspec.extend.kinds import provider_kinds
from evalspec.extend.params import JsonSchema, type_schema, typeddict_properties
from evalspec.extend.registry import COMMON_KEYS, REGISTRY, load_installed_plugins

SCHEMA_ID = "https://evalspec.dev/schema/suite.schema.json"


def _obj(properties: Mapping[str, object], required: list[str] | None = None, **extra: Any) -> JsonSchema:
    out: JsonSchema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    out.update(extra)
    return out


def provider_keys() -> set[str]:
    """Every key a provider mapping may hold: its own and each registered kind's."""
    kinds = provider_kinds()
    return {*ProviderNode.__annotations__, *kinds, *(key for kind in kinds.values() for key in kind.keys)}


def provider_schema(for_validation: bool, needs_id: bool = True) -> JsonSchema:
    """A provider mapping: its id, each registered kind's key and the keys the kinds read (from the
    kind registry), then the keys every provider has (`nodes.ProviderNode`)."""
    kinds = provider_kinds()
    own = typeddict_properties(ProviderNode if needs_id else ProviderRefNode)
    props = {key: own.pop(key) for key in ("id", "label")}
    props.update({name: kind.schema for name, kind in kinds.items()})
    for kind in kinds.values():
        props.update({key: value for key, value in kind.keys.items() if key not in props})
    props.update(own)
    schema = _obj(props, ["id"] if needs_id else None)
    if not for_validation:
        schema["oneOf"] = [{"required": [name]} for name in kinds]
    return schema


def assertion_schema(for_validation: bool) -> JsonSchema:
    if for_validation:
        return {"type": "object"}
    load_installed_plugins()
    common = {key: {"$ref": f"#/$defs/assertion_{key}"} for key in COMMON_KEYS if key not in ("type", "value")}
    names = sorted(REGISTRY)
    all_options: JsonSchema = {}
    for name in sorted(REGISTRY):
        all_options.update(REGISTRY[name].options)
    negatable = [n for n in names if not n.startswith("not-")]  # `not-tool-called` is a type of its own
    full = _obj({"type": {"enum": names + [f"not-{n}" for n in negatable]}, "value": {}, **common, **all_options},
                ["type"], title="full form")
    forms: list[JsonSchema] = [full]
    for name in names:
        t = REGISTRY[name]
        for written in (name, f"not-{name}") if name in negatable else (name,):
            forms.append(_obj({written: {"$ref": f"#/$defs/value_{name}"}, **common, **t.options}, [written],
                              title=written))
    return {"anyOf": forms}


def assertion_defs() -> JsonSchema:
    """Shared pieces of the assertion forms, referenced to keep the schema small."""
    load_installed_plugins()
    defs: JsonSchema = {f"assertion_{key}": schema for key, schema in typeddict_properties(AssertionKeys).items()}
    for name, t in sorted(REGISTRY.items()):
        value = dict(t.value_schema)
        value.setdefault("description", t.doc)
        defs[f"value_{name}"] = value
    return defs


def fragment_schema() -> JsonSchema:
    """A file an `include:` turn splices (docs/en/suite-format.md#tests-and-turns): its `conversation:` and the
    `vars:` it defaults."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **type_schema(FragmentNode),
            "$defs": suite_schema(for_validation=True)["$defs"]}


def turn_schema(for_validation: bool) -> JsonSchema:
    schema = type_schema(TurnNode)
    if not for_validation:
        schema["oneOf"] = [{"required": [k]} for k in ("user", "click", "filler", "assistant", "include")]
    return schema


def transcript_entry_schema(for_validation: bool) -> JsonSchema:
    """One entry of a recorded conversation held inline (`transcript:`, docs/en/recorded-conversations.md)."""
    schema = type_schema(TranscriptEntryNode)
    if not for_validation:  # the loader names a missing or doubled kind itself
        schema["oneOf"] = [{"required": ["user"]}, {"required": ["assistant"]}, {"required": ["tool"]}]
    return schema


def suite_schema(for_validation: bool = False) -> JsonSchema:
    test = typeddict_properties(TestNode)
    suite = typeddict_properties(SuiteNode)
    suite["defaults"] = _obj({k: v for k, v in test.items() if k not in TEST_ONLY})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "evalspec suite",
        "type": "object",
        "additionalProperties": False,
        "properties": suite,
        **({} if for_validation else {"anyOf": [{"required": ["tests"]}, {"required": ["transcripts"]}]}),
        "$defs": {
            "provider": provider_schema(for_validation),
            "provider_ref": provider_schema(for_validation, needs_id=False),
            "test": _obj(test),
            "turn": turn_schema(for_validation),
            "transcript_entry": transcript_entry_schema(for_validation),
            "assertion": assertion_schema(for_validation),
            **({} if for_validation else assertion_defs()),
        },
    }

