"""Recorded conversations (docs/en/recorded-conversations.md): a suite's `transcripts:` (JSONL in OpenAI chat format, or CSV) read
one conversation at a time, each a test graded by the suite's `defaults` as if it had been played.

Nothing is called: the provider of every recorded conversation is `recorded`. The files are read again
on every walk of the plan (its length, its keys, its instances), so memory stays flat however many
conversations they hold; a `sample:` is drawn once (seeded) from the conversations `where:` keeps.
"""

from __future__ import annotations

import csv
import glob
import itertools
import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec.config.model import ProviderSpec, Suite, TestSpec, TranscriptsSpec, TurnSpec
from evalspec.config.repeats import Repeats, lines_in
from evalspec.core.errors import ConfigError, ControlFlow, Problem
from evalspec.extend.provider import REASON_WORDS, normalize_finish_reason
from evalspec.extend.replies import holds_reply, message_text

RECORDED = ProviderSpec(id="recorded", kind="recorded", config={})
ROLES = ("user", "assistant", "tool", "system")
CSV_COLUMNS = ("conversation_id", "turn", "role", "content")
# columns of a CSV row that belong to its message, not to the conversation's metadata
CSV_MESSAGE_COLUMNS = ("tool_calls", "tool_call_id")


@dataclass
class Conversation:
    """One recorded conversation as read: where it is (file, line) and its fields."""

    id: str
    messages: list[dict[str, Any]]
    metadata: dict[str, Any]
    file: str
    line: int


class RecordedProblem(ControlFlow):
    """A conversation that cannot be read: file, line and what is wrong."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        super().__init__(message)
        self.problem = Problem(file, line, "", message)


def files_of(suite: Suite, override: str | None = None) -> list[Path]:
    """The files `transcripts.path` (or `--transcripts PATH`, relative to the working folder) names."""
    source = suite.transcripts
    assert source is not None
    pattern = override if override is not None else source.path
    base = Path.cwd() if override is not None else suite.path.parent
    full = pattern if Path(pattern).is_absolute() else str(base / pattern)
    found = sorted(Path(p) for p in glob.glob(full, recursive=True) if Path(p).is_file())
    if not found:
        given = f"--transcripts {override}" if override is not None else f"transcripts.path {source.path!r}"
        where = suite.lines.problem(source.at + ("path",), "") if suite.lines and override is None else None
        raise ConfigError([Problem(str(suite.path), where.line if where else None, where.path if where else "",
                                   f"{given}: no file matches {full}; give a JSONL or CSV file of recorded "
                                   "conversations (or a glob)")])
    return found


class BadToolCalls(ControlFlow):
    """A message's `tool_calls` that cannot be read (the caller names the file and line)."""


def tool_calls_of(raw: Any, message: int) -> list[dict[str, Any]]:
    """An assistant message's recorded tool calls as the transcript holds played ones: `{id, name,
    arguments}` with the arguments an object. Read from evalspec's flat form (`{id, name, arguments}`) or
    OpenAI's (`{id, type: function, function: {name, arguments}}`); arguments given as text are JSON
    text (docs/en/recorded-conversations.md#tool-calls). `message`: the message's number, for ids."""
    if not isinstance(raw, list):
        raise BadToolCalls(f"tool_calls is {type(raw).__name__}; expected a list of calls "
                           '({"id", "type": "function", "function": {"name", "arguments"}} or {"id", "name", "arguments"})')
    calls = []
    for i, call in enumerate(raw, 1):
        if not isinstance(call, dict):
            raise BadToolCalls(f"tool call {i} is {type(call).__name__}; expected a mapping with a name and arguments")
        function = call["function"] if isinstance(call.get("function"), dict) else call
        name = function.get("name")
        if not isinstance(name, str) or not name.strip():
            shown = json.dumps(call, ensure_ascii=False, default=str)[:200]
            raise BadToolCalls(f"tool call {i} has no name (expected 'name', or 'function': {{'name', 'arguments'}}): "
                               f"{shown}")
        args = function.get("arguments", function.get("args"))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as exc:
                raise BadToolCalls(f"tool call {i} ({name}): arguments are not valid JSON text ({exc.msg} at "
                                   f"column {exc.colno}): {args[:200]!r}") from None
        calls.append({"id": str(call.get("id") or f"call_m{message}_{i}"), "name": name,
                      "arguments": {} if args is None else args})
    return calls


def _content(value: Any) -> str | None:
    """OpenAI content as text: a text, a list of parts (the texts they carry), None when it holds no
    text (null, absent, parts without text: `evalspec.extend.replies.message_text`); other values as JSON."""
    if value is None or isinstance(value, (str, list)):
        return message_text(value)
    return json.dumps(value, ensure_ascii=False)


def _jsonl(path: Path) -> Iterator[Conversation]:
    with path.open(encoding="utf-8-sig") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordedProblem(str(path), number, f"not a JSON line ({exc.msg}); each line is "
                                      '{"id": ..., "messages": [{"role": ..., "content": ...}], "metadata": {...}}') from None
            if not isinstance(row, dict) or not isinstance(row.get("messages"), list):
                raise RecordedProblem(str(path), number, "a recorded conversation needs 'messages': a list of "
                                      '{"role": "user"|"assistant"|"tool"|"system", "content": ...}')
            metadata: dict[str, Any] = row["metadata"] if isinstance(row.get("metadata"), dict) else {}
            cid = row.get("id", metadata.get("id", f"{path.stem}-{number}"))
            yield Conversation(str(cid), row["messages"], dict(metadata), str(path), number)


def _csv(path: Path) -> Iterator[Conversation]:
    """Rows `conversation_id, turn, role, content` (+ metadata columns), grouped by conversation id in
    the order the ids first appear; rows of one conversation in `turn` order."""
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise RecordedProblem(str(path), 1, f"missing column(s) {', '.join(missing)}: a CSV of recorded "
                                  f"conversations has {', '.join(CSV_COLUMNS)} (+ any metadata columns)")
        groups: dict[str, tuple[int, dict[str, Any], list[tuple[float, int, dict[str, Any]]]]] = {}
        for number, row in enumerate(reader, 2):
            cid = str(row["conversation_id"])
            first, metadata, rows = groups.setdefault(cid, (number, {}, []))
            try:
                order = float(row["turn"] or 0)
            except ValueError:
                raise RecordedProblem(str(path), number, f"turn {row['turn']!r} is not a number") from None
            # a CSV has no null: an empty content cell is no text (an assistant row without it is no reply)
            message: dict[str, Any] = {"role": row["role"], "content": row["content"] or None}
            if row.get("tool_calls"):  # a JSON list of calls in one cell, checked here to name its row
                try:
                    message["tool_calls"] = json.loads(row["tool_calls"])
                    tool_calls_of(message["tool_calls"], number)
                except json.JSONDecodeError as exc:
                    raise RecordedProblem(str(path), number, f"tool_calls cell is not JSON ({exc.msg}); write the "
                                          'calls as a JSON list: [{"id": ..., "type": "function", "function": '
                                          '{"name": ..., "arguments": "..."}}]') from None
                except BadToolCalls as exc:
                    raise RecordedProblem(str(path), number, f"conversation '{cid}': {exc}") from None
            if row.get("tool_call_id"):
                message["tool_call_id"] = row["tool_call_id"]
            rows.append((order, number, message))
            metadata.update({k: v for k, v in row.items()
                             if k not in CSV_COLUMNS + CSV_MESSAGE_COLUMNS and v not in (None, "")})
    for cid, (first, metadata, rows) in groups.items():
        yield Conversation(cid, [m for *_, m in sorted(rows, key=lambda r: (r[0], r[1]))], metadata, str(path), first)


def _read(path: Path) -> Iterator[Conversation]:
    return _csv(path) if path.suffix.lower() == ".csv" else _jsonl(path)


def read_conversations(path: Path) -> Iterator[Conversation]:
    """Every conversation of one JSONL or CSV file, in file order (`evalspec import transcripts`, docs/en/coverage.md)."""
    return _read(path)


def content_text(value: Any) -> str:
    """An OpenAI message content as text (a list of parts: their text; None: empty)."""
    return _content(value) or ""


def _kept(conversation: Conversation, where: Mapping[str, object]) -> bool:
    return all(str(conversation.metadata.get(k)) == str(v) for k, v in where.items())


def conversations(suite: Suite, override: str | None = None) -> Iterator[Conversation]:
    """The suite's recorded conversations that `where:` keeps, in file order (a `sample:` of them). A
    conversation whose id an earlier one has is a RecordedProblem where the walk reaches it."""
    source = suite.transcripts
    assert source is not None
    files = files_of(suite, override)
    chosen = _sample(source, files) if source.sample is not None else None
    repeat = _first_repeat(files)
    index = 0
    for number, path in enumerate(files):
        for conversation in _read(path):
            if repeat is not None and (number, conversation.line) == repeat[2]:
                _, (before, line), _ = repeat
                where = f"line {line}" if before == number else f"{files[before]} line {line}"
                raise RecordedProblem(conversation.file, conversation.line,
                                      f"conversation id {conversation.id!r} is also the id of the conversation at "
                                      f"{where}: each recorded conversation needs its own id")
            if not _kept(conversation, source.where):
                continue
            if chosen is None or index in chosen:
                yield conversation
            index += 1


Place = tuple[int, int]  # a conversation's file (its number among the files) and line
_REPEATS: dict[tuple[tuple[str, int, int], ...], tuple[str, Place, Place] | None] = {}


def _first_repeat(files: list[Path]) -> tuple[str, Place, Place] | None:
    """The first conversation whose id an earlier one has, (id, the earlier's place, its place), or None: two
    conversations with one id would merge into one verdict (docs/en/reports-and-gate.md#nothing-checked-is-not-a-pass
    "Identity and layout"). Found once per process for the files as they are, with `Repeats` (a fixed small
    memory however many conversations they hold, docs/en/scale-and-ray.md#memory), not on every walk."""
    key = _stamp(files)
    if key not in _REPEATS:
        ids: Repeats[Place] = Repeats(lines_in(files))
        for cid, _ in _ids(files):
            ids.add(cid)
        _REPEATS[key] = next(ids.found(_ids(files)), None)
    return _REPEATS[key]


def _ids(files: list[Path]) -> Iterator[tuple[str, Place]]:
    """Each conversation's id and place, up to the first that cannot be read (the walk names it there)."""
    try:
        for number, path in enumerate(files):
            for conversation in _read(path):
                yield conversation.id, (number, conversation.line)
    except (RecordedProblem, OSError, ValueError, csv.Error):
        return


def _stamp(files: list[Path]) -> tuple[tuple[str, int, int], ...]:
    """The files as they are now: a file written again is read again."""
    stats = [p.stat() for p in files]
    return tuple((str(p), s.st_mtime_ns, s.st_size) for p, s in zip(files, stats, strict=True))


_SAMPLES: dict[tuple[Any, ...], frozenset[int]] = {}


def _sample(source: TranscriptsSpec, files: list[Path]) -> frozenset[int]:
    """The positions of a seeded random sample among the kept conversations (drawn once per process)."""
    key = (_stamp(files), source.sample, source.seed, json.dumps(source.where, sort_keys=True, default=str))
    if key not in _SAMPLES:
        total = sum(1 for p in files for c in _read(p) if _kept(c, source.where))
        _SAMPLES[key] = frozenset(random.Random(source.seed).sample(range(total), min(int(source.sample or 0), total)))
    return _SAMPLES[key]


def test_of(suite: Suite, conversation: Conversation, index: int) -> TestSpec:
    """A recorded conversation as a test: its turns, the suite's `defaults` as its checks."""
    source = suite.transcripts
    assert source is not None
    name = conversation.metadata.get("name")
    test = TestSpec(id=conversation.id, name=str(name) if name else conversation.id, index=index,
                    tags=list(source.tags), asserts=source.asserts, threshold=source.threshold,
                    where=("transcripts",), recorded="file", metadata=conversation.metadata)
    called: dict[str, str] = {}  # call id -> tool name, to name the results
    for k, message in enumerate(conversation.messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            role = message.get("role") if isinstance(message, dict) else message
            raise RecordedProblem(conversation.file, conversation.line,
                                  f"conversation '{conversation.id}', message {k + 1}: role {role!r} is not one of "
                                  f"{', '.join(ROLES)}")
        role = message["role"]
        if role == "system":
            continue
        extras = {key: message[key] for key in ("tool_calls", "tool_call_id", "name", "state", "parts")
                  if message.get(key) is not None and (key in ("state", "parts") or message.get(key))}
        if "tool_calls" in extras:
            try:
                extras["tool_calls"] = tool_calls_of(extras["tool_calls"], k + 1)
            except BadToolCalls as exc:
                raise RecordedProblem(conversation.file, conversation.line,
                                      f"conversation '{conversation.id}', message {k + 1}: {exc}") from None
            called.update((c["id"], c["name"]) for c in extras["tool_calls"])
        if role == "tool" and "name" not in extras and str(extras.get("tool_call_id")) in called:
            extras["name"] = called[str(extras["tool_call_id"])]
        finish = message.get("finish_reason")
        if role == "assistant" and finish is not None:  # why the model stopped, as providers record it
            if (word := normalize_finish_reason(finish)) is None:
                raise RecordedProblem(conversation.file, conversation.line,
                                      f"conversation '{conversation.id}', message {k + 1}: finish_reason "
                                      f"{finish!r} is not a word ({', '.join(REASON_WORDS)})")
            extras["finish_reason"] = word
        text = _content(message.get("content"))
        spec = TurnSpec(kind=role, text=text or "", message=extras or None,
                        no_reply_ok=role == "user" and message.get("no_reply") == "ok")
        if role == "assistant" and not holds_reply(text, message.get("tool_calls"), message.get("parts")):
            spec.no_reply = (f"message {k + 1} has no content (null, absent"
                             f"{', an empty cell' if conversation.file.lower().endswith('.csv') else ''}) "
                             "and no tool_calls")
        test.conversation.append(spec)
    return test


def label_turns(patterns: dict[str, str], texts: list[tuple[int, str]]) -> dict[str, int]:
    """Each label: the first user turn whose text matches its pattern (labels that match none are absent)."""
    from evalspec.extend.patterns import search

    found: dict[str, int] = {}
    for label, pattern in patterns.items():
        for turn, text in texts:
            if search(pattern, text):
                found[label] = turn
                break
    return found


def recorded_user_texts(suite: Suite, most: int = 50) -> list[str]:
    """What the users said in the first `most` recorded conversations of the suite's `transcripts:`, for
    choosing the language its screens speak (docs/en/reports-and-gate.md#language); [] when none can be read
    (an unreadable log is reported where it is read)."""
    if getattr(suite, "transcripts", None) is None:
        return []
    said: list[str] = []
    try:
        for conversation in itertools.islice(conversations(suite), most):
            said += [str(m.get("content") or "") for m in conversation.messages
                     if isinstance(m, dict) and m.get("role") == "user"]
    except (ConfigError, ControlFlow):
        return said
    return said
