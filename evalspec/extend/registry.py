"""The assertion registry: `@assertion(name, ...)` registers a check under its YAML name.

A pure declaration: it imports no check. `evalspec.assertions.builtin` is the table of the built-in
types (each type → the module that registers it): the facade (`evalspec/__init__.py`) names that table in
`BUILT_IN_MODULES`. Looking a type up (`resolve_type`) imports that type's module only, so a run loads
the checks its suite names and no other (docs/en/scale-and-ray.md#start-up); reading the whole registry
(`load_installed_plugins`, which every reader of all of `REGISTRY` calls first) imports them all. Plugins
register their own.

Each registered type declares the JSON Schema of its value and of its own options; the
suite schema (`schema/suite.schema.json`) is generated from these declarations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Literal

from evalspec.extend.params import REGEX, TURN_REF, JsonSchema, marked_keys, options_schema, value_schema
from evalspec.extend.params import value_required as params_value_required

Kind = Literal["reply", "conversation"]
Needs = Literal["judge", "embedder"]

COMMON_KEYS = ("type", "value", "scope", "threshold", "weight", "metric", "severity", "provider", "description",
               "examples", "max_rate")


@dataclass(frozen=True)
class AssertionType:
    """A registered assertion type.

    kind "reply": the check reads one reply (or, on `conversation` scope, all replies joined, unless
    `one_reply`: then that scope is a validation error); kind "conversation": it always reads the whole
    transcript (session rules, judges).
    """

    name: str
    fn: Callable[..., Any]
    kind: Kind
    doc: str
    value_schema: JsonSchema
    value_required: bool = True
    options: dict[str, JsonSchema] = field(default_factory=dict)
    default_scope: str = "last_response"
    default_threshold: float | None = None
    needs: Needs | None = None
    patterns: tuple[str, ...] = ()  # value keys (or "" for the value itself) that hold regexes
    turn_refs: tuple[str, ...] = ()  # value keys that reference a turn number or label
    params: Any = None  # a dataclass whose fields are the value's keys (`spec.params` is an instance)
    one_reply: bool = False  # what it reads is one reply's own (finish-reason): no joined `conversation` scope
    example: str = ""  # an item of an `assert:` list (YAML), shown in docs/en/reference/assertions.md


REGISTRY: dict[str, AssertionType] = {}

#: the modules whose `TYPES` (built-in check type → the module that registers it) name the built-in checks;
#: the facade (`evalspec/__init__.py`), which every `import evalspec.…` runs first, adds them: no layer below
#: names them
BUILT_IN_MODULES: list[str] = []


def assertion(name: str, *, kind: Kind = "reply", value: JsonSchema | None = None,
              value_required: bool = True, options: dict[str, JsonSchema] | None = None,
              default_scope: str = "last_response", default_threshold: float | None = None,
              needs: Needs | None = None, patterns: tuple[str, ...] = (),
              turn_refs: tuple[str, ...] = (), params: Any = None,
              one_reply: bool = False, example: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a check function under `name` (its first docstring line is the one-line doc; `example`,
    YAML items of an `assert:` list, is its entry's example in the assertion reference).

    `params`, a dataclass, declares the value, the options, the regexes and the turn references at once
    (see `params`); plugins may instead give the value's JSON Schema (`value=`) and `options=`."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        declared: dict[str, Any] = {"value_schema": value or {}, "value_required": value_required,
                                    "options": options or {}, "patterns": patterns, "turn_refs": turn_refs}
        if params is not None:  # everything the loader and the schema need comes from the dataclass
            declared = {"value_schema": value_schema(params), "value_required": params_value_required(params),
                        "options": options_schema(params), "patterns": marked_keys(params, REGEX),
                        "turn_refs": marked_keys(params, TURN_REF)}
        if _replaces_a_plugin(name, fn):
            return fn
        REGISTRY[name] = AssertionType(
            name=name, fn=fn, kind=kind, doc=doc, params=params,
            default_scope="conversation" if kind == "conversation" else default_scope,
            default_threshold=default_threshold, needs=needs, one_reply=one_reply, example=example, **declared,
        )
        return fn

    return register


def _replaces_a_plugin(name: str, fn: Callable[..., Any]) -> bool:
    """A built-in check never replaces a plugin's type of its name registered before its module was
    imported (a plugin's own `regex`): the built-in modules load when first needed, in any order."""
    before = REGISTRY.get(name)
    home = _built_in_types().get(name)
    return before is not None and home == fn.__module__ and before.fn.__module__ != home


def resolve_type(name: str) -> tuple[AssertionType, bool] | None:
    """`not-regex` -> (regex, negated). Names that start with `not-` themselves win. Imports the module of
    a built-in type the first time it is looked up (and the installed plugins, once)."""
    _load_type(name)
    if name in REGISTRY:
        return REGISTRY[name], False
    if name.startswith("not-") and _load_type(name[4:]):
        return REGISTRY[name[4:]], True
    return None


def threshold_of(spec: Any) -> float:
    """An assertion's own `threshold`, else its type's `default_threshold` (0.5 when it declares none)."""
    if spec.threshold is not None:
        return float(spec.threshold)
    resolved = resolve_type(spec.type)
    default = resolved[0].default_threshold if resolved else None
    return default if default is not None else 0.5


def model_needed(spec: Any) -> Needs | None:
    """The model an assertion needs (judge or embedder), or None: its type's, unless its parameters say
    this use needs none (their `uses_model()`: `asks-clarification` with `mode: heuristic`)."""
    resolved = resolve_type(spec.type)
    if resolved is None or resolved[0].needs is None:
        return None
    uses_model = getattr(spec.params, "uses_model", None)
    return resolved[0].needs if uses_model is None or uses_model() else None


def all_type_names() -> list[str]:
    load_installed_plugins()
    return sorted(REGISTRY)


def load_installed_plugins() -> None:
    """Fill the registry, once: every built-in check (the modules `BUILT_IN_MODULES`' tables name), then the
    types of installed plugins (entry points). Every reader of all of `REGISTRY` calls this first."""
    global _all_loaded
    if _all_loaded:
        return
    _all_loaded = True  # before the imports: a check module that reads the registry while it loads finds this
    try:
        _load_entry_points()
        for module in sorted(set(_built_in_types().values())):
            import_module(module)
    except BaseException:
        _all_loaded = False  # the next reader tries again (and reports the same error)
        raise


def _load_type(name: str) -> bool:
    """Whether `name` is registered, after importing its built-in module if it is a built-in type no one
    registered yet (and the installed plugins, once)."""
    if not _plugins_loaded:
        _load_entry_points()
    if name not in REGISTRY:
        module = _built_in_types().get(name)
        if module is not None:
            import_module(module)
    return name in REGISTRY


def _built_in_types() -> dict[str, str]:
    """Each built-in type → its module, read from the tables `BUILT_IN_MODULES` names (imported once)."""
    global _types
    if _types is None:
        types: dict[str, str] = {}
        for table in BUILT_IN_MODULES:
            types.update(import_module(table).TYPES)
        _types = types
    return _types


def _load_entry_points() -> None:
    global _plugins_loaded
    if _plugins_loaded:  # grading resolves every assertion of every conversation: no import statement per call
        return
    _plugins_loaded = True  # before the imports: a plugin that looks a type up while it loads finds this
    try:
        from evalspec.core.plugins import load_entry_points

        load_entry_points()
    except BaseException:
        _plugins_loaded = False  # the next lookup tries again (and reports the same error)
        raise


_plugins_loaded = False
_all_loaded = False
_types: dict[str, str] | None = None
