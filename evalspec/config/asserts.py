"""Parse and check assertion items (both forms), collecting problems with their lines."""

from __future__ import annotations

from typing import Any

import jsonschema

from evalspec.config.interpolate import is_template
from evalspec.config.meaning import hollow_texts, value_quote_problems
from evalspec.config.messages import describe_kinds, schema_problems
from evalspec.config.model import AssertionSpec
from evalspec.config.nodes import EXAMPLES_SCHEMA
from evalspec.config.paths import LineMap, PathKey
from evalspec.config.rule_examples import example_problems
from evalspec.core.errors import Problem
from evalspec.core.suggest import did_you_mean
from evalspec.extend.patterns import regex_problem, written_patterns
from evalspec.extend.registry import (
    COMMON_KEYS,
    REGISTRY,
    AssertionType,
    load_installed_plugins,
    resolve_type,
)

SCOPES = ("turn", "each_turn", "any_turn", "last_response", "conversation")
SEVERITIES = ("critical", "major", "minor")


def _known_names() -> list[str]:
    load_installed_plugins()
    return sorted(REGISTRY) + [f"not-{n}" for n in REGISTRY if not n.startswith("not-")]


def parse_assertion(item: Any, path: PathKey, lines: LineMap, problems: list[Problem],
                    under_turn: int | None) -> AssertionSpec | None:
    """One assertion item -> AssertionSpec, or None after recording why not."""
    def bad(msg: str, at: PathKey = path) -> None:
        problems.append(lines.problem(at, msg))

    found_before = len(problems)
    if not isinstance(item, dict):
        if isinstance(item, str) and resolve_type(item) is not None:
            bad(f"'{item}' needs a value after a colon: write '- {item}: true'")
        else:
            bad(f"an assertion must be a mapping like '- contains: text', got {item!r}")
        return None
    if "type" in item:
        name = item["type"]
        if not isinstance(name, str):
            bad("'type' must be an assertion name", (*path, "type"))
            return None
        value, value_given, type_key = item.get("value"), "value" in item, "type"
    else:
        candidates = [k for k in item if k not in COMMON_KEYS]
        typed = [k for k in candidates if resolve_type(k) is not None]
        if len(typed) > 1:
            bad(f"one assertion per item: found {', '.join(typed)}")
            return None
        if not typed:
            load_installed_plugins()  # every type's options
            options = {o for t in REGISTRY.values() for o in t.options}
            unknown = [k for k in candidates if k not in options]
            if unknown:
                bad(f"unknown assertion type '{unknown[0]}'{did_you_mean(unknown[0], _known_names())}", (*path, unknown[0]))
            else:
                bad("no assertion type: write '- TYPE: VALUE' or 'type: TYPE'")
            return None
        name = typed[0]
        value, value_given, type_key = item[name], True, name
    resolved = resolve_type(name)
    if resolved is None:
        bad(f"unknown assertion type '{name}'{did_you_mean(name, _known_names())}", (*path, type_key))
        return None
    atype, negate = resolved
    allowed = set(COMMON_KEYS) | set(atype.options) | {type_key}
    for key in item:
        if key not in allowed and key != type_key:
            hint = did_you_mean(key, sorted(allowed - {"type"} if type_key != "type" else allowed))
            if resolve_type(key) is not None:
                bad(f"one assertion per item: '{key}' needs its own '- ' entry", (*path, key))
            else:
                bad(f"unknown key '{key}' for '{name}'{hint}", (*path, key))
    vpath = (*path, "value") if type_key == "type" else (*path, type_key)
    value = _without_option_names(atype, name, value, vpath, lines, problems)
    spec = AssertionSpec(type=atype.name, negate=negate, value=value, where=path, value_where=vpath, turn=under_turn)
    _check_value(atype, value, value_given, vpath, lines, problems)
    spec.options = {k: item[k] for k in atype.options if k in item}
    _check_common(spec, item, atype, path, lines, problems, under_turn)
    for key, sub in atype.options.items():
        if key in item:
            for err in jsonschema.Draft202012Validator(sub).iter_errors(item[key]):
                for where, message in schema_problems(err, key):
                    bad(message, (*path, key, *where))
    _check_patterns(atype, value, vpath, lines, problems)
    _check_meaning(atype, name, negate, value, vpath, lines, problems)
    if len(problems) == found_before and not _templated(value):
        try:
            spec.params  # noqa: B018 -- made here, once: parameters that cannot be built are a load error
        except (TypeError, ValueError) as exc:
            bad(f"'{name}': {exc}", vpath)
    return spec


def _templated(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_templated(v) for v in value.values())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return isinstance(value, str) and is_template(value)


def _declared_keys(schema: Any) -> set[str]:
    """The keys a value schema names itself (`after`, `max`, ...), through anyOf/oneOf."""
    if not isinstance(schema, dict):
        return set()
    keys = set(schema.get("properties") or {})
    for sub in (*schema.get("anyOf", ()), *schema.get("oneOf", ())):
        keys |= _declared_keys(sub)
    return keys


def _without_option_names(atype: AssertionType, name: str, value: Any, path: PathKey, lines: LineMap,
                          problems: list[Problem]) -> Any:
    """docs/en/suite-format.md#assertions: option names are reserved, never read as part of a value. One written inside the value
    (`memory-recall: {job: 测试工程师, fuzzy: false}`) is reported and left out of it."""
    if not isinstance(value, dict):
        return value
    load_installed_plugins()  # every type's option names are reserved
    options = {o: t for t in REGISTRY.values() for o in t.options}
    reserved = (set(options) | set(COMMON_KEYS)) - {"type", "value"} - _declared_keys(atype.value_schema)
    misplaced = [k for k in value if k in reserved]
    for key in misplaced:
        if key in atype.options or key in COMMON_KEYS:
            sub = atype.options.get(key)
            wrong = sub is not None and any(jsonschema.Draft202012Validator(sub).iter_errors(value[key]))
            takes = f" ({key} takes {describe_kinds(sub)}, got {value[key]!r})" if wrong else ""
            message = (f"'{key}' is an option of '{name}', not part of its value: write it on its own line "
                       f"beside '{name}:' (same indentation){takes}")
        else:
            owners = sorted(n for n, t in REGISTRY.items() if key in t.options)
            own = f"; the options of '{name}' are {', '.join(atype.options)}" if atype.options else ""
            message = (f"'{key}' is a reserved option name (an option of {', '.join(owners[:3])}), so it cannot be "
                       f"part of the value of '{name}'{own}")
        problems.append(lines.problem((*path, key), message))
    return {k: v for k, v in value.items() if k not in misplaced} if misplaced else value


def _check_value(atype: AssertionType, value: Any, given: bool, path: PathKey, lines: LineMap,
                 problems: list[Problem]) -> None:
    if not given or value is None:
        if atype.value_required:
            problems.append(lines.problem(path, f"'{atype.name}' needs a value"))
        return
    if isinstance(value, str) and is_template(value) and atype.value_schema.get("type") != "string":
        return  # checked after rendering (`value_problems`, by the plan)
    for where, message in value_problems(atype, value, path):
        problems.append(lines.problem(where, message))


def value_problems(atype: AssertionType, value: Any, path: PathKey) -> list[tuple[PathKey, str]]:
    """What is wrong with a check's value against its type's schema, with the paths: the value as written,
    and once its templates are rendered (`contains-any: "{{ words }}"` over an empty list)."""
    schema = atype.value_schema
    kept = _VALIDATORS.get(id(schema))
    if kept is None or kept[0] is not schema:  # made once a type: a dataset renders each check a row
        kept = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft202012Validator(schema))
    if kept[1].is_valid(value):
        return []
    return [((*path, *where), message)
            for err in sorted(kept[1].iter_errors(value), key=lambda e: e.path)
            for where, message in schema_problems(err, atype.name)]


_VALIDATORS: dict[int, tuple[object, jsonschema.Draft202012Validator]] = {}


def _check_common(spec: AssertionSpec, item: dict[str, Any], atype: AssertionType, path: PathKey,
                  lines: LineMap, problems: list[Problem], under_turn: int | None) -> None:
    def bad(key: str, msg: str) -> None:
        problems.append(lines.problem((*path, key), msg))

    scope = item.get("scope")
    if scope is not None:
        if atype.kind == "conversation" and scope != "conversation":
            bad("scope", f"'{atype.name}' always reads the whole transcript; remove 'scope' (got {scope!r})")
        elif isinstance(scope, dict):
            if set(scope) != {"turns"}:
                bad("scope", "a turn scope is written {turns: [2, 3]} or {turns: LABEL}")
            else:
                turns = scope["turns"] if isinstance(scope["turns"], list) else [scope["turns"]]
                spec.scope = {"turns": turns}
        elif scope not in SCOPES:
            bad("scope", f"unknown scope {scope!r}{did_you_mean(str(scope), SCOPES)}; valid: {', '.join(SCOPES)}, {{turns: [...]}}")
        elif scope == "conversation" and atype.one_reply:
            bad("scope", f"'{atype.name}' reads one reply at a time, not the replies joined: use turn, each_turn, "
                         "any_turn, last_response or {turns: [...]}")
        elif scope == "turn" and under_turn is None:
            bad("scope", "scope 'turn' is only for assertions under a turn; use {turns: [N]} at test level")
        else:
            spec.scope = scope
    if spec.scope is None:
        spec.scope = "turn" if under_turn is not None and atype.kind == "reply" else atype.default_scope
    if "threshold" in item:
        t = item["threshold"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 1:
            bad("threshold", f"threshold must be a number from 0 to 1, got {t!r}")
        else:
            spec.threshold = float(t)
    if "weight" in item:
        w = item["weight"]
        if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0:
            bad("weight", f"weight must be a number >= 0, got {w!r}")
        else:
            spec.weight = float(w)
    if "severity" in item:
        s = item["severity"]
        if s not in SEVERITIES:
            bad("severity", f"unknown severity {s!r}{did_you_mean(str(s), SEVERITIES)}; valid: critical, major, minor")
        else:
            spec.severity = s
    if "max_rate" in item:
        r = item["max_rate"]
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r < 1:
            bad("max_rate", f"max_rate must be a breach rate between 0 and 1 (exclusive), got {r!r}")
        elif spec.severity != "critical":
            bad("max_rate", "max_rate bounds a red line's breach rate: it goes with severity: critical")
        else:
            spec.max_rate = float(r)
    if "metric" in item:
        spec.metric = str(item["metric"])
    if "provider" in item:
        spec.provider = item["provider"]
    if isinstance(spec.options.get("judge"), list):  # its own jury (docs/en/judges.md#juries)
        if "provider" in item:
            bad("judge", "give this check's judges as `judge:` or `provider:`, not both")
        settings = spec.options.get("jury")
        spec.provider = {"jury": spec.options["judge"], **(settings if isinstance(settings, dict) else {})}
    elif "jury" in spec.options:
        bad("jury", "'jury' needs this check's `judge:` to be a list of models (the jury's members)")
    if "examples" in item:
        _check_examples(spec, item["examples"], (*path, "examples"), lines, problems)
    if "description" in item:
        if isinstance(item["description"], str):
            spec.description = item["description"]
        else:
            bad("description", f"description must be text, got {item['description']!r}")


def _check_patterns(atype: AssertionType, value: Any, path: PathKey, lines: LineMap, problems: list[Problem]) -> None:
    for pattern, where in written_patterns(atype, value, path):
        if not is_template(pattern) and (message := regex_problem(pattern)):
            problems.append(lines.problem(where, message))


def _check_meaning(atype: AssertionType, name: str, negate: bool, value: Any, path: PathKey, lines: LineMap,
                   problems: list[Problem]) -> None:
    """Values that cannot be what the writer meant (docs/en/rule-self-tests.md): see `config.meaning`."""
    patterns = written_patterns(atype, value, path)
    pattern_paths = {where for _, where in patterns}
    for where, quoted in value_quote_problems(name, value, path, pattern_paths, lines):
        problems.append(lines.problem(where, quoted))
    for where, message in hollow_texts(atype, negate, value, path):
        problems.append(lines.problem(where, message))


def _check_examples(spec: AssertionSpec, examples: Any, path: PathKey, lines: LineMap,
                    problems: list[Problem]) -> None:
    """`examples: {fail: [...], pass: [...]}` well formed: then the spec keeps them (graded by preflight)."""
    before = len(problems)
    for err in jsonschema.Draft202012Validator(EXAMPLES_SCHEMA).iter_errors(examples):
        for where, message in schema_problems(err, "examples"):
            problems.append(lines.problem((*path, *where), message))
    if len(problems) == before:
        for where, message in example_problems(examples):
            problems.append(lines.problem((*path, *where), message))
    if len(problems) == before:
        spec.examples = examples
