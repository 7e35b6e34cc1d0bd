"""Tests from conversations (docs/en/coverage.md): `evalspec import transcripts FILE.jsonl|RUN.json -o SUITE.yaml`.

Recorded conversations (§19 JSONL) or played ones (a run.json's transcripts) become scripted draft tests:
their user turns (labelled by the source suite's `labels:` patterns, turn labels kept), the rules that
failed on them named in a comment, and with `--expect-state P` a state check per turn. A played
conversation's test replays its conditions (docs/en/importers.md#tests-from-conversations): the source
test's `vars:` (with the suite's and the matrix values), `state:` seed, `tool_results:` stubs and the
provider it was played on (whose `setup:` comes with it). A new suite gets the source suite's `defaults`,
`labels:` and providers (or a python stub when there is none); an existing suite is appended to as text,
so everything it holds — comments, layout, a `|+` block, a document end `...` — stays as it was. Tests
that would check nothing are refused (nothing written) unless `allow_empty`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalspec.authoring.importers import STUB_FILE, STUB_SOURCE, ImportRefused, dump_yaml, literal, plain
from evalspec.authoring.importers.appending import append_items, first_document
from evalspec.authoring.importers.shapes import mapping, mappings
from evalspec.core.errors import ConfigError, Problem
from evalspec.core.portable import portable

# what a test holds, besides its turns and rules, that decides what the bot answers (docs/en/state.md#seeding-and-setup)
CONDITIONS = ("vars", "state", "tool_results")


@dataclass
class Source:
    """One conversation to turn into a test: its id, user turns, states and what failed on it."""

    id: str
    turns: list[dict[str, object]]  # {"text", "label"?, "state"?}
    failed: list[str] = field(default_factory=list)
    origin: str = ""  # "provider p in run R"
    asserts: list[Any] = field(default_factory=list)  # the source test's own test-level rules, as written
    turn_asserts: dict[int, list[Any]] = field(default_factory=dict)  # user turn index -> its rules, as written
    conditions: dict[str, object] = field(default_factory=dict)  # CONDITIONS of the source test, as written
    providers: list[str] = field(default_factory=list)  # the source suite's providers it was played on


@dataclass
class SourceSuite:
    """What a new suite copies from the suite the conversations came from."""

    path: Path | None = None
    data: dict[str, object] = field(default_factory=dict)


def _problem(path: Path, message: str) -> ConfigError:
    return ConfigError([Problem(str(path), None, "", message)])


def _label(patterns: dict[str, str], turns: list[dict[str, object]]) -> None:
    """Give each `labels:` pattern's first matching user turn that label (a turn's own label is kept)."""
    from evalspec.config.recorded import label_turns

    found = label_turns(patterns, [(i, str(t["text"])) for i, t in enumerate(turns) if not t.get("label")])
    for name, i in found.items():
        if name not in {t.get("label") for t in turns}:
            turns[i]["label"] = name


def _failed_rules(record: dict[str, object]) -> list[str]:
    out = []
    for a in mappings(record.get("assertions")):
        if a.get("pass") is False:
            value = a.get("value")
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            turn = f" (turn {a['turn']})" if a.get("turn") is not None else ""
            out.append(f"{a.get('type')}: {shown}{turn} — {a.get('reason') or a.get('error') or 'failed'}")
    if record.get("status") == "error" and record.get("error"):
        out.append(f"error: {record['error']}")
    return out


def _turns_of(messages: object) -> list[dict[str, object]]:
    """User turns (with their label), each with the state of the reply that answered it."""
    turns: list[dict[str, object]] = []
    for m in mappings(messages):
        if m.get("role") == "user":
            from evalspec.config.recorded import content_text

            turn: dict[str, object] = {"text": content_text(m.get("content"))}
            if m.get("label"):
                turn["label"] = str(m["label"])
            turns.append(turn)
        elif m.get("role") == "assistant" and turns and isinstance(m.get("state"), dict):
            turns[-1]["state"] = m["state"]
    return turns


def _suite_file(run_path: Path, given: str) -> Path | None:
    """The suite a run.json names: as given (from the working folder), else beside the run or above it."""
    candidates = [Path(given)] + [p / given for p in [run_path.parent, *run_path.parent.parents]]
    return next((c for c in candidates if c.is_file()), None)


def from_run(path: Path, ids: list[str] | None, data: dict[str, Any] | None = None,
             provider: str | None = None) -> tuple[list[Source], SourceSuite]:
    """A run.json's played (or graded) conversations, one per test instance (of `provider` when given), and
    the suite they came from. `data`: the run already read from `path`."""
    from evalspec.results.runjson import read_run, untyped

    data = untyped(read_run(str(path))) if data is None else data
    suites = [s for s in data.get("suites") or [] if isinstance(s, dict) and s.get("path")]
    records = [r for r in data["results"] if isinstance(r, dict)]
    chosen = [r for r in records if (not ids or r.get("test_id") in ids or r.get("base_id") in ids)
              and (provider is None or r.get("provider") == provider)]
    if not chosen:
        wanted = f"none of {', '.join(ids)}" if ids else "no test"
        raise _problem(path, "no test to import" + (f": {wanted} is in the run" if ids else "")
                       + (f" for provider {provider}" if provider is not None else ""))
    names = {str(r.get("suite")) for r in chosen}
    if len(names) > 1:
        raise _problem(path, f"the tests come from several suites ({', '.join(sorted(names))}); "
                             "choose tests of one with --ids")
    source = SourceSuite()
    name = next(iter(names))
    entry = next((s for s in suites if s["path"] == name), None)
    found = _suite_file(path, name) if entry else None
    if found is not None:
        loaded = yaml.safe_load(found.read_text(encoding="utf-8"))
        source = SourceSuite(found, loaded if isinstance(loaded, dict) else {})
    patterns = {str(k): str(v) for k, v in mapping(source.data.get("labels")).items()}
    known = [str(p.get("id")) for p in mappings(source.data.get("providers"))]
    groups: dict[str, list[dict[str, object]]] = {}
    for r in chosen:  # the providers and repeats of one instance: one test
        groups.setdefault(str(r.get("test_id")), []).append(r)
    out = []
    for tid, group in groups.items():
        # the conversation that went wrong is the one replayed, on the providers it went wrong on
        bad = [r for r in group if r.get("status") in ("failed", "error")]
        r = (bad or group)[0]
        turns = _turns_of(r.get("transcript"))
        _label(patterns, turns)
        test = _source_test(source.data, r)
        played_on = {str(g.get("provider")) for g in bad or group}
        failed = list(dict.fromkeys(f for g in group for f in _failed_rules(g)))
        out.append(Source(tid, turns, failed, f"provider {r.get('provider')} in run {data.get('run_id')}",
                          _own_rules(test), _turn_rules(test, len(turns)), conditions_of(source.data, test, r),
                          [p for p in known if p in played_on]))
    return out, source


def _source_test(suite: dict[str, object], record: dict[str, object]) -> dict[str, object] | None:
    """The source suite's test a record was played from, as written (a matrix test's rules may name its
    matrix values: `conditions_of` gives the instance's values as vars)."""
    return next((t for t in mappings(suite.get("tests"))
                 if str(t.get("id")) in (str(record.get("test")), str(record.get("base_id")))), None)


def conditions_of(suite: dict[str, object], test: dict[str, object] | None, record: dict[str, object]) -> dict[str, object]:
    """What the conversation was played under, as the source suite writes it, so that the new test replays
    it (docs/en/importers.md#tests-from-conversations): the vars it saw (the suite's, the test's, its matrix
    instance's), the test's `state:` seed and `tool_results:` stubs. Copied as written: they are evalspec's
    own syntax already (a `${ENV}` stays a reference), never escaped as imported text."""
    out: dict[str, object] = {}
    matrix = _mapping(record.get("matrix"))
    variables = {**_mapping(suite.get("vars")), **_mapping((test or {}).get("vars")), **matrix}
    if variables:
        out["vars"] = variables
    for key in CONDITIONS[1:]:
        if test is not None and isinstance(test.get(key), dict):
            out[key] = test[key]
    return out


def _mapping(value: Any) -> dict[str, object]:
    return dict(value) if isinstance(value, dict) else {}


def _own_rules(test: dict[str, object] | None) -> list[Any]:
    """The source test's test-level `assert:` as written, so the new test checks what the source checked
    (docs/en/coverage.md, §19: never hollow)."""
    rules = test.get("assert") if test else None
    return list(rules) if isinstance(rules, list) else []


def _turn_rules(test: dict[str, object] | None, user_turns: int) -> dict[int, list[Any]]:
    """The source test's turn-level rules by user turn, when its conversation is plain `user:`/`assistant:`
    entries with as many user turns as were played (a fragment, filler or click would shift them)."""
    entries = test.get("conversation") if test else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and ("user" in e or "assistant" in e)
                                                and not {"filler", "include", "click"} & set(e) for e in entries):
        return {}
    users = [e for e in entries if "user" in e]
    if len(users) != user_turns:
        return {}
    return {i: list(e["assert"]) for i, e in enumerate(users) if isinstance(e.get("assert"), list)}


def from_jsonl(path: Path, ids: list[str] | None) -> list[Source]:
    """Recorded conversations (docs/en/recorded-conversations.md JSONL or CSV), one test each."""
    from evalspec.config.recorded import RecordedProblem, read_conversations

    try:
        found = [Source(c.id, _turns_of(c.messages), [], f"{path.name} line {c.line}")
                 for c in read_conversations(path) if not ids or c.id in ids]
    except RecordedProblem as exc:
        raise ConfigError([exc.problem]) from None
    if not found:
        raise _problem(path, "no conversation to import" + (f": none of {', '.join(ids)} is in the file" if ids else ""))
    return found


def _state_check(state: object, path: str) -> dict[str, object]:
    import jmespath

    value = jmespath.search(path, state or {})
    return {"state": {"path": path, "equals": value} if value is not None else {"path": path, "exists": False}}


def test_of(source: Source, test_id: str, expect_state: list[str]) -> dict[str, object]:
    """The draft test: the conversation's user turns (its text sent as written), the source test's rules and
    conditions, the provider it was played on."""
    conversation = []
    for i, turn in enumerate(source.turns):
        entry: dict[str, object] = {"user": literal(turn["text"])}
        if turn.get("label"):
            entry["label"] = plain(turn["label"])
        rules = list(source.turn_asserts.get(i, [])) + [literal(_state_check(turn.get("state"), p))
                                                         for p in expect_state]
        if rules:
            entry["assert"] = rules
        conversation.append(entry)
    test: dict[str, object] = {"id": test_id, "draft": True}
    if source.providers:
        test["providers"] = list(source.providers)
    test.update({key: source.conditions[key] for key in CONDITIONS if key in source.conditions})
    test["conversation"] = conversation
    if source.asserts:
        test["assert"] = source.asserts
    return test


def checks_something(source: Source, expect_state: list[str], defaults: Any) -> bool:
    """Whether the new test would check anything: its own rules, `--expect-state`, or the rules of the
    `defaults` of the suite it is written to (docs/en/recorded-conversations.md: never a hollow test)."""
    inherited = isinstance(defaults, dict) and bool(defaults.get("assert"))
    return bool(source.asserts or any(source.turn_asserts.values()) or expect_state or inherited)


def refuse_hollow(sources: list[Source], expect_state: list[str], defaults: Any, out: Path) -> None:
    """ImportRefused naming each test that would check nothing (`--allow-empty` writes them anyway)."""
    hollow = [s.id for s in sources if not checks_something(s, expect_state, defaults)]
    if hollow:
        raise ImportRefused([Problem(str(out), None, f"test '{tid}'", "would check nothing: its source has no rule "
                                     "and the suite no `defaults:` rules; give --expect-state, add rules under "
                                     "defaults: (or --allow-empty writes it anyway)") for tid in hollow])


def _comment(source: Source) -> list[str]:
    head = [f"# from {source.origin}" if source.origin else "# imported conversation"]
    if source.failed:
        head.append("# failed there:")
        head += [f"#   - {' '.join(line.split())}" for line in source.failed]
    return head


def _unique(wanted: str, taken: set[str]) -> str:
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted}-{n}" in taken:
        n += 1
    return f"{wanted}-{n}"


def _tests_text(sources: list[Source], taken: set[str], expect_state: list[str], indent: str) -> str:
    """The new tests as YAML list items (each after its comment), indented for the suite's `tests:`."""
    lines: list[str] = []
    for source in sources:
        test_id = _unique(plain(source.id), taken)
        taken.add(test_id)
        item = dump_yaml([test_of(source, test_id, expect_state)]).rstrip("\n").split("\n")
        lines += [indent + line for line in _comment(source)] + [indent + line for line in item]
    return "\n".join(lines) + "\n"


FILE_REFS = ("python", "setup", "teardown")  # provider keys holding `FILE.py:function`, relative to the suite


def _relocated(providers: list[Any], source_dir: Path, out_dir: Path) -> list[Any]:
    """The source's providers, each `FILE.py:fn` (`python:`, `setup:`, `teardown:`) made relative to the new
    suite's folder."""
    out = []
    for p in providers:
        if isinstance(p, dict):
            moved = {}
            for key in FILE_REFS:
                if isinstance(p.get(key), str) and ".py:" in p[key] and "{{" not in p[key]:
                    file, _, fn = p[key].rpartition(":")
                    file = portable((source_dir / file).absolute(), out_dir)  # an absolute one too: files stay portable
                    moved[key] = f"{file}:{fn}"
            p = {**p, **moved}
        out.append(p)
    return out


def new_suite(sources: list[Source], source: SourceSuite, out: Path, expect_state: list[str],
              given: str) -> tuple[str, dict[str, str], list[str]]:
    """A new suite's text, the extra files to write beside it, and notes for stderr."""
    data = source.data
    given = portable(Path(given).absolute(), out.parent)  # never this machine's absolute path (docs/en/importers.md#portable-files)
    head: dict[str, object] = {"description": f"Tests from conversations in {given}"}
    notes: list[str] = []
    files: dict[str, str] = {}
    providers = data.get("providers")
    if isinstance(providers, list) and providers and source.path is not None:
        head["providers"] = _relocated(providers, source.path.parent, out.parent)
    else:
        head["providers"] = [{"id": "stub", "python": f"{STUB_FILE}:respond"}]
        files[STUB_FILE] = STUB_SOURCE
        notes.append(f"no system under test in the source: edit {STUB_FILE} or the providers entry")
    for key in ("labels", "defaults"):
        if isinstance(data.get(key), dict) and data[key]:
            head[key] = data[key]
    for key in ("judge", "simulator", "embedder"):  # what the copied rules may need to be graded
        if data.get(key) is not None:
            head[key] = data[key]
    if not mapping(head.get("defaults")).get("assert") and not expect_state and not any(s.asserts or s.turn_asserts for s in sources):
        notes.append("the tests check nothing yet: add rules under defaults: or give --expect-state")
    top = [f"# Imported by evalspec from {given}" + (f" (suite {portable(source.path.absolute(), out.parent)})" if source.path else "")]
    top += [f"# Note: {n}" for n in notes]
    text = "\n".join(top) + "\n" + dump_yaml(head) + "tests:\n" + _tests_text(sources, set(), expect_state, "  ")
    return text, files, notes


def append_text(text: str, sources: list[Source], expect_state: list[str], name: str = "",
                providers: list[Any] | None = None) -> str:
    """`text` (an existing suite) with the new tests added at the end of its `tests:` list, and `providers`
    (entries it lacks, for the tests to run on) at the end of its `providers:`; untouched otherwise."""
    if providers:
        text = append_items(text, "providers", lambda indent: _items_text(providers, indent), name)
    loaded = first_document(text) or {}
    tests = loaded.get("tests") if isinstance(loaded, dict) else None
    taken = {str(t["id"]) for t in tests or [] if isinstance(t, dict) and t.get("id") is not None}
    return append_items(text, "tests", lambda indent: _tests_text(sources, taken, expect_state, indent), name)


def _items_text(items: list[Any], indent: str) -> str:
    return "".join(indent + line + "\n" for line in dump_yaml(items).rstrip("\n").split("\n"))


def _missing_providers(sources: list[Source], source: SourceSuite, target: dict[str, object],
                       out: Path) -> tuple[list[Any], list[str]]:
    """The source's providers the tests run on that the target suite lacks (to add to it, relocated), and
    a note for each one it has under the same id with another configuration."""
    wanted = {p for s in sources for p in s.providers}
    if not wanted or source.path is None:
        return [], []
    listed = source.data.get("providers")
    entries = [p for p in _relocated(list(listed) if isinstance(listed, list) else [], source.path.parent, out.parent)
               if isinstance(p, dict) and str(p.get("id")) in wanted]
    have = {str(p.get("id")): p for p in mappings(target.get("providers"))}
    notes = [f"provider '{p['id']}' of {out} is not the one the conversation was played on ({source.path}): "
             "the test runs on the suite's" for p in entries if str(p.get("id")) in have and have[str(p["id"])] != p]
    return [p for p in entries if str(p.get("id")) not in have], notes


def import_transcripts(given: Path, out: Path, ids: list[str] | None = None,
                       expect_state: list[str] | None = None, allow_empty: bool = False) -> tuple[list[Path], list[str]]:
    """Write (or extend) `out` with draft tests from the conversations in `given`; the paths written and notes."""
    states = [p for p in expect_state or [] if p]
    if given.suffix.lower() == ".json":
        sources, source = from_run(given, ids)
    else:
        sources, source = from_jsonl(given, ids), SourceSuite()
    return write_tests(sources, source, out, states, str(given), allow_empty)


def write_tests(sources: list[Source], source: SourceSuite, out: Path, states: list[str],
                given: str, allow_empty: bool = False) -> tuple[list[Path], list[str]]:
    """Append the tests to `out`, or write it as a new suite (with a stub provider when needed). Tests that
    would check nothing are refused (ImportRefused, nothing written) unless `allow_empty`."""
    if out.exists():
        text = out.read_text(encoding="utf-8")
        try:
            target = first_document(text)
        except yaml.YAMLError as exc:
            raise _problem(out, f"not a readable suite to append to ({' '.join(str(exc).split())})") from None
        target = target if isinstance(target, dict) else {}
        if not allow_empty:
            refuse_hollow(sources, states, target.get("defaults"), out)
        providers, notes = _missing_providers(sources, source, target, out)
        out.write_text(append_text(text, sources, states, str(out), providers), encoding="utf-8")
        return [out], notes
    if not allow_empty:
        refuse_hollow(sources, states, source.data.get("defaults"), out)
    text, files, notes = new_suite(sources, source, out, states, given)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    written = [out]
    for name, content in files.items():
        extra = out.parent / name
        if not extra.exists():
            extra.write_text(content, encoding="utf-8")
            written.append(extra)
    return written, notes
