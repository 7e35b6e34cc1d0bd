"""Typed check parameters: a dataclass whose fields are an assertion's YAML parameters, and the JSON
Schema generated from it (as pydantic_evals does), so that schema and code cannot drift.

Every check, built-in or plugin, declares its parameters this way and reads them typed (`spec.params`).
How the YAML value maps onto the fields:
- by default the value is a mapping of the fields (`jmespath: {expr: ..., equals: ...}`);
- `value_field = "NAME"`: the value is that one field (`contains: 退款`, `memory-recall: {name: 张三}`);
- `short_field = "NAME"`: the value is the mapping, or just that field (`tool-called: search`);
  `short_first = False` lists the mapping first in the schema.
Fields marked `Option` are the type's own sibling keys (`fuzzy: false` beside `memory-recall:`);
`Option(in_value=True)` ones may be written either way (the value's wins). `Keywords(...)` adds JSON
Schema keywords (minimum, description, ...); `Key("not")` names a YAML key that is no Python name.
A field typed `X | None = None` is a key that may be left out; a field typed `Regex` is a regex
checked at load time, one typed `TurnRef` a turn number or label checked against the conversation.

The suite's own shape (`config.nodes`) is written the same way, as TypedDicts: a TypedDict is an object
with no other keys, its keys in declaration order, those marked `REQUIRED` required; `Ref("name")` is a
`$ref` to a shared definition and `Exactly(schema)` a schema written out where the type says less.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, is_typeddict


@dataclass(frozen=True, eq=False)  # hashed by identity: type hints that carry it must hash
class Keywords:
    """JSON Schema keywords added to a field's generated schema."""

    keywords: dict[str, object]

    def __init__(self, **keywords: Any) -> None:
        object.__setattr__(self, "keywords", keywords)


@dataclass(frozen=True)
class Option:
    """The field is a sibling key of the assertion, not part of its value."""

    in_value: bool = False


@dataclass(frozen=True)
class Key:
    """The field's YAML key, where it is not a Python name (`not`)."""

    name: str


@dataclass(frozen=True)
class Marker:
    name: str


@dataclass(frozen=True)
class Ref:
    """The key's schema is a `$ref` to the shared definition `name` (`#/$defs/NAME`)."""

    name: str


@dataclass(frozen=True, eq=False)
class Exactly:
    """The key's schema, written out where the Python type says less (one built by a registry)."""

    schema: JsonSchema


JsonSchema = dict[str, object]  # a JSON Schema (or a piece of one): JSON whose keywords are read where needed
REQUIRED = Marker("required")  # a TypedDict key the schema requires (the keys stay optional to the type checker)
REGEX = Marker("regex")
TURN_REF = Marker("turn reference")
Regex = Annotated[str, REGEX]
NormalizerName = Literal["nfkc", "digits", "casefold"]  # core.text.NORMALIZERS, in the order they apply
NORMALIZE_DOC = ("nfkc (full-width letters and digits to ASCII), digits (spaces, hyphens and dots between digits "
                 "removed), casefold; applied in that order whatever order they are written in")
NormalizeValue = NormalizerName | Annotated[list[NormalizerName], Keywords(minItems=1)]
# `normalize:` beside a text check (docs/en/suite-format.md#normalize); `options.normalize` is its default
Normalize = Annotated[NormalizeValue | None, Option(), Keywords(
    description=f"read the reply normalized (default: options.normalize): {NORMALIZE_DOC}")]
TurnRef = Annotated[int | str, TURN_REF, Keywords(description="a turn number (1-based) or a label")]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()  # the default of a key whose absence differs from any value (`jmespath`'s `equals`)

_SIMPLE: dict[object, JsonSchema] = {str: {"type": "string"}, int: {"type": "integer"},
                                      float: {"type": "number"}, bool: {"type": "boolean"},
                                      type(None): {"type": "null"}, Any: {},
                                      object: {}}


def _split(hint: Any) -> tuple[Any, list[Any]]:
    """Annotated[X, a, b] -> (X, [a, b]); anything else -> (hint, [])."""
    if typing.get_origin(hint) is Annotated:
        base, *meta = typing.get_args(hint)
        inner, more = _split(base)
        return inner, [*more, *meta]
    return hint, []


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType)


def type_schema(hint: Any) -> JsonSchema:
    """The JSON Schema of one type hint (str, int, float, bool, list[X], dict[str, X], unions, Literal,
    dataclasses, Annotated with Keywords)."""
    base, meta = _split(hint)
    written = any(isinstance(m, (Ref, Exactly)) for m in meta)
    out = {} if written else _base_schema(base)
    for m in meta:
        if isinstance(m, Ref):
            out = {"$ref": f"#/$defs/{m.name}"}
        elif isinstance(m, Exactly):
            out = dict(m.schema)
        elif isinstance(m, Keywords):
            out.update(m.keywords)
    return out


def _base_schema(hint: Any) -> JsonSchema:
    if hint in _SIMPLE:
        return dict(_SIMPLE[hint])
    if is_typeddict(hint):
        return typeddict_schema(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if _is_union(hint):
        return _union_schema(args)
    if origin in (list, tuple, set, frozenset):  # list[object]: any items, none written
        return {"type": "array", "items": type_schema(args[0])} if args and args[0] is not object else {"type": "array"}
    if origin in (dict, Mapping) or hint is dict:
        if not args or args[1] in (Any, object):
            return {"type": "object"}
        return {"type": "object", "additionalProperties": type_schema(args[1])}
    if hint is list:
        return {"type": "array"}
    if dataclasses.is_dataclass(hint):
        return params_schema(hint)
    raise TypeError(f"no JSON Schema for the type {hint!r}: use str, int, float, bool, list, dict, Literal")


def typeddict_properties(cls: Any) -> dict[str, JsonSchema]:
    """A TypedDict's keys and their schemas, in declaration order."""
    return {key: type_schema(hint) for key, hint in typing.get_type_hints(cls, include_extras=True).items()}


def typeddict_schema(cls: Any) -> JsonSchema:
    """A TypedDict -> an object schema with no other keys, the keys marked `REQUIRED` required."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out: JsonSchema = {"type": "object", "properties": typeddict_properties(cls), "additionalProperties": False}
    if required := [key for key, hint in hints.items() if REQUIRED in _split(hint)[1]]:
        out["required"] = required
    return out


def _union_schema(args: tuple[Any, ...]) -> JsonSchema:
    return union_of([type_schema(arg) for arg in args])


def union_of(members: list[JsonSchema]) -> JsonSchema:
    """The schema of a union of these member schemas: members that are plain `{"type": T}` merge into one
    `type` list; the others stay `anyOf` entries (also run.json's generated schema, `results.schema`)."""
    names: list[str] = []
    entries: list[JsonSchema] = []
    for schema in members:
        if set(schema) == {"type"} and isinstance(schema["type"], str):
            if not names:
                entries.append({"type": names})
            names.append(schema["type"])
        else:
            entries.append(schema)
    for entry in entries:
        if entry.get("type") is names and len(names) == 1:
            entry["type"] = names[0]
    return entries[0] if len(entries) == 1 else {"anyOf": entries}


def _optional(hint: Any) -> Any:
    """`X | None` -> X (a key that may be left out), keeping X's annotations."""
    base, meta = _split(hint)
    if _is_union(base):
        rest = [a for a in typing.get_args(base) if a is not type(None)]
        if len(rest) == 1:
            base = rest[0]
        elif len(rest) > 1:
            base = functools.reduce(operator.or_, rest)
    annotated = (base, *meta)
    return Annotated[annotated] if meta else base


def _meta(hint: Any, kind: type) -> Any:
    return next((m for m in _split(hint)[1] if isinstance(m, kind)), None)


@dataclass(frozen=True)
class ParamField:
    """One declared parameter: its Python name, YAML key, type hint and default."""

    name: str
    key: str
    hint: Any
    default: Any
    option: Option | None

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING

    def has(self, marker: Marker) -> bool:
        return marker in _split(self.hint)[1] or any(
            marker in _split(a)[1] for a in typing.get_args(_split(self.hint)[0]))

    def schema(self, whole: bool = False) -> JsonSchema:
        """The field's schema; as a key of a mapping (not `whole`), `X | None = None` may be left out, not null."""
        leave_out = not whole and (self.default is None or self.default is UNSET)
        schema = type_schema(_optional(self.hint) if leave_out else self.hint)
        if not whole and not self.required and self.default is not None and self.default is not UNSET:
            schema["default"] = self.default
        return schema


def param_fields(cls: Any) -> list[ParamField]:
    return list(_param_fields(cls))


@functools.cache
def _param_fields(cls: Any) -> tuple[ParamField, ...]:
    """Once per class: resolving the hints evaluates every annotation's text, and registering a type
    and loading each of its assertions read the fields several times (a default_factory runs once)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            dataclasses.MISSING if f.default_factory is dataclasses.MISSING else f.default_factory())
        key = _meta(hints[f.name], Key)
        description = f.metadata.get("description")
        hint = Annotated[hints[f.name], Keywords(description=description)] if description else hints[f.name]
        out.append(ParamField(f.name, key.name if key else f.name, hint, default, _meta(hints[f.name], Option)))
    return tuple(out)


def value_fields(cls: Any) -> list[ParamField]:
    return [f for f in param_fields(cls) if f.option is None or f.option.in_value]


def params_schema(cls: Any) -> JsonSchema:
    """A dataclass -> an object schema: fields without a default are required; no other keys."""
    fields = value_fields(cls)
    properties = {f.key: f.schema() for f in fields}
    out: JsonSchema = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [f.key for f in fields if f.required]
    if required:
        out["required"] = required
    out.update(getattr(cls, "schema_extra", {}))
    if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):
        out["description"] = cls.__doc__.strip().splitlines()[0]
    return out


def value_schema(cls: Any) -> JsonSchema:
    """The JSON Schema of the YAML value of a type whose parameters are `cls`."""
    fields = {f.name: f for f in param_fields(cls)}
    whole = getattr(cls, "value_field", None)
    if whole is not None:
        return fields[whole].schema(whole=True)
    short = getattr(cls, "short_field", None)
    if short is not None:
        forms = [fields[short].schema(), params_schema(cls)]
        return {"anyOf": forms if getattr(cls, "short_first", True) else forms[::-1]}
    return params_schema(cls)


def value_required(cls: Any) -> bool:
    whole = getattr(cls, "value_field", None)
    if whole is not None:
        return next(f for f in param_fields(cls) if f.name == whole).required
    kinds = value_schema(cls).get("type")
    return not (isinstance(kinds, list) and "null" in kinds)


def options_schema(cls: Any) -> dict[str, JsonSchema]:
    """The type's own sibling keys and their schemas."""
    return {f.key: f.schema() for f in param_fields(cls) if f.option is not None}


def marked_keys(cls: Any, marker: Marker) -> tuple[str, ...]:
    """The value keys whose fields carry `marker` ("" when the whole value is one)."""
    whole = getattr(cls, "value_field", None)
    return tuple("" if f.name == whole else f.key for f in value_fields(cls) if f.has(marker))


def make_params(cls: Any, value: Any, options: Mapping[str, object] | None = None) -> Any:
    """The dataclass instance for an assertion's (validated, rendered) value and options."""
    whole, short = getattr(cls, "value_field", None), getattr(cls, "short_field", None)
    fields = param_fields(cls)
    by_key = {f.key: f for f in fields}
    if whole is not None:
        given = {} if value is None and not by_key[whole].required and by_key[whole].default is not None \
            else {whole: value}
    elif short is not None and not isinstance(value, dict):
        given = {short: value}
    else:
        given = dict(value) if isinstance(value, dict) else {}
    for f in fields:
        if f.option is not None and options and f.key in options and (f.key not in given or not f.option.in_value):
            given[f.key] = options[f.key]
    kwargs = {by_key[k].name: _convert(by_key[k].hint, v) for k, v in given.items() if k in by_key}
    return cls(**kwargs)


def _convert(hint: Any, value: Any) -> Any:
    """Mappings become the nested parameter dataclasses their type names."""
    base, _ = _split(hint)
    if dataclasses.is_dataclass(base) and isinstance(base, type) and isinstance(value, dict):
        return make_params(base, value)
    origin, args = typing.get_origin(base), typing.get_args(base)
    if origin is list and args and isinstance(value, list):
        return [_convert(args[0], v) for v in value]
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return {k: _convert(args[1], v) for k, v in value.items()}
    if _is_union(base) and isinstance(value, dict):
        for arg in args:
            inner = _split(arg)[0]
            if dataclasses.is_dataclass(inner) or typing.get_origin(inner) is dict:
                return _convert(arg, value)
    if _is_union(base) and isinstance(value, list):
        for arg in args:
            if typing.get_origin(_split(arg)[0]) is list:
                return _convert(arg, value)
    return value
