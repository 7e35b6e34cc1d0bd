"""Typed check parameters: a dataclass whose fields are an assertion's YAML parameters, and the JSON
Schema generated from it (as pydantic_evals does), so that schema and code cannot drift."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, Union

_SIMPLE: dict[Any, dict[str, Any]] = {str: {"type": "string"}, int: {"type": "integer"},
                                      float: {"type": "number"}, bool: {"type": "boolean"},
                                      type(None): {"type": "null"}, Any: {}}


def type_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of one type hint (str, int, float, bool, list[X], dict[str, X], X | None, Literal)."""
    if hint in _SIMPLE:
        return dict(_SIMPLE[hint])
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        return {"anyOf": [type_schema(a) for a in args]}
    if origin in (list, tuple, set, frozenset):
        return {"type": "array", "items": type_schema(args[0])} if args else {"type": "array"}
    if origin is dict or hint is dict:
        return {"type": "object", "additionalProperties": type_schema(args[1])} if args else {"type": "object"}
    if hint is list:
        return {"type": "array"}
    if dataclasses.is_dataclass(hint):
        return params_schema(hint)
    raise TypeError(f"no JSON Schema for the type {hint!r}: use str, int, float, bool, list, dict, Literal")


def params_schema(cls: Any) -> dict[str, Any]:
    """A dataclass -> an object schema: fields without a default are required; no other keys."""
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        schema = type_schema(hints[f.name])
        if f.metadata.get("description"):
            schema["description"] = f.metadata["description"]
        if f.default is not dataclasses.MISSING:
            schema["default"] = f.default
        elif f.default_factory is dataclasses.MISSING:
            required.append(f.name)
        properties[f.name] = schema
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):
        out["description"] = cls.__doc__.strip().splitlines()[0]
    return out


def make_params(cls: Any, value: Any) -> Any:
    """The dataclass instance for an assertion's (validated, rendered) value."""
    return cls(**value) if isinstance(value, dict) else cls()
