"""The shape of a run.json (results/runjson.py reads it): the schema's types and required keys, down to
each message and verdict, so that no command indexes into a value that is not there. `shape` walks the
schema and names the first problem; `shaped` answers whether there is one by the walk compiled to Python
once per schema and depth, which a large run's records are each asked of (docs/en/scale-and-ray.md#memory)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

from evalspec.config.paths import format_path

SHAPE_DEPTH = 5  # run → results → record → its transcript and assertions → their fields (metadata is not read)


def run_shape_problem(data: Any) -> str | None:
    """The first way `data` is not shaped like a run.json (where, and what), or None. The schema's types and
    required keys down to each message and verdict, so that no command indexes into a value that is not there;
    its ranges and patterns only under `check` (a whole-schema validation costs a second per 2,000 records)."""
    if (problem := top_problem(data)) is not None:
        return problem
    schema = shape_schema()
    return shape(data, schema, schema["$defs"], (), SHAPE_DEPTH)


def top_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return f"the top level is {_kind(data)}, not a JSON object"
    if not isinstance(data.get("results"), list):
        return "it has no 'results' list" if "results" not in data else f"'results' is {_kind(data['results'])}, not a list"
    return None


@functools.cache
def shape_schema() -> Mapping[str, Any]:
    from evalspec.results.schema import run_schema

    return run_schema()


_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "object": dict, "array": list, "boolean": bool,
                                              "null": type(None), "number": (int, float), "integer": int}


def _is(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES.get(name, object))


def shape(value: Any, schema: Mapping[str, Any], defs: Mapping[str, Any], at: tuple[str | int, ...],
           depth: int, compiled: bool = True) -> str | None:
    """The first way `value` is not shaped as `schema` says, down to `depth`, or None. `compiled`: each
    item of a list (a record, a verdict) is asked of `shaped` first and walked only when it fails."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        schema = defs[ref.rsplit("/", 1)[-1]]
    if "anyOf" in schema:
        if any(shape(value, s, defs, at, 0) is None for s in schema["anyOf"]):
            return None
        return f"{_where(at)}: {_kind(value)} is none of the forms allowed there"
    if "enum" in schema and value not in schema["enum"]:
        return f"{_where(at)}: {_kind(value)} is not one of {', '.join(map(json.dumps, schema['enum']))}"
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    if kinds and not any(_is(value, k) for k in kinds):
        return f"{_where(at)}: {_kind(value)}, expected {' or '.join(kinds)}"
    if depth <= 0:
        return None
    if isinstance(value, dict):
        required = schema.get("required", ())
        if "if" in schema and shape(value, schema["if"], defs, at, 1, compiled=False) is None:
            required = [*required, *schema["then"].get("required", ())]  # (a diff that was made: `rundata.COMPARED_KEYS`)
        for key in required:
            if key not in value:
                return f"{_where(at)}: '{key}' is missing"
        for key, sub in schema.get("properties", {}).items():
            if key in value and (problem := shape(value[key], sub, defs, (*at, key), depth - 1, compiled)):
                return problem
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        for i, item in enumerate(value):
            if compiled and shaped(item, items, defs, depth - 1):
                continue
            if problem := shape(item, items, defs, (*at, i), depth - 1, compiled):
                return problem
    return None


_Check = Callable[[Any], bool]
_CHECKS: dict[tuple[int, int], tuple[Mapping[str, Any], _Check]] = {}  # (id(schema), depth) -> schema (kept
# alive, so its id is not reused), its check


def shaped(value: Any, schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> bool:
    """Whether `shape(value, schema, defs, at, depth)` finds nothing, by its walk unrolled once per schema
    and depth into Python code (`_ShapeCode`: no schema lookups, no paths built, no call per node)."""
    if (found := _CHECKS.get((id(schema), depth))) is None:
        found = _CHECKS[(id(schema), depth)] = (schema, _ShapeCode(defs).compiled(schema, depth))
    return found[1](value)


class _ShapeCode:
    """The source of a function answering as `_shape` does: each schema node's enum and type test, then,
    while depth is left, its required keys and the properties and items it has, nested as they are; a
    definition the schema refers to (`$ref`: a message, an assertion) is a function of its own."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self.lines: list[str] = []
        self.consts: list[object] = []
        self.functions: dict[tuple[str, int], str] = {}  # (definition, depth) -> its function's name
        self.sources: list[str] = []

    def compiled(self, schema: Mapping[str, Any], depth: int) -> _Check:
        self.block(schema, "v0", depth, 4)
        self.sources.append("def check(v0):\n" + "\n".join([*self.lines, "    return True"]))
        scope: dict[str, Any] = {"K": self.consts}
        exec(compile("\n\n".join(self.sources), "<run.json shape>", "exec"), scope)  # noqa: S102  (code made from our own schema)
        check: _Check = scope["check"]
        return check

    def _const(self, value: object) -> str:
        self.consts.append(value)
        return f"K[{len(self.consts) - 1}]"

    def _node(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        return self.defs[ref.rsplit("/", 1)[-1]] if isinstance(ref, str) else schema

    def _function(self, ref: str, depth: int) -> str:
        """The name of the function checking definition `ref` to `depth`, made on first use."""
        if (name := self.functions.get((ref, depth))) is None:
            name = self.functions[(ref, depth)] = f"f{len(self.functions)}"
            outer, self.lines = self.lines, []
            self.block(self.defs[ref.rsplit("/", 1)[-1]], "v0", depth, 4)
            self.sources.append(f"def {name}(v0):\n" + "\n".join([*self.lines, "    return True"]))
            self.lines = outer
        return name

    def test(self, schema: Mapping[str, Any], var: str) -> str:
        """The expression: `var` passes the node's enum and type (all `_shape` asks at depth 0)."""
        node = self._node(schema)
        if "anyOf" in node:
            return "(" + " or ".join(self.test(s, var) for s in node["anyOf"]) + ")" if node["anyOf"] else "False"
        parts = []
        if "enum" in node:
            parts.append(f"{var} in {self._const(node['enum'])}")
        kind = node.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
        if kinds:
            types = tuple(_TYPES.get(k, object) for k in kinds)
            bools = any(_is(True, k) for k in kinds)  # `_is`: a boolean is no integer nor number
            if bools == any(issubclass(bool, t) for t in types):  # isinstance answers for booleans too
                parts.append(f"isinstance({var}, {self._const(types)})")
            else:
                parts.append(f"({bools} if isinstance({var}, bool) else isinstance({var}, {self._const(types)}))")
        return "(" + " and ".join(parts) + ")" if parts else "True"

    def block(self, schema: Mapping[str, Any], var: str, depth: int, indent: int) -> None:
        pad, node, ref = " " * indent, self._node(schema), schema.get("$ref")
        if isinstance(ref, str) and depth > 0 and "anyOf" not in node and indent > 4:
            self.lines.append(f"{pad}if not {self._function(ref, depth)}({var}): return False")
            return
        if (test := self.test(node, var)) != "True":
            self.lines.append(f"{pad}if not {test}: return False")
        if "anyOf" in node or depth <= 0:
            return
        required, props = node.get("required", ()), node.get("properties", {})
        if required or props:
            self.lines.append(f"{pad}if isinstance({var}, dict):")
            if required:
                self.lines.append(f"{pad}    if " + " or ".join(f"{k!r} not in {var}" for k in required) + ": return False")
            for key, sub in props.items():
                child, start = f"v{len(self.lines)}", len(self.lines)
                self.lines += [f"{pad}    if {key!r} in {var}:", f"{pad}        {child} = {var}[{key!r}]"]
                self.block(sub, child, depth - 1, indent + 8)
                if len(self.lines) == start + 2:  # nothing to ask of it
                    del self.lines[start:]
            if self.lines[-1] == f"{pad}if isinstance({var}, dict):":
                self.lines.pop()
        if isinstance(node.get("items"), dict):
            child, start = f"v{len(self.lines)}", len(self.lines)
            self.lines += [f"{pad}if isinstance({var}, list):", f"{pad}    for {child} in {var}:"]
            self.block(node["items"], child, depth - 1, indent + 8)
            if len(self.lines) == start + 2:
                del self.lines[start:]


def _where(at: tuple[str | int, ...]) -> str:
    return format_path(at) or "the top level"


def _kind(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "a list"
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 40 else shown[:40] + "…"
