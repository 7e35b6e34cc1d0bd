"""JSON Schema errors in words a person who does not read JSON Schema understands.

`repeat: 0` is "repeat must be at least 1, got 0", not "0 is not of type 'object'": for an
`anyOf`/`oneOf`, the branch that takes the value's kind (a number, a text, a mapping...) explains
the problem; when no branch takes it, the kinds that would be valid are listed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import jsonschema

from evalspec.config.hints import elsewhere
from evalspec.core.suggest import did_you_mean

PathKey = tuple[str | int, ...]

_KINDS = {
    "integer": "a whole number", "number": "a number", "string": "a text", "boolean": "true/false",
    "array": "a list like [a, b]", "object": "a mapping like {key: value}", "null": "empty",
}


def schema_problems(err: jsonschema.ValidationError, context: str = "") -> Iterator[tuple[PathKey, str]]:
    """(absolute data path, message) for one schema error; several for a mapping with several unknown keys."""
    chosen = _explaining_error(err)
    if chosen.validator == "additionalProperties" and isinstance(chosen.instance, dict):
        known = _known_keys(chosen, err)
        where = f" in '{context}'" if context else ""
        valid = f"; valid here: {', '.join(known)}" if 0 < len(known) <= 8 else ""
        for key in chosen.instance:
            if key not in known:
                hint = elsewhere(str(key), tuple(chosen.absolute_path)) or did_you_mean(str(key), known)
                yield (*chosen.absolute_path, key), f"unknown key '{key}'{where}{hint or valid}"
        return
    yield tuple(chosen.absolute_path), _plain(chosen, context)


def _known_keys(chosen: jsonschema.ValidationError, outer: jsonschema.ValidationError) -> list[str]:
    """The keys a mapping may have here: of its schema, or of every mapping form an anyOf offers."""
    schemas: list[Any] = [chosen.schema]
    if chosen is not outer and outer.validator in ("anyOf", "oneOf") and isinstance(outer.validator_value, list):
        schemas.extend(outer.validator_value)
    keys: list[str] = []
    for schema in schemas:
        if isinstance(schema, dict):
            keys.extend(k for k in (schema.get("properties") or {}) if k not in keys)
    return keys


def _explaining_error(err: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For an anyOf/oneOf error, the error of the branch that takes the value's kind (recursively)."""
    if err.validator not in ("anyOf", "oneOf") or not err.context or _only_required(err.validator_value):
        return err
    branches: dict[int, list[jsonschema.ValidationError]] = {}
    for sub in err.context:
        branches.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    fitting = [errors for errors in branches.values() if not any(_wrong_kind(e, err) for e in errors)]
    if not fitting:
        return err  # a branch passed (oneOf: more than one), or no branch takes this kind: _plain lists the kinds
    best = max((e for errors in fitting for e in errors), key=jsonschema.exceptions.relevance)
    if best.validator == "pattern" and list(best.absolute_path) == list(err.absolute_path):
        return err  # e.g. a text where a number or a "{{ template }}" goes: list the kinds
    return _explaining_error(best)


def _only_required(branches: Any) -> bool:
    """`oneOf: [{required: [pattern]}, {required: [tool]}]`: a choice between keys."""
    return isinstance(branches, list) and all(isinstance(o, dict) and set(o) == {"required"} for o in branches)


def _wrong_kind(sub: jsonschema.ValidationError, parent: jsonschema.ValidationError) -> bool:
    """True when `sub` says the value is not even of the kind its branch takes."""
    if list(sub.absolute_path) != list(parent.absolute_path):
        return False
    if sub.validator == "type":
        return True
    if sub.validator in ("enum", "const"):
        options = cast(list[Any], sub.validator_value) if sub.validator == "enum" else [sub.validator_value]
        return not any(type(o) is type(sub.instance) for o in options)
    if sub.validator in ("anyOf", "oneOf") and sub.context:
        branches: dict[int, list[jsonschema.ValidationError]] = {}
        for inner in sub.context:
            branches.setdefault(int(inner.relative_schema_path[0]), []).append(inner)
        return all(any(_wrong_kind(e, sub) for e in errors) for errors in branches.values())
    return False


def _name(err: jsonschema.ValidationError, context: str) -> str:
    """`repeat.n`, `gate.min_pass_rate`, `each item of sla`: the data path after the last list index."""
    path = list(err.absolute_path)
    if path and isinstance(path[-1], int):
        parent = next((p for p in reversed(path) if isinstance(p, str)), None)
        return f"each item of {parent}" if parent else context or "each item"
    keys: list[str] = []
    for part in reversed(path):
        if isinstance(part, int):
            break
        keys.insert(0, str(part))
    return ".".join(keys) or context or "the value"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kinds(schema: Any) -> list[str]:
    """What a (sub)schema accepts, in words."""
    if not isinstance(schema, dict):
        return []
    if "enum" in schema:
        return ["one of " + ", ".join(str(v) for v in schema["enum"])]
    if schema.get("pattern") == r"\{\{":
        return ['a template like "{{ n }}"']
    kinds = schema.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    if kinds:
        words = [_KINDS.get(k, k) for k in kinds]
        if "minimum" in schema and "integer" in kinds:
            words[kinds.index("integer")] = f"a whole number from {schema['minimum']} up"
        return words
    out: list[str] = []
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            out.extend(_kinds(sub))
    if "$ref" in schema:
        out.append(_KINDS["object"])
    return out


def describe_kinds(schema: Any) -> str:
    """What a schema accepts, in words: "true/false", "a whole number from 1 up", ..."""
    return _either(_kinds(schema))


def _either(kinds: list[str]) -> str:
    if len(kinds) <= 1:
        return kinds[0] if kinds else "something else"
    return ", ".join(kinds[:-1]) + " or " + kinds[-1]


def _plain(err: jsonschema.ValidationError, context: str) -> str:
    name, got = _name(err, context), _show(err.instance)
    v, value = err.validator, cast(Any, err.validator_value)
    prefix = f"{context}: " if context and name != context else ""
    if v in ("anyOf", "oneOf"):
        if _only_required(value):
            keys = " or ".join(f"'{o['required'][0]}'" for o in value)
            return f"{prefix}{name} needs {keys} (exactly one)"
        if not err.context:
            return f"{prefix}{name} fits more than one form, got {got}"
        kinds = list(dict.fromkeys(k for sub in value for k in _kinds(sub)))
        return f"{prefix}{name} must be {_either(kinds)}, got {got}"
    if v == "type":
        return f"{prefix}{name} must be {_either(_kinds({'type': value}))}, got {got}"
    if v == "minimum":
        return f"{prefix}{name} must be at least {value}, got {got}"
    if v == "exclusiveMinimum":
        return f"{prefix}{name} must be more than {value}, got {got}"
    if v == "maximum":
        return f"{prefix}{name} must be at most {value}, got {got}"
    if v == "exclusiveMaximum":
        return f"{prefix}{name} must be less than {value}, got {got}"
    if v in ("minItems", "minProperties"):
        return f"{prefix}{name} needs at least {value} {'item' if v == 'minItems' else 'entry'}{'s' if value != 1 else ''}"
    if v == "minLength":
        return f"{prefix}{name} must not be empty"
    if v == "required":
        missing = [k for k in value if isinstance(err.instance, dict) and k not in err.instance]
        return f"{prefix}{name} needs '{missing[0] if missing else value[0]}'"
    if v == "enum":
        options = [str(o) for o in value]
        return f"{prefix}{name}: {got} is not one of {', '.join(options)}{did_you_mean(str(err.instance), options)}"
    if v == "pattern":
        return f"{prefix}{name}: {got} does not have the expected form"
    return f"{prefix}{err.message}"
