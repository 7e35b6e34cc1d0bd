"""run.json's JSON Schema, generated from its types (`evalspec.results.rundata`: `RunData` and the `$defs`
types), so that the types and the schema cannot drift. schema/run.schema.json (and its copy in the package)
is this schema written out; a test keeps them the same.

An annotation maps onto JSON Schema as the typed check parameters do (`extend.params`): str, int, float,
bool, None, Any, Literal, unions, list[X], dict[str, X] (or Mapping); a TypedDict is an object with its required keys;
`Keywords(...)` adds keywords, `Exactly(...)` (and `ref`) replaces the generated schema, `unchecked` leaves a
key out of `properties` (the schema requires it, if it is required, and does not check its value).
"""

from __future__ import annotations

import collections.abc
import typing
from typing import Annotated, Any, Literal, is_typeddict

from evalspec.extend.params import Keywords, union_of
from evalspec.results.rundata import DEFS, Exactly, RunData, Unchecked

__all__ = ["GENERATED", "run_schema", "typed_schema"]

GENERATED: dict[str, object] = DEFS  # run.json's $defs, each built from a type
_HEAD = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://evalspec.dev/schema/run.schema.json",
         "title": "evalspec run.json"}


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
    if hint is Any or hint is object:
        return {}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array"} if args[0] in (Any, object) else {"type": "array", "items": typed_schema(args[0])}
    if origin in (dict, collections.abc.Mapping):
        return {"type": "object"} if args[1] in (Any, object) else {"type": "object", "additionalProperties": typed_schema(args[1])}
    if origin in (typing.Union, __import__("types").UnionType):
        return union_of([typed_schema(arg) for arg in args])
    raise TypeError(f"no JSON Schema for the type {hint!r}")


def object_schema(cls: Any) -> dict[str, Any]:
    """A TypedDict's schema: its keys in declaration order, the required ones `required`."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out: dict[str, Any] = {"type": "object"}
    if required := [k for k in hints if k in cls.__required_keys__]:
        out["required"] = required
    if checked := {k: typed_schema(h) for k, h in hints.items() if not _unchecked(h)}:
        out["properties"] = checked
    return out


def _unchecked(hint: Any) -> bool:
    return typing.get_origin(hint) is Annotated and any(isinstance(m, Unchecked) for m in hint.__metadata__)


def run_schema() -> dict[str, Any]:
    """run.json's schema: `RunData`'s, with the `$defs` its keys refer to."""
    return {**_HEAD, **object_schema(RunData), "$defs": {name: typed_schema(hint) for name, hint in GENERATED.items()}}
