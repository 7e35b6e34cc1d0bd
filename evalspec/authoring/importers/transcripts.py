"""Tests from conversations (SPEC §25): `evalspec import transcripts FILE.jsonl|RUN.json -o SUITE.yaml`.

Recorded conversations (§19 JSONL) or played ones (a run.json's transcripts) become scripted draft tests:
their user turns (labelled by the source suite's `labels:` patterns, turn labels kept), the rules that
failed on them named in a comment, and with `--expect-state P` a state check per turn. A new suite gets
the source suite's `defaults`, `labels:` and providers (or a python stub when there is none); an
existing suite is appended to as text, so everything it holds — comments, layout — stays as it was.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalspec.authoring.importers import STUB_FILE, STUB_SOURCE, dump_yaml, literal
from evalspec.core.errors import ConfigError, Problem


@dataclass
class Source:
    """One conversation to turn into a test: its id, user turns, states and what failed on it."""

    id: str
    turns: list[dict[str, Any]]  # {"text", "label"?, "state"?}
    failed: list[str] = field(default_factory=list)
    origin: str = ""  # "provider p in run R"
    asserts: list[Any] = field(default_factory=list)  # the source test's own test-level rules, as written
    turn_asserts: dict[int, list[Any]] = field(default_factory=dict)  # user turn index -> its rules, as written


@dataclass
class SourceSuite:
    """What a new suite copies from the suite the conversations came from."""

    path: Path | None = None
    data: dict[str, Any] = field(default_factory=dict)


def _problem(path: Path, message: str) -> ConfigError:
    return ConfigError([Problem(str(path), None, "", message)])


def _label(patterns: dict[str, str], turns: list[dict[str, Any]]) -> None:
    """Give each `labels:` pattern's first matching user turn that label (a turn's own label is kept)."""
    from evalspec.config.recorded import label_turns

    found = label_turns(patterns, [(i, str(t["text"])) for i, t in enumerate(turns) if not t.get("label")])
    for name, i in found.items():
        if name not in {t.get("label") for t in turns}:
            turns[i]["label"] = name


def _failed_rules(record: dict[str, Any]) -> list[str]:
    out = []
    for a in record.get("assertions") or []:
        if isinstance(a, dict) and a.get("pass") is False:
            value = a.get("value")
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            turn = f" (turn {a['turn']})" if a.get("turn") is not None else ""
            out.append(f"{a.get('type')}: {shown}{turn} — {a.get('reason') or a.get('error') or 'failed'}")
    if record.get("status") == "error" and record.get("error"):
        out.append(f"error: {record['error']}")
    return out


def _turns_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """User turns (with their label), each with the state of the reply that answered it."""
    turns: list[dict[str, Any]] = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "user":
            from evalspec.config.recorded import content_text

            turn: dict[str, Any] = {"text": content_text(m.get("content"))}
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
    from evalspec.results.runjson import read_run

    data = read_run(str(path)) if data is None else data
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
    patterns = {str(k): str(v) for k, v in (source.data.get("labels") or {}).items()}
    out: dict[str, Source] = {}
    for r in chosen:
        tid = str(r.get("test_id"))
        if tid in out:  # another provider or repeat of the same instance: one test, its failures added
            out[tid].failed += [f for f in _failed_rules(r) if f not in out[tid].failed]
            continue
        turns = _turns_of(r.get("transcript") or [])
        _label(patterns, turns)
        test = _source_test(source.data, r)
        out[tid] = Source(tid, turns, _failed_rules(r), f"provider {r.get('provider')} in run {data.get('run_id')}",
                          _own_rules(test), _turn_rules(test, len(turns)))
    return list(out.values()), source


def _source_test(suite: dict[str, Any], record: dict[str, Any]) -> dict[str, Any] | None:
    """The source suite's test a record was played from, as written; None for a matrix test, whose rules
    may name its matrix values."""
    test = next((t for t in suite.get("tests") or [] if isinstance(t, dict)
                 and str(t.get("id")) in (str(record.get("test")), str(record.get("base_id")))), None)
    return None if test is None or test.get("matrix") else test


def _own_rules(test: dict[str, Any] | None) -> list[Any]:
    """The source test's test-level `assert:` as written, so the new test checks what the source checked
    (SPEC §25, §19: never hollow)."""
    return list(test["assert"]) if test and isinstance(test.get("assert"), list) else []


def _turn_rules(test: dict[str, Any] | None, user_turns: int) -> dict[int, list[Any]]:
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
    """Recorded conversations (SPEC §19 JSONL or CSV), one test each."""
    from evalspec.config.recorded import RecordedProblem, read_conversations

    try:
        found = [Source(c.id, _turns_of(c.messages), [], f"{path.name} line {c.line}")
                 for c in read_conversations(path) if not ids or c.id in ids]
    except RecordedProblem as exc:
        raise ConfigError([exc.problem]) from None
    if not found:
        raise _problem(path, "no conversation to import" + (f": none of {', '.join(ids)} is in the file" if ids else ""))
    return found


def _state_check(state: dict[str, Any] | None, path: str) -> dict[str, Any]:
    import jmespath

    value = jmespath.search(path, state or {})
    return {"state": {"path": path, "equals": value} if value is not None else {"path": path, "exists": False}}


def test_of(source: Source, test_id: str, expect_state: list[str]) -> dict[str, Any]:
    conversation = []
    for i, turn in enumerate(source.turns):
        entry: dict[str, Any] = {"user": literal(turn["text"])}
        if turn.get("label"):
            entry["label"] = turn["label"]
        rules = list(source.turn_asserts.get(i, [])) + [_state_check(turn.get("state"), p) for p in expect_state]
        if rules:
            entry["assert"] = rules
        conversation.append(entry)
    test: dict[str, Any] = {"id": test_id, "draft": True, "conversation": conversation}
    if source.asserts:
        test["assert"] = source.asserts
    return test


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
        test_id = _unique(source.id, taken)
        taken.add(test_id)
        item = dump_yaml([test_of(source, test_id, expect_state)]).rstrip("\n").split("\n")
        lines += [indent + line for line in _comment(source)] + [indent + line for line in item]
    return "\n".join(lines) + "\n"


def _relocated(providers: list[Any], source_dir: Path, out_dir: Path) -> list[Any]:
    """The source's providers, a `python: FILE.py:fn` made relative to the new suite's folder."""
    out = []
    for p in providers:
        if isinstance(p, dict) and isinstance(p.get("python"), str) and ".py:" in p["python"]:
            file, _, fn = p["python"].rpartition(":")
            if not Path(file).is_absolute():
                file = os.path.relpath((source_dir / file).resolve(), out_dir.resolve()).replace(os.sep, "/")
            p = {**p, "python": f"{file}:{fn}"}
        out.append(p)
    return out


def new_suite(sources: list[Source], source: SourceSuite, out: Path, expect_state: list[str],
              given: str) -> tuple[str, dict[str, str], list[str]]:
    """A new suite's text, the extra files to write beside it, and notes for stderr."""
    data = source.data
    head: dict[str, Any] = {"description": f"Tests from conversations in {given}"}
    notes: list[str] = []
    files: dict[str, str] = {}
    providers = data.get("providers") if isinstance(data.get("providers"), list) else None
    if providers and source.path is not None:
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
    if not (head.get("defaults") or {}).get("assert") and not expect_state and not any(s.asserts or s.turn_asserts for s in sources):
        notes.append("the tests check nothing yet: add rules under defaults: or give --expect-state")
    top = [f"# Imported by evalspec from {given}" + (f" (suite {source.path})" if source.path else "")]
    top += [f"# Note: {n}" for n in notes]
    text = "\n".join(top) + "\n" + dump_yaml(head) + "tests:\n" + _tests_text(sources, set(), expect_state, "  ")
    return text, files, notes


_TOP_KEY = re.compile(r"^[A-Za-z_][\w-]*\s*:")


def append_text(text: str, sources: list[Source], expect_state: list[str], name: str = "") -> str:
    """`text` (an existing suite) with the new tests added at the end of its `tests:` list, untouched otherwise."""
    loaded = yaml.safe_load(text) or {}
    tests = loaded.get("tests") if isinstance(loaded, dict) else None
    taken = {str(t["id"]) for t in tests or [] if isinstance(t, dict) and t.get("id") is not None}
    lines = text.rstrip("\n").split("\n") if text.strip() else []
    start = next((i for i, line in enumerate(lines) if re.match(r"^tests\s*:", line)), None)
    if start is None:  # no tests yet: a `tests:` list at the end
        return "\n".join([*lines, "tests:"]) + "\n" + _tests_text(sources, taken, expect_state, "  ")
    inline = lines[start].split(":", 1)[1].split(" #", 1)[0].strip()
    if inline in ("[]", "~", "null"):
        lines[start] = lines[start].replace(" " + inline, "", 1).replace(inline, "", 1).rstrip()
    elif inline:
        raise ConfigError([Problem(name, start + 1, "tests", "the tests are written inline (tests: [...]); "
                                   "write them as a block list (one '- ' item a test) to append to them")])
    indent = next((m.group(1) for line in lines[start + 1:] if (m := re.match(r"^(\s*)- ", line))), "  ")
    return _insert(lines, start, _tests_text(sources, taken, expect_state, indent))


def _insert(lines: list[str], start: int, block: str) -> str:
    """Put `block` after the last line of the top-level key at `start` (before the next top-level key)."""
    end = next((i for i in range(start + 1, len(lines)) if _TOP_KEY.match(lines[i])), len(lines))
    while end > start + 1 and (not lines[end - 1].strip() or (end < len(lines) and lines[end - 1].startswith("#"))):
        end -= 1  # blank lines (and, before another key, its comments) stay after the new tests
    before, after = lines[:end], lines[end:]
    out = "\n".join(before).rstrip("\n") + "\n" + block
    return out + "\n".join(after) + "\n" if after else out


def import_transcripts(given: Path, out: Path, ids: list[str] | None = None,
                       expect_state: list[str] | None = None) -> tuple[list[Path], list[str]]:
    """Write (or extend) `out` with draft tests from the conversations in `given`; the paths written and notes."""
    states = [p for p in expect_state or [] if p]
    if given.suffix.lower() == ".json":
        sources, source = from_run(given, ids)
    else:
        sources, source = from_jsonl(given, ids), SourceSuite()
    return write_tests(sources, source, out, states, str(given))


def write_tests(sources: list[Source], source: SourceSuite, out: Path, states: list[str],
                given: str) -> tuple[list[Path], list[str]]:
    """Append the tests to `out`, or write it as a new suite (with a stub provider when needed)."""
    if out.exists():
        out.write_text(append_text(out.read_text(encoding="utf-8"), sources, states, str(out)), encoding="utf-8")
        return [out], []
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
