"""promptfoo configs as evalspec suites.

Providers `openai:`/`anthropic:` become `model:`, `http`/URL providers `http:`, `file://x.py` python
providers a `python:` adapter (promptfoo's `call_api(prompt, options, context)` called from evalspec's
`respond(messages, context)`). Each test's prompt is rendered with its vars into a user turn (a chat prompt's
earlier messages become history, its system message the model's `system:`); tests whose prompt loops over
`_conversation` are turns of one conversation (grouped by `metadata.conversationId`). Assertions of types
evalspec has keep their meaning; everything else is listed as not converted.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex
import yaml

from evalspec.authoring.importers import RAW_CLOSE, RAW_OPEN, ImportedSuite, literal, plain
from evalspec.authoring.importers.promptfoo.checks import Checks, Grading
from evalspec.authoring.importers.promptfoo.compare import (
    PROMPT_VAR,
    SELECT_BEST,
    best_check,
    config_problem,
    split_best,
    test_problem,
)
from evalspec.authoring.importers.promptfoo.prompts import HISTORY_VARS, Prompts
from evalspec.authoring.importers.promptfoo.providers import Providers, uuid_var
from evalspec.authoring.importers.promptfoo.redteam import RedTeam, redteam_tests
from evalspec.authoring.importers.promptfoo.source import Source, load_yaml
from evalspec.authoring.importers.promptfoo.testfiles import TestFiles
from evalspec.authoring.importers.shapes import Check, SuiteTest, SuiteTurn, mapping, said
from evalspec.core.errors import ConfigError, Problem
from evalspec.core.suggest import slugify

SIMULATED_USER = "promptfoo:simulated-user"


def _simulated_user(provider: Any) -> dict[str, object] | None:
    """`defaultTest.provider: promptfoo:simulated-user` (its config), or None."""
    pid = provider if isinstance(provider, str) else provider.get("id") if isinstance(provider, dict) else None
    if pid != SIMULATED_USER:
        return None
    config = provider.get("config") if isinstance(provider, dict) else None
    return config if isinstance(config, dict) else {}


def _simulate_test(entry: SuiteTest, raw: dict[str, object], config: dict[str, object]) -> SuiteTest:
    """A test promptfoo's simulated user plays: its `instructions` var is the persona, its description the
    goal, its checks the test's (on the whole conversation); the prompt is the agent's system message."""
    variables = mapping(raw.get("vars"))
    persona = variables.get("instructions") or raw.get("description") or "a customer"
    turns = config.get("maxTurns")
    out = entry.copy()
    out.pop("conversation", None)
    out.pop("vars", None)
    out["simulate"] = {"persona": plain(str(persona)), "goal": plain(str(raw.get("description") or persona)),
                       "max_turns": turns if isinstance(turns, int) and 1 <= turns <= 50 else 10}
    asserts = [a for turn in entry.get("conversation", []) for a in turn.get("assert", [])]
    if asserts:
        out["assert"] = asserts
    return out



def _captured(text: Any) -> Any:
    """A turn rendered with a stored output's stand-in (`\\x00NAME\\x00`): the stand-in becomes `{{ NAME }}`,
    the capture evalspec fills in when the conversation is played."""
    if not isinstance(text, str) or "\x00" not in text:
        return text
    inside = text.startswith(RAW_OPEN)
    return regex.sub(r"\x00(\w+)\x00", lambda m: (RAW_CLOSE + "{{ " + m.group(1) + " }}" + RAW_OPEN) if inside
                     else "{{ " + m.group(1) + " }}", text)



def entry_name(group: str) -> str:
    """A test's name from its group key (a single-turn test's key ends in `\\x00` and its index)."""
    return group.split("\x00")[0]


def _load(path: Path) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError([Problem(str(path), None, "", f"cannot read: {exc}")]) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else load_yaml(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError([Problem(str(path), None, "", f"not a promptfoo config: {exc}")]) from None
    if not isinstance(data, dict):
        raise ConfigError([Problem(str(path), 1, "", "a promptfoo config is a mapping (prompts, providers, tests)")])
    return data


SYSTEM_VAR = "system_prompt"


def _system_per_test(by_group: dict[str, SuiteTest], systems: dict[str, str], default_vars: dict[str, object]) -> str:
    """A system message that differs between tests (promptfoo renders it with each test's vars): each test's
    own as a var the model providers' `system:` names (evalspec renders a provider's system prompt with the
    test's vars); that `system:` template."""
    taken = set(default_vars) | {k for entry in by_group.values() for k in mapping(entry.get("vars"))}
    name = next(n for n in itertools.chain([SYSTEM_VAR], (f"{SYSTEM_VAR}_{k}" for k in itertools.count(2)))
                if n not in taken)
    for group, entry in by_group.items():
        entry["vars"] = {**mapping(entry.get("vars")), name: plain(systems.get(group, ""))}  # "": none is sent
    return "{{ " + name + " }}"


def _provider_ids(raw: Any) -> list[tuple[str, Any]]:
    """promptfoo's (id, label) of each provider, as a prompt function is given them."""
    out: list[tuple[str, Any]] = []
    for item in raw if isinstance(raw, list) else [raw] if raw is not None else []:
        if isinstance(item, str):
            out.append((item, None))
        elif isinstance(item, dict) and isinstance(item.get("id"), str):
            out.append((item["id"], item.get("label")))
        elif isinstance(item, dict) and len(item) == 1:  # {id: {config…}}
            (pid, options), = item.items()
            out.append((str(pid), options.get("label") if isinstance(options, dict) else None))
    return out


@dataclass
class ImportedTurn:
    """One promptfoo test rendered with one prompt: a turn of the written test its `group` names."""

    prompt: int  # the prompt's number (1 for the first)
    index: int  # the test's index in the config's tests
    group: str  # the written test it is a turn of (a single-turn test's ends in `\x00` and its index)
    test: dict[str, object]  # the source test, its `file://` vars read
    asserts: list[Check]  # its checks, converted
    messages: list[dict[str, str]]  # the rendered prompt: history, then the user's message
    own_vars: dict[str, object]  # the test's own vars (not the history's)


@dataclass
class Conversion:
    """One config's import, phase by phase: what each phase reads of the config and what it makes."""

    data: dict[str, object]
    path: Path
    source: Source  # what every part shares: notes, problems, the files written beside the suite
    # the parts, each in a module of its own
    provider_part: Providers
    test_part: TestFiles
    prompt_part: Prompts
    check_part: Checks
    providers: list[dict[str, object]] = field(default_factory=list)
    prompts: list[Any] = field(default_factory=list)
    default: dict[str, object] = field(default_factory=dict)  # defaultTest
    default_vars: dict[str, object] = field(default_factory=dict)
    options: dict[str, object] = field(default_factory=dict)  # defaultTest.options
    tests_raw: list[Any] = field(default_factory=list)
    judge: Any = None
    multi_turn: bool = False
    turns: list[ImportedTurn] = field(default_factory=list)
    best_items: dict[int, list[tuple[int, dict[str, object]]]] = field(default_factory=dict)  # `select-best`s
    compared: dict[int, list[Check]] = field(default_factory=dict)
    simulated: dict[str, object] | None = None
    system: str | None = None
    tests: list[SuiteTest] = field(default_factory=list)  # the written tests
    by_group: dict[str, SuiteTest] = field(default_factory=dict)
    systems: dict[str, str] = field(default_factory=dict)  # each written test's system message (by group)
    checked: set[str] = field(default_factory=set)  # the groups whose source has a check of its own
    suite: dict[str, object] = field(default_factory=dict)
    default_asserts: list[Check] = field(default_factory=list)


def import_promptfoo(path: Path, out_dir: Path) -> ImportedSuite:
    """One promptfoo config -> one suite (written to `out_dir`, which relative paths are computed for)."""
    source = Source(path, out_dir)
    c = Conversion(_load(path), path, source, Providers(source), TestFiles(source), Prompts(source), Checks(source))
    try:
        _read_providers(c)
        _read_prompts_and_tests(c)
        _read_options(c)
        _render_turns(c)
        _compare(c)
        _write_tests(c)
        red = _system_message(c)
        _write_suite(c)
        _write_players(c, red)
        return _result(c)
    finally:
        c.prompt_part.close_functions()  # the processes its prompt functions ran in


def _read_providers(c: Conversion) -> None:
    """`providers:` (or `targets:`) as the suite's providers."""
    listed = c.data.get("providers") if c.data.get("providers") is not None else c.data.get("targets")
    c.prompt_part.prompt_providers = _provider_ids(listed)
    c.provider_part.session_var = uuid_var(c.data.get("defaultTest"))  # promptfoo's per-test id: evalspec's thread id
    c.providers = c.provider_part.providers(listed)
    c.source.reported_tools = any(p.get("answer_tool_calls") is False for p in c.providers)


def _read_prompts_and_tests(c: Conversion) -> None:
    """`prompts:`, `defaultTest:` and the tests (inline, files, generators, scenarios, var combinations)."""
    c.prompts = c.prompt_part.prompts(c.data.get("prompts"))
    c.default = c.test_part.default_test(c.data.get("defaultTest"))
    if isinstance(c.default.get("vars"), dict):
        c.default_vars = c.test_part.var_files(dict(mapping(c.default["vars"])), "defaultTest")
    c.tests_raw = c.test_part.var_combinations(c.test_part.external_tests(c.data.get("tests") or [])
                                           + c.test_part.scenario_tests(c.data.get("scenarios")), c.default_vars)
    for key in sorted(set(c.data) - {"description", "prompts", "providers", "targets", "tests", "defaultTest",
                                     "scenarios", *(("redteam",) if isinstance(c.data.get("redteam"), dict) else ())}):
        c.source.notes.append(f"top-level '{key}'")


def _read_options(c: Conversion) -> None:
    """`defaultTest.options` (its grader the suite's judge); what of `defaultTest` is not read, noted."""
    default, notes = c.default, c.source.notes
    c.options = mapping(default.get("options"))
    if default.get("options") is not None and not c.options:
        notes.append(f"defaultTest.options: {default['options']!r} (not a mapping)")
    c.judge = c.provider_part.judge(c.options.get("provider")) if c.options.get("provider") is not None else None
    for key in sorted(set(c.options) - {"provider", "rubricPrompt",  # read by each judged check
                                        *(("transformVars",) if c.provider_part.session_var else ())}):
        notes.append(f"defaultTest.options.{key}")
    for key in sorted(set(default) - {"vars", "assert", "options"}):
        notes.append(f"defaultTest.{key}")


def _render_turns(c: Conversion) -> None:
    """Every test with every prompt as an `ImportedTurn`; a problem anywhere refuses the import."""
    # a conversation is the tests sharing a `metadata.conversationId` (whatever the prompt), or a prompt's
    # `_conversation` loop over the tests in order
    grouped = any(isinstance(t, dict) and isinstance(t.get("metadata"), dict) and t["metadata"].get("conversationId")
                  for t in c.tests_raw)
    stored = [str(t["options"]["storeOutputAs"]) for t in c.tests_raw if isinstance(t, dict) and isinstance(
        t.get("options"), dict) and isinstance(t["options"].get("storeOutputAs"), str)]
    # a stored output is read by the later tests: one conversation
    c.multi_turn = grouped or any("_conversation" in str(p) for p in c.prompts) or bool(stored)
    loaded_vars: dict[int, dict[str, object]] = {}  # a test's vars with their files read, once for every prompt
    for (pk, prompt), (i, test) in itertools.product(enumerate(c.prompts, 1), enumerate(c.tests_raw)):
        if not isinstance(test, dict):
            if pk == 1:
                c.source.notes.append(f"tests[{i}]: {test!r} (not a mapping)")
            continue
        test, rest = _test_vars_read(c, pk, i, test, loaded_vars)
        c.turns.append(_render_turn(c, pk, prompt, i, test, rest, stored))
    if c.source.problems:
        raise ConfigError(c.source.problems)


def _test_vars_read(c: Conversion, pk: int, i: int, test: dict[str, object],
                    loaded_vars: dict[int, dict[str, object]]) -> tuple[dict[str, object], Any]:
    """The test with its `file://` vars read (once, for the first prompt); vars that are no mapping dropped
    (noted); and its checks other than `select-best` (those are compared across prompts and providers:
    `_compare`)."""
    where = f"tests[{i}]"
    rest, c.best_items[i] = split_best(test.get("assert"))
    if test.get("vars") is not None and not isinstance(test.get("vars"), dict):
        c.source.notes.append(f"{where}: vars {test['vars']!r} (not a mapping)")
        test = {k: v for k, v in test.items() if k != "vars"}
    if test.get("vars"):  # promptfoo reads `file://` vars when it renders the prompt
        loaded_vars[i] = c.test_part.var_files(mapping(test["vars"]), where) if pk == 1 else loaded_vars[i]
        test = {**test, "vars": loaded_vars[i]}
    return test, rest


def _note_test_keys(c: Conversion, test: dict[str, object], where: str) -> None:
    """What of a test is not read, noted (once: for its first prompt)."""
    test_options = mapping(test.get("options"))
    for key in sorted(set(test) - {"vars", "assert", "description", "metadata", "threshold", "options",
                                   "providers"}) + \
            [f"options.{o}" for o in sorted(set(test_options) - {"storeOutputAs", "rubricPrompt"})] + \
            ([f"options: {test['options']!r} (not a mapping)"] if test.get("options") is not None
             and not isinstance(test["options"], dict) else []):
        c.source.notes.append(f"{where}.{key}")


def _group(c: Conversion, pk: int, i: int, test: dict[str, object]) -> str:
    """The written test a turn belongs to: its conversation, else its own (one per test and prompt)."""
    metadata = mapping(test.get("metadata"))
    group = str(metadata.get("conversationId") or "conversation") if c.multi_turn \
        else str(test.get("description") or f"test-{i + 1}")
    if len(c.prompts) > 1:
        group += f" prompt-{pk}"
    if not c.multi_turn:
        group += f"\x00{i}"  # one test each, whatever their descriptions (the id is made unique below)
    return group


def _render_turn(c: Conversion, pk: int, prompt: Any, i: int, test: dict[str, object], rest: Any,
                 stored: list[str]) -> ImportedTurn:
    """One test rendered with one prompt, its checks (`rest`) converted."""
    where = f"tests[{i}]"
    variables = {**c.default_vars, **mapping(test.get("vars"))}
    test_options = mapping(test.get("options"))
    if pk == 1:
        _note_test_keys(c, test, where)
    group = _group(c, pk, i, test)
    markers = {name: f"\x00{name}\x00" for name in stored if name not in variables}
    if markers:  # promptfoo renders a var's own `{{ NAME }}` with the stored output too
        variables = {key: regex.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m, marks=markers: marks.get(m.group(1), m.group(0)), v)
                     if isinstance(v, str) else v for key, v in variables.items()}
    transform = test_options.get("transform", c.options.get("transform"))  # promptfoo checks transform(output)
    rubric_prompt = test_options.get("rubricPrompt", c.options.get("rubricPrompt"))  # promptfoo's grading prompt
    # a test whose one check is a g-eval on a list of criteria: one check each, the mean at the test's threshold
    mean = None if c.multi_turn or c.default.get("assert") else \
        c.check_part.criteria_mean(rest, where, transform, test.get("threshold"))
    if mean is not None:
        test = {**test, "threshold": mean[1]}
    names = frozenset(variables)
    asserts = mean[0] if mean is not None else c.check_part.assertions(
        rest, where, transform, Grading(rubric_prompt, test.get("threshold") is not None, names, names))
    own = dict(mapping(test.get("vars")))
    return ImportedTurn(pk, i, group, test, asserts, c.prompt_part.messages(prompt, {**markers, **variables}, where, own),
                        {k: v for k, v in own.items() if k not in HISTORY_VARS})


def _compare(c: Conversion) -> None:
    """The `select-best` checks of each test they convert exactly for (by test index); the others noted."""
    c.simulated = _simulated_user(c.default.get("provider"))
    shared = config_problem(c.data, c.provider_part.names, c.multi_turn or c.simulated is not None, c.options.get("transform"))
    for i, items in c.best_items.items():
        if not items:
            continue
        test = c.tests_raw[i]  # a mapping: `best_items` holds the tests that are
        own = test["options"] if isinstance(test.get("options"), dict) else {}
        rendered = [turn.messages for turn in c.turns if turn.index == i]
        only = c.provider_part.test_providers(test.get("providers"), f"tests[{i}]")
        why = shared or ("on the output transformed by `options.transform`" if own.get("transform") else None) \
            or test_problem(dict(test.get("vars") or {}), len(rendered),
                            len(only) if only is not None else len(c.providers), rendered)
        made = [(j, *(best_check(item) if why is None else (None, why))) for j, item in items]
        if all(check is not None for _, check, _ in made):
            c.compared[i] = [check for _, check, _ in made if check is not None]
            continue
        for j, _, problem in made:  # all of the test's comparisons, or none: they share its form
            c.source.note(f"tests[{i}].assert[{j}]: assertion type '{SELECT_BEST}' "
                         f"({problem or 'beside a select-best that is not converted'})")


def _write_tests(c: Conversion) -> None:
    """The turns as the suite's tests: each group one test, its turns in order."""
    for turn in c.turns:
        group, messages, own_vars = turn.group, turn.messages, turn.own_vars
        if turn.index in c.compared:  # one test, its prompts a matrix: every prompt × provider is a candidate
            group = group.replace(f" prompt-{turn.prompt}\x00", "\x00")
        if turn.test.get("assert"):
            c.checked.add(group)
        if messages and messages[0]["role"] == "system":
            if c.systems.setdefault(group, messages[0]["content"]) != messages[0]["content"]:
                c.source.notes.append(f"{entry_name(group)}: a system message that differs between the turns of one "
                                     "conversation (the first is used)")
            c.system = c.system or messages[0]["content"]
            messages = messages[1:]
        if messages and "prompt" not in {**c.default_vars, **own_vars} and turn.index not in c.compared \
                and regex.search(r"\{\{\s*prompt\s*[}|]", str([turn.asserts, c.default.get("assert")])):
            own_vars = {**own_vars, "prompt": messages[-1]["content"]}  # promptfoo's `{{prompt}}`: the prompt sent
        only = c.provider_part.test_providers(turn.test.get("providers"), entry_name(group))  # promptfoo's provider filter
        if only == []:
            continue
        entry = c.by_group.get(group)
        if entry is None:
            entry = c.by_group[group] = _new_entry(c, turn, group, own_vars, only)
        _add_turn(c, entry, turn, messages, own_vars)


def _new_entry(c: Conversion, turn: ImportedTurn, group: str, own_vars: dict[str, object],
               only: list[str] | None) -> SuiteTest:
    """The written test of a group, from its first turn (its id unique in the suite)."""
    test = turn.test
    tid = base = slugify(entry_name(group))
    while any(t.get("id") == tid for t in c.tests):
        tid = f"{base}-{sum(t.get('id') == base or t.get('id', '').startswith(base + '-') for t in c.tests) + 1}"
    entry: SuiteTest = {"id": tid, "conversation": []}
    if only is not None:
        entry["providers"] = only
    if not c.multi_turn and test.get("description"):
        entry["name"] = plain(str(test["description"]))
    if isinstance(test.get("threshold"), (int, float)):
        entry["threshold"] = test["threshold"]
    if own_vars and not c.multi_turn:
        entry["vars"] = plain(own_vars)
    if turn.index in c.compared:
        entry["assert"] = c.compared[turn.index]
        if len(c.prompts) > 1:
            entry["matrix"] = {PROMPT_VAR: []}
    c.tests.append(entry)
    return entry


def _add_turn(c: Conversion, entry: SuiteTest, turn: ImportedTurn, messages: list[dict[str, str]],
              own_vars: dict[str, object]) -> None:
    """A turn (and, in a single-turn test, the history its prompt holds) written into its test."""
    matrix = turn.index in c.compared and len(c.prompts) > 1
    if matrix:
        entry.setdefault("matrix", {}).setdefault(PROMPT_VAR, []).append(plain(messages[-1]["content"]))  # sent as it reads
        if turn.prompt > 1:
            return  # the turn is the first prompt's, written `{{ prompt }}`
    history = messages[:-1] if not c.multi_turn else []
    for m in history:
        if m["role"] in ("user", "assistant"):
            entry.setdefault("conversation", []).append(said(m["role"], literal(m["content"])))
    last = messages[-1] if messages else {"role": "user", "content": ""}
    written: SuiteTurn = {"user": _captured(literal(last["content"]))}  # rendered here: sent as it reads
    if matrix:
        written["user"] = "{{ " + PROMPT_VAR + " }}"
    options = turn.test.get("options")
    store = (options or {}).get("storeOutputAs") if isinstance(options, dict) else None
    if isinstance(store, str) and store.isascii() and store.isidentifier():
        written["capture"] = store  # promptfoo's storeOutputAs: the reply is a var of the later tests
    if own_vars and c.multi_turn:
        written["vars"] = plain(own_vars)  # the turn's checks may use them
    if turn.asserts:
        written["assert"] = turn.asserts
    entry.setdefault("conversation", []).append(written)


def _system_message(c: Conversion) -> RedTeam | None:
    """The prompt's system message as the model providers' `system:` (a var when it differs between the
    tests); the red team's tests read from `redteam:` (their frame's system message, when no test has one)."""
    if c.simulated is not None and c.system is None and c.turns and c.turns[0].messages:
        c.system = c.turns[0].messages[-1]["content"]  # the prompt is the agent's instructions
    red = redteam_tests(mapping(c.data["redteam"]), c.prompts if c.data.get("prompts") is not None else [], c.prompt_part) \
        if isinstance(c.data.get("redteam"), dict) else None
    if red is not None and red.system and not c.turns:
        c.system = red.system  # the prompt each attack message is sent in
    if c.system:  # the text, as written; a var of each test when it differs between them
        written = _system_per_test(c.by_group, c.systems, c.default_vars) \
            if len({c.systems.get(group, "") for group in c.by_group}) > 1 else literal(c.system)
        for p in c.providers:
            if "model" in p:
                p["system"] = written
        if not any("model" in p for p in c.providers):
            c.source.notes.append("the prompt's system message (only model providers take `system:`)")
    return red


def _write_suite(c: Conversion) -> None:
    """The suite's description, vars, providers, defaults and the models its checks need."""
    suite = c.suite
    suite["description"] = plain(str(c.data.get("description") or f"Imported from {c.path.name}"))
    if kept := {k: v for k, v in c.default_vars.items() if k not in HISTORY_VARS}:  # a history is in the turns
        suite["vars"] = plain(kept)
    if c.providers:
        suite["providers"] = c.providers
    every = [set(c.default_vars) | set(t.get("vars") or {} if isinstance(t.get("vars"), dict) else {})
             for t in c.tests_raw if isinstance(t, dict)] or [set(c.default_vars)]
    c.default_asserts = c.check_part.assertions(c.default.get("assert"), "defaultTest", c.options.get("transform"), Grading(
        c.options.get("rubricPrompt"), any(isinstance(t, dict) and t.get("threshold") is not None for t in c.tests_raw),
        frozenset(set.intersection(*every)), frozenset(set.union(*every))))
    if c.default_asserts:
        if c.multi_turn:  # promptfoo checks each test's output: here, each turn
            c.default_asserts = [{**a, "scope": "each_turn"} for a in c.default_asserts]
        suite["defaults"] = {"assert": c.default_asserts}
    _write_models(c, _checks_used(c))


def _checks_used(c: Conversion) -> set[str]:
    """The evalspec check names the written tests and defaults use (negated forms by their base name)."""
    used = {k.removeprefix("not-") for t in c.tests for turn in t.get("conversation", []) for a in turn.get("assert", [])
            for k in a} | {k.removeprefix("not-") for a in c.default_asserts for k in a} | \
        {k for t in c.tests for a in t.get("assert", []) for k in a}
    if used & {"conversation-relevance", "trajectory:goal-success", SELECT_BEST}:
        used.add("llm-rubric")  # judged too
    return used


def _write_models(c: Conversion, used: set[str]) -> None:
    """The suite's `judge:` and `embedder:` when its checks need them (promptfoo's defaults, noted)."""
    if c.judge is not None and "llm-rubric" in used:
        c.suite["judge"] = c.judge
    if "similar" in used and (embedder := c.provider_part.embedder(c.options.get("provider"))) is not None:
        c.suite["embedder"] = embedder  # the source's embedding model: `similar` scores as promptfoo's do
    for role, key, model in (("judge", "llm-rubric", "openai/gpt-4o-mini"),
                             ("embedder", "similar", "openai/text-embedding-3-small")):
        if key in used and role not in c.suite:
            c.suite[role] = model
            c.source.notes.append(f"{role}: {model} (promptfoo's default; edit `{role}:`)")


def _write_players(c: Conversion, red: RedTeam | None) -> None:
    """promptfoo's simulated user (`simulate:` tests) and red team (`attack:` tests), and the model that
    plays them (`simulator:`)."""
    if c.simulated is not None:  # promptfoo's simulated user plays each test: a `simulate:` test
        c.tests = [_simulate_test(t, turn.test, c.simulated) for t, turn in zip(c.tests, c.turns, strict=False)]
    attacker = None
    if red is not None:
        c.tests += red.tests
        provider = mapping(c.data["redteam"]).get("provider")
        attacker = c.provider_part.judge(provider) if provider is not None else None  # promptfoo's attacker model
        if red.tests and any("llm-rubric" in a for t in red.tests for a in t.get("assert", [])) and "judge" not in c.suite:
            c.suite["judge"] = c.judge if c.judge is not None else "openai/gpt-4o-mini"  # the red lines are judged
            if c.judge is None:
                c.source.notes.append("judge: openai/gpt-4o-mini (promptfoo's red-team grader is its default model; "
                                     "edit `judge:`)")
    if any("simulate" in t or "attack" in t for t in c.tests):
        c.suite["simulator"] = attacker if attacker is not None else c.judge if isinstance(c.judge, str) \
            else "openai/gpt-4o-mini"
        if attacker is None:
            c.source.notes.append(f"simulator: {c.suite['simulator']} (the simulated user and the attacker; edit "
                                 "`simulator:`)")


def _result(c: Conversion) -> ImportedSuite:
    c.suite["tests"] = c.tests
    # promptfoo runs a test without checks to show its reply (it passes when the provider answers): such
    # tests check nothing in the source, as distinct from tests whose checks could not be converted
    unchecked = [] if c.default.get("assert") else [c.by_group[g]["id"] for g in c.by_group if g not in c.checked]
    return ImportedSuite(filename=f"{slugify(c.path.stem)}.yaml", data=c.suite,
                         not_converted=list(dict.fromkeys(c.source.notes)), source=c.path.name, files=c.source.files,
                         unchecked=unchecked)
