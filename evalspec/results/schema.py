"""run.json's JSON Schema: its `record` and `message` definitions generated from the `Record` and `Message`
types, so that the types and the schema cannot drift; the rest is the hand-written schema/run.schema.json.

An annotation maps onto JSON Schema as the typed check parameters do (`extend.params`): str, int, float,
bool, None, Any, Literal, unions, list[X], dict[str, X]; a TypedDict is an object with its required keys;
`Keywords(...)` adds keywords, `Exactly(...)` (and `ref`) replaces the generated schema.
"""

from __future__ import annotations

import json
import typing
from importlib import resources
from typing import Annotated, Any, Literal, is_typeddict

from evalspec.extend.params import Keywords, union_of
from evalspec.extend.transcript import Message
from evalspec.results.record import Exactly, Record

__all__ = ["GENERATED", "run_schema", "typed_schema"]

GENERATED: dict[str, Any] = {"message": Message, "record": Record}  # run.json's $defs built from a type


def typed_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of one annotation of a run.json type."""
    if typing.get_origin(hint) is Annotated:
        base, *meta = typing.get_args(hint)
        out = typed_schema(base)
        for m in meta:
            if isinstance(m, Exactly):
                out = dict(m.schema)
            elif isinstance(m, Keywords):
                out.update(m.keywords)
        return out
    if is_typeddict(hint):
        return object_schema(hint)
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    if hint in simple:
        return {"type": simple[hint]}
    if hint is Any:
        return {}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array"} if args[0] is Any else {"type": "array", "items": typed_schema(args[0])}
    if origin is dict:
        return {"type": "object"} if args[1] is Any else {"type": "object", "additionalProperties": typed_schema(args[1])}
    if origin in (typing.Union, __import__("types").UnionType):
        return union_of([typed_schema(arg) for arg in args])
    raise TypeError(f"no JSON Schema for the type {hint!r}")


def object_schema(cls: Any) -> dict[str, Any]:
    """A TypedDict's schema: its keys in declaration order, the required ones `required`."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out: dict[str, Any] = {"type": "object"}
    if required := [k for k in hints if k in cls.__required_keys__]:
        out["required"] = required
    out["properties"] = {k: typed_schema(h) for k, h in hints.items()}
    return out


def run_schema() -> dict[str, Any]:
    """run.json's schema: the hand-written one with the typed definitions generated."""
    schema: dict[str, Any] = json.loads(resources.files("evalspec").joinpath("data/run.schema.json").read_text("utf-8"))
    for name, cls in GENERATED.items():
        schema["$defs"][name] = object_schema(cls)
    return schema
