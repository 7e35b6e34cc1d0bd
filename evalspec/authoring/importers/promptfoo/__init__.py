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
from evalspec.authoring.importers.promptfoo.redteam import redteam_tests
from evalspec.authoring.importers.promptfoo.source import load_yaml
from evalspec.authoring.importers.promptfoo.testfiles import TestFiles
from evalspec.core.errors import ConfigError, Problem
from evalspec.core.suggest import slugify


class _Converter(Providers, TestFiles, Prompts, Checks):
    """One config's import: each part (providers, test files, prompts, checks) in a module of its own."""


SIMULATED_USER = "promptfoo:simulated-user"


def _simulated_user(provider: Any) -> dict[str, Any] | None:
    """`defaultTest.provider: promptfoo:simulated-user` (its config), or None."""
    pid = provider if isinstance(provider, str) else provider.get("id") if isinstance(provider, dict) else None
    if pid != SIMULATED_USER:
        return None
    config = provider.get("config") if isinstance(provider, dict) else None
    return config if isinstance(config, dict) else {}


def _simulate_test(entry: dict[str, Any], raw: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """A test promptfoo's simulated user plays: its `instructions` var is the persona, its description the
    goal, its checks the test's (on the whole conversation); the prompt is the agent's system message."""
    variables: dict[str, Any] = raw["vars"] if isinstance(raw.get("vars"), dict) else {}
    persona = variables.get("instructions") or raw.get("description") or "a customer"
    turns = config.get("maxTurns")
    out = {k: v for k, v in entry.items() if k not in ("conversation", "vars")}
    out["simulate"] = {"persona": plain(str(persona)), "goal": plain(str(raw.get("description") or persona)),
                       "max_turns": turns if isinstance(turns, int) and 1 <= turns <= 50 else 10}
    asserts = [a for turn in entry["conversation"] for a in turn.get("assert", [])]
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


def _load(path: Path) -> dict[str, Any]:
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


def _compared(conv: _Converter, data: dict[str, Any], tests_raw: list[Any],
              best_items: dict[int, list[tuple[int, dict[str, Any]]]], origins: list[tuple[int, int]],
              turns: list[Any], multi_turn: bool, options: dict[str, Any], simulated: bool,
              providers: int) -> dict[int, list[dict[str, Any]]]:
    """The `select-best` checks of each test they convert exactly for (by test index); the others noted."""
    out: dict[int, list[dict[str, Any]]] = {}
    shared = config_problem(data, conv.names, multi_turn or simulated, options.get("transform"))
    for i, items in best_items.items():
        if not items:
            continue
        test = tests_raw[i]  # a mapping: `best_items` holds the tests that are
        own = test["options"] if isinstance(test.get("options"), dict) else {}
        rendered = [turn[3] for (pk, k), turn in zip(origins, turns, strict=True) if k == i]
        only = conv.test_providers(test.get("providers"), f"tests[{i}]")
        why = shared or ("on the output transformed by `options.transform`" if own.get("transform") else None) \
            or test_problem(dict(test.get("vars") or {}), len(rendered), len(only) if only is not None else providers,
                            rendered)
        made = [(j, *(best_check(item) if why is None else (None, why))) for j, item in items]
        if all(check is not None for _, check, _ in made):
            out[i] = [check for _, check, _ in made if check is not None]
            continue
        for j, _, problem in made:  # all of the test's comparisons, or none: they share its form
            conv.note(f"tests[{i}].assert[{j}]: assertion type '{SELECT_BEST}' "
                      f"({problem or 'beside a select-best that is not converted'})")
    return out


SYSTEM_VAR = "system_prompt"


def _system_per_test(by_group: dict[str, dict[str, Any]], systems: dict[str, str], default_vars: dict[str, Any]) -> str:
    """A system message that differs between tests (promptfoo renders it with each test's vars): each test's
    own as a var the model providers' `system:` names (evalspec renders a provider's system prompt with the
    test's vars); that `system:` template."""
    taken = set(default_vars) | {k for entry in by_group.values() for k in entry.get("vars", {})}
    name = next(n for n in itertools.chain([SYSTEM_VAR], (f"{SYSTEM_VAR}_{k}" for k in itertools.count(2)))
                if n not in taken)
    for group, entry in by_group.items():
        entry["vars"] = {**entry.get("vars", {}), name: plain(systems.get(group, ""))}  # "": none is sent
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


def import_promptfoo(path: Path, out_dir: Path) -> ImportedSuite:
    """One promptfoo config -> one suite (written to `out_dir`, which relative paths are computed for)."""
    data = _load(path)
    conv = _Converter(path, out_dir)
    try:
        return _import(data, path, conv)
    finally:
        conv.close_functions()  # the processes its prompt functions ran in


def _import(data: dict[str, Any], path: Path, conv: _Converter) -> ImportedSuite:
    listed = data.get("providers") if data.get("providers") is not None else data.get("targets")
    conv.prompt_providers = _provider_ids(listed)
    conv.session_var = uuid_var(data.get("defaultTest"))  # promptfoo's per-test id: evalspec's thread id
    providers = conv.providers(listed)
    conv.reported_tools = any(p.get("answer_tool_calls") is False for p in providers)
    prompts = conv.prompts(data.get("prompts"))
    default = conv.default_test(data.get("defaultTest"))
    default_vars = conv.var_files(dict(default["vars"]), "defaultTest") if isinstance(default.get("vars"), dict) else {}
    tests_raw = conv.var_combinations(conv.external_tests(data.get("tests") or [])
                                      + conv.scenario_tests(data.get("scenarios")), default_vars)
    for key in sorted(set(data) - {"description", "prompts", "providers", "targets", "tests", "defaultTest", "scenarios",
                                   *(("redteam",) if isinstance(data.get("redteam"), dict) else ())}):
        conv.notes.append(f"top-level '{key}'")
    options: dict[str, Any] = default["options"] if isinstance(default.get("options"), dict) else {}
    if default.get("options") is not None and not options:
        conv.notes.append(f"defaultTest.options: {default['options']!r} (not a mapping)")
    judge = conv.judge(options.get("provider")) if options.get("provider") is not None else None
    for key in sorted(set(options) - {"provider", "rubricPrompt",  # read by each judged check
                                      *(("transformVars",) if conv.session_var else ())}):
        conv.notes.append(f"defaultTest.options.{key}")
    for key in sorted(set(default) - {"vars", "assert", "options"}):
        conv.notes.append(f"defaultTest.{key}")

    # a conversation is the tests sharing a `metadata.conversationId` (whatever the prompt), or a prompt's
    # `_conversation` loop over the tests in order
    grouped = any(isinstance(t, dict) and isinstance(t.get("metadata"), dict) and t["metadata"].get("conversationId")
                  for t in tests_raw)
    multi_turn = grouped or any("_conversation" in str(p) for p in prompts)
    turns: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, str]], dict[str, Any]]] = []
    stored = [str(t["options"]["storeOutputAs"]) for t in tests_raw if isinstance(t, dict) and isinstance(
        t.get("options"), dict) and isinstance(t["options"].get("storeOutputAs"), str)]
    multi_turn = multi_turn or bool(stored)  # a stored output is read by the later tests: one conversation
    loaded_vars: dict[int, dict[str, Any]] = {}  # a test's vars with their files read, once for every prompt
    best_items: dict[int, list[tuple[int, dict[str, Any]]]] = {}  # each test's `select-best` checks
    origins: list[tuple[int, int]] = []  # (prompt, test) of each of `turns`
    for (pk, prompt), (i, test) in itertools.product(enumerate(prompts, 1), enumerate(tests_raw)):
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            if pk == 1:
                conv.notes.append(f"{where}: {test!r} (not a mapping)")
            continue
        rest, best_items[i] = split_best(test.get("assert"))  # compared across prompts and providers: below
        if test.get("vars") is not None and not isinstance(test.get("vars"), dict):
            conv.notes.append(f"{where}: vars {test['vars']!r} (not a mapping)")
            test = {k: v for k, v in test.items() if k != "vars"}
        if test.get("vars"):  # promptfoo reads `file://` vars when it renders the prompt
            test = {**test, "vars": conv.var_files(test["vars"], where) if pk == 1 else loaded_vars[i]}
            loaded_vars[i] = test["vars"]
        variables = {**default_vars, **dict(test.get("vars") or {})}
        test_options: dict[str, Any] = test["options"] if isinstance(test.get("options"), dict) else {}
        for key in sorted(set(test) - {"vars", "assert", "description", "metadata", "threshold", "options",
                                       "providers"}) + \
                [f"options.{o}" for o in sorted(set(test_options) - {"storeOutputAs", "rubricPrompt"})] + \
                ([f"options: {test['options']!r} (not a mapping)"] if test.get("options") is not None
                 and not isinstance(test["options"], dict) else []):
            if pk == 1:
                conv.notes.append(f"{where}.{key}")
        metadata: dict[str, Any] = test["metadata"] if isinstance(test.get("metadata"), dict) else {}
        group = str(metadata.get("conversationId") or "conversation") if multi_turn \
            else str(test.get("description") or f"test-{i + 1}")
        if len(prompts) > 1:
            group += f" prompt-{pk}"
        if not multi_turn:
            group += f"\x00{i}"  # one test each, whatever their descriptions (the id is made unique below)
        markers = {name: f"\x00{name}\x00" for name in stored if name not in variables}
        if markers:  # promptfoo renders a var's own `{{ NAME }}` with the stored output too
            variables = {key: regex.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m, marks=markers: marks.get(m.group(1), m.group(0)), v)
                         if isinstance(v, str) else v for key, v in variables.items()}
        transform = test_options.get("transform", options.get("transform"))  # promptfoo checks transform(output)
        rubric_prompt = test_options.get("rubricPrompt", options.get("rubricPrompt"))  # promptfoo's grading prompt
        # a test whose one check is a g-eval on a list of criteria: one check each, the mean at the test's threshold
        mean = None if multi_turn or default.get("assert") else \
            conv.criteria_mean(rest, where, transform, test.get("threshold"))
        if mean is not None:
            test = {**test, "threshold": mean[1]}
        names = frozenset(variables)
        asserts = mean[0] if mean is not None else conv.assertions(
            rest, where, transform, Grading(rubric_prompt, test.get("threshold") is not None, names, names))
        origins.append((pk, i))
        turns.append((group, test, asserts,
                      conv.messages(prompt, {**markers, **variables}, where, dict(test.get("vars") or {})),
                      {k: v for k, v in dict(test.get("vars") or {}).items() if k not in HISTORY_VARS}))
    if conv.problems:
        raise ConfigError(conv.problems)
    simulated = _simulated_user(default.get("provider"))
    compared = _compared(conv, data, tests_raw, best_items, origins, turns, multi_turn, options,
                         simulated is not None, len(providers))

    system = None
    tests: list[dict[str, Any]] = []
    by_group: dict[str, dict[str, Any]] = {}
    systems: dict[str, str] = {}  # each written test's system message (by group)
    checked: set[str] = set()  # the groups whose source has a check of its own
    for (pk, i), (group, test, asserts, messages, own_vars) in zip(origins, turns, strict=True):
        if i in compared:  # one test, its prompts a matrix: every prompt × provider is a candidate
            group = group.replace(f" prompt-{pk}\x00", "\x00")
        if test.get("assert"):
            checked.add(group)
        if messages and messages[0]["role"] == "system":
            if systems.setdefault(group, messages[0]["content"]) != messages[0]["content"]:
                conv.notes.append(f"{entry_name(group)}: a system message that differs between the turns of one "
                                  "conversation (the first is used)")
            system = system or messages[0]["content"]
            messages = messages[1:]
        if messages and "prompt" not in {**default_vars, **own_vars} and i not in compared and regex.search(r"\{\{\s*prompt\s*[}|]", str(
                [asserts, default.get("assert")])):  # promptfoo's `{{prompt}}` in a check is the prompt sent
            own_vars = {**own_vars, "prompt": messages[-1]["content"]}
        only = conv.test_providers(test.get("providers"), entry_name(group))  # promptfoo's per-test provider filter
        if only == []:
            continue
        entry = by_group.get(group)
        if entry is None:
            tid = base = slugify(entry_name(group))
            while any(t["id"] == tid for t in tests):
                tid = f"{base}-{sum(t['id'] == base or t['id'].startswith(base + '-') for t in tests) + 1}"
            entry = by_group[group] = {"id": tid, "conversation": [],
                                       **({"providers": only} if only is not None else {})}
            if not multi_turn and test.get("description"):
                entry["name"] = plain(str(test["description"]))
            if isinstance(test.get("threshold"), (int, float)):
                entry["threshold"] = test["threshold"]
            if own_vars and not multi_turn:
                entry["vars"] = plain(own_vars)
            if i in compared:
                entry["assert"] = compared[i]
                if len(prompts) > 1:
                    entry["matrix"] = {PROMPT_VAR: []}
            tests.append(entry)
        if i in compared and len(prompts) > 1:
            entry["matrix"][PROMPT_VAR].append(plain(messages[-1]["content"]))  # sent as it reads
            if pk > 1:
                continue  # the turn is the first prompt's, written `{{ prompt }}`
        history = messages[:-1] if not multi_turn else []
        for m in history:
            if m["role"] in ("user", "assistant"):
                entry["conversation"].append({m["role"]: literal(m["content"])})
        last = messages[-1] if messages else {"role": "user", "content": ""}
        turn: dict[str, Any] = {"user": _captured(literal(last["content"]))}  # rendered here: sent as it reads
        if i in compared and len(prompts) > 1:
            turn["user"] = "{{ " + PROMPT_VAR + " }}"
        store = (test.get("options") or {}).get("storeOutputAs") if isinstance(test.get("options"), dict) else None
        if isinstance(store, str) and store.isascii() and store.isidentifier():
            turn["capture"] = store  # promptfoo's storeOutputAs: the reply is a var of the later tests
        if own_vars and multi_turn:
            turn["vars"] = plain(own_vars)  # the turn's checks may use them
        if asserts:
            turn["assert"] = asserts
        entry["conversation"].append(turn)
    if simulated is not None and system is None and turns and turns[0][3]:
        system = turns[0][3][-1]["content"]  # the prompt is the agent's instructions; the simulated user talks
    red = redteam_tests(data["redteam"], prompts if data.get("prompts") is not None else [], conv) \
        if isinstance(data.get("redteam"), dict) else None
    if red is not None and red.system and not turns:
        system = red.system  # the prompt each attack message is sent in
    if system:  # the text, as written; a var of each test when it differs between them
        written = _system_per_test(by_group, systems, default_vars) \
            if len({systems.get(group, "") for group in by_group}) > 1 else literal(system)
        for p in providers:
            if "model" in p:
                p["system"] = written
        if not any("model" in p for p in providers):
            conv.notes.append("the prompt's system message (only model providers take `system:`)")
    suite: dict[str, Any] = {"description": plain(str(data.get("description") or f"Imported from {path.name}"))}
    if kept := {k: v for k, v in default_vars.items() if k not in HISTORY_VARS}:  # a history is in the turns
        suite["vars"] = plain(kept)
    if providers:
        suite["providers"] = providers
    every = [set(default_vars) | set(t.get("vars") or {} if isinstance(t.get("vars"), dict) else {})
             for t in tests_raw if isinstance(t, dict)] or [set(default_vars)]
    default_asserts = conv.assertions(default.get("assert"), "defaultTest", options.get("transform"), Grading(
        options.get("rubricPrompt"), any(isinstance(t, dict) and t.get("threshold") is not None for t in tests_raw),
        frozenset(set.intersection(*every)), frozenset(set.union(*every))))
    if default_asserts:
        if multi_turn:  # promptfoo checks each test's output: here, each turn
            default_asserts = [{**a, "scope": "each_turn"} for a in default_asserts]
        suite["defaults"] = {"assert": default_asserts}
    used = {k.removeprefix("not-") for t in tests for turn in t["conversation"] for a in turn.get("assert", [])
            for k in a} | {k.removeprefix("not-") for a in default_asserts for k in a} | \
        {k for t in tests for a in t.get("assert", []) for k in a}
    if used & {"conversation-relevance", "trajectory:goal-success", SELECT_BEST}:
        used.add("llm-rubric")  # judged too
    if judge is not None and "llm-rubric" in used:
        suite["judge"] = judge
    if "similar" in used and (embedder := conv.embedder(options.get("provider"))) is not None:
        suite["embedder"] = embedder  # the source's embedding model: `similar` scores as promptfoo's do
    for role, key, model in (("judge", "llm-rubric", "openai/gpt-4o-mini"),
                             ("embedder", "similar", "openai/text-embedding-3-small")):
        if key in used and role not in suite:
            suite[role] = model
            conv.notes.append(f"{role}: {model} (promptfoo's default; edit `{role}:`)")
    if simulated is not None:  # promptfoo's simulated user plays each test: a `simulate:` test
        tests = [_simulate_test(t, raw, simulated) for t, raw in zip(tests, (t for _, t, *_ in turns), strict=False)]
    attacker = None
    if red is not None:
        tests += red.tests
        provider = data["redteam"].get("provider")
        attacker = conv.judge(provider) if provider is not None else None  # promptfoo's attacker model
        if red.tests and any("llm-rubric" in a for t in red.tests for a in t["assert"]) and "judge" not in suite:
            suite["judge"] = judge if judge is not None else "openai/gpt-4o-mini"  # the red lines are judged
            if judge is None:
                conv.notes.append("judge: openai/gpt-4o-mini (promptfoo's red-team grader is its default model; "
                                  "edit `judge:`)")
    if any("simulate" in t or "attack" in t for t in tests):
        suite["simulator"] = attacker if attacker is not None else judge if isinstance(judge, str) \
            else "openai/gpt-4o-mini"
        if attacker is None:
            conv.notes.append(f"simulator: {suite['simulator']} (the simulated user and the attacker; edit "
                              "`simulator:`)")
    suite["tests"] = tests
    # promptfoo runs a test without checks to show its reply (it passes when the provider answers): such
    # tests check nothing in the source, as distinct from tests whose checks could not be converted
    unchecked = [] if default.get("assert") else [by_group[g]["id"] for g in by_group if g not in checked]
    return ImportedSuite(filename=f"{slugify(path.stem)}.yaml", data=suite, not_converted=list(dict.fromkeys(conv.notes)),
                         source=path.name, files=conv.files, unchecked=unchecked)
