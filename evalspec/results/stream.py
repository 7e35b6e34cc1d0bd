"""A large run without every transcript in memory (docs/en/scale-and-ray.md).

While a run plays, each finished record goes to the journal and only its light form (no transcript,
no assertion details) stays in memory for the aggregates. Afterwards `run["results"]` is a
`JournalRecords`: the full records in plan order, read back from the journal one at a time. What changes
a record after the run (a carried-over triage, a suggested attribution) goes through `update_record`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar, cast, overload

from evalspec.results.journal import decode, encode
from evalspec.results.rundata import Record

#: a record: a `Record`, or a dict from code that does not type it yet
R = TypeVar("R", bound=Mapping[str, Any])


class Fold(Protocol):
    """One aggregate of a run's records made as they pass by once: `add` each record, in order, then ask
    the fold for its figure. `aggregate.finalize` feeds every aggregate from one pass over the light
    records (each pass over a large run's decodes every row, docs/en/scale-and-ray.md#memory); what a
    fold holds grows with the tests, never with the records."""

    def add(self, record: Mapping[str, Any]) -> None: ...


F = TypeVar("F", bound=Fold)


def fed(records: Iterable[Mapping[str, Any]], fold: F) -> F:
    """`fold` with every record of `records` added: one aggregate alone, from its own pass."""
    for r in records:
        fold.add(r)
    return fold


HEAVY = frozenset({"transcript", "assertions", "description", "error", "teardown", "key", "test_id", "tags",
                   "threshold", "duration_ms", "stop_reason", "measured"})
ALWAYS = frozenset({"suite", "base_id", "test", "name", "provider", "status", "score", "matrix", "curve"})


def light(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the aggregates (verdicts, curves, metrics, summary, attacks) read of a record: no transcript,
    no assertion details, and no field that is empty (they read those with `.get`)."""
    out = {k: v for k, v in record.items() if k not in HEAVY and (v or k in ALWAYS or isinstance(v, str))}
    if record.get("reduce"):  # a reduced test is passed by its threshold (docs/en/recorded-conversations.md)
        out["threshold"] = record.get("threshold")
    teardown = record.get("teardown")
    if isinstance(teardown, dict) and teardown.get("ok") is False:  # the summary names failed teardowns
        out["teardown"] = {"ok": False, "error": teardown.get("error")}
    kept = [_light_check(a) for a in record.get("assertions", [])
            if a.get("metric") or a.get("severity") == "critical" or a.get("jury") or _compared(a)]
    if kept:
        out["assertions"] = kept
    return out


def _light_check(a: Mapping[str, Any]) -> dict[str, object]:
    """A check as the metric scoreboard reads it (metric, score, pass), or the red lines (a critical rule:
    its rule, turn, scope, pass, skipped and `max_rate`, docs/en/statistics.md#red-lines-as-bounds)."""
    out: dict[str, object] = {"metric": a.get("metric"), "score": a.get("score"), "pass": a.get("pass")}
    if a.get("severity") == "critical":
        out.update({k: a[k] for k in ("severity", "type", "value", "turn", "skipped", "max_rate", "scope") if k in a})
    if a.get("jury"):  # a jury's votes: its members' agreement (docs/en/judges.md#juries)
        out.update({k: a[k] for k in ("type", "value", "turn", "jury") if k in a})
    if pair := _compared(a):  # a pairwise outcome (docs/en/judges.md#comparing-two-bot-versions-pairwise)
        out.update({k: a[k] for k in ("type", "value", "turn") if k in a})
        out["details"] = {"pairwise": {k: pair.get(k) for k in ("outcome", "against")}}
    return _shared(out)


def _compared(a: Mapping[str, Any]) -> Mapping[str, Any] | None:
    pair = (a.get("details") or {}).get("pairwise")
    return pair if isinstance(pair, dict) else None


_SHARED: dict[tuple[tuple[str, type, object], ...], dict[str, object]] = {}
_SHARED_MOST = 10_000


def _shared(check: dict[str, object]) -> dict[str, object]:
    """One dict for every equal light check (a million conversations under the same rules pass the same
    checks the same way): the aggregates only read them (docs/en/scale-and-ray.md#memory)."""
    try:
        key = tuple((k, type(v), v) for k, v in check.items())  # 1 is not 1.0 nor True
        return _SHARED.setdefault(key, check) if len(_SHARED) < _SHARED_MOST else _SHARED.get(key, check)
    except TypeError:  # a list among its values
        return check


class RowFile:
    """Rows appended to an anonymous temporary file, one JSON line each, read back by the byte offset
    `append` gave: where the caller keeps the offsets (a run's `Kept`, by plan position), no offsets
    array of its own."""

    def __init__(self) -> None:
        self._fh: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115  (open as long as the rows are)
        self._end = 0
        self._at_end = True

    def append(self, row: Mapping[str, Any]) -> int:
        return self.append_line(encode(row) + b"\n")

    def append_line(self, line: bytes) -> int:
        """Append a row already encoded (its JSON text and a newline); returns its offset."""
        if not self._at_end:
            self._fh.seek(self._end)
            self._at_end = True
        self._fh.write(line)
        at, self._end = self._end, self._end + len(line)
        return at

    def read_line(self, at: int) -> bytes:
        """The row at byte `at` as stored: its JSON text and the newline."""
        return self.reading(at).readline()

    def reading(self, at: int) -> IO[bytes]:
        """The file, at byte `at`, to read on from there (the next `append` goes back to its end)."""
        self._at_end = False
        self._fh.seek(at)
        return self._fh

    def close(self) -> None:
        with contextlib.suppress(OSError):  # rows no one will read: a full disk has been reported where it struck
            self._fh.close()


class DiskRows(Sequence[dict[str, Any]]):
    """Rows (light records, verdicts) kept in an anonymous temporary file, one JSON line each, with the
    offset of every `STRIDE`-th row in an array of 8-byte ints (a quarter of a byte a row: a million rows
    keep 250 KB, not 8 MB; docs/en/scale-and-ray.md#memory). Iterating reads the file in blocks; reading
    row i seeks to its stride's first row and reads on. A row read is a new dict each time, so a change
    goes through `update` (kept by position, applied on every read)."""

    BLOCK = 1 << 20
    STRIDE = 32

    def __init__(self, rows: Iterable[Mapping[str, Any]] = ()) -> None:
        self._file = RowFile()
        self._marks = array("q")  # the offset of rows 0, STRIDE, 2 × STRIDE ...
        self._count = 0
        self.changes: dict[int, dict[str, Any]] = {}
        for row in rows:
            self.append(row)

    def __del__(self) -> None:  # the file goes with the rows (an anonymous file: nothing is left on disk)
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()

    def append(self, row: Mapping[str, Any]) -> None:
        self.append_line(encode(row) + b"\n")

    def append_line(self, line: bytes) -> None:
        """Append a row already encoded as `append` would write it (its JSON text and a newline): rows moved
        from another file of rows are copied, not decoded and encoded again."""
        at = self._file.append_line(line)
        if self._count % self.STRIDE == 0:
            self._marks.append(at)
        self._count += 1

    def update(self, index: int, fields: Mapping[str, Any]) -> None:
        self.changes.setdefault(range(len(self))[index], {}).update(fields)

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = range(len(self))[index]
        stride, skip = divmod(index, self.STRIDE)
        fh = self._file.reading(self._marks[stride])
        for _ in range(skip):
            fh.readline()
        return self._row(index, fh.readline())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for index, line in enumerate(self._lines()):
            yield self._row(index, line)

    def _lines(self) -> Iterator[bytes]:
        """Each row's JSON line as stored (no newline), read block by block, seeking each time: a read
        between two rows is harmless."""
        position, index, count = 0, 0, len(self)
        while index < count:
            fh = self._file.reading(position)
            block = fh.read(self.BLOCK)
            if b"\n" not in block:  # a row longer than a block
                block += fh.readline()
            lines = block.split(b"\n")
            tail = lines.pop()
            position += len(block) - len(tail)
            for line in lines:
                if index >= count:
                    return
                yield line
                index += 1

    def _row(self, index: int, line: bytes) -> dict[str, Any]:
        row: dict[str, Any] = decode(line)
        changed = self.changes.get(index)
        return row if changed is None else {**row, **changed}

    def lines(self) -> Iterator[bytes]:
        """Each row as JSON text (UTF-8), for run.json (`runjson.write_json`): the line as stored
        (`encode(row)`), a changed row encoded again."""
        for index, line in enumerate(self._lines()):
            yield line if index not in self.changes else encode(self._row(index, line))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[list[Any]], tuple[list[dict[str, Any]]]]:
        return list, (list(self),)  # copied or pickled as the list it stands for


class JournalRecords(Sequence[Record]):
    """Records at known byte offsets of a journal, loaded on access; iterating reads the file once.
    `light` (when given) holds each record's light form, in the same order, for `where`. A record read
    back is a new dict each time: changes go through `update`, kept by position and applied on every read."""

    def __init__(self, path: Path, offsets: Sequence[int],
                 light: DiskRows | list[dict[str, Any]] | None = None, file: IO[bytes] | None = None) -> None:
        self.path, self.offsets, self.light = path, offsets, light
        self.changes: dict[int, dict[str, Any]] = {}  # position -> fields set after the run (a few records)
        # `file`: the file the offsets were read from, kept open: a run.json another command replaces
        # meanwhile (a triage) is a new file, which these offsets do not index (docs/en/scale-and-ray.md#memory)
        self._file = file

    def __del__(self) -> None:
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_file": None}  # elsewhere, the records are read from `path`

    @contextlib.contextmanager
    def opened(self) -> Iterator[IO[bytes]]:
        """The file the records are read from: the one they were read from first when it was kept, else
        `path` opened afresh."""
        if self._file is not None and not self._file.closed:
            yield self._file
            return
        with self.path.open("rb") as fh:
            yield fh

    def update(self, index: int, fields: Mapping[str, Any]) -> None:
        """Set `fields` on the record at `index` (and on its light form, which keeps such small fields)."""
        index = range(len(self))[index]
        self.changes.setdefault(index, {}).update(fields)
        if isinstance(self.light, DiskRows):
            self.light.update(index, fields)
        elif self.light is not None:
            self.light[index].update(fields)

    def __len__(self) -> int:
        return len(self.offsets)

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = range(len(self))[index]
        with self.opened() as fh:
            return self._read(fh, index)

    def __iter__(self) -> Iterator[Record]:
        with self.opened() as fh:
            for index in range(len(self.offsets)):
                yield self._read(fh, index)

    def _read(self, fh: Any, index: int) -> Record:
        record = _read_at(fh, self.offsets[index])
        changed = self.changes.get(index)
        return record if changed is None else cast(Record, {**record, **changed})

    def lines(self) -> Iterator[bytes]:
        """Each record as the JSON text (UTF-8) the journal holds (`journal.encode(record)`): run.json
        copies these instead of decoding and encoding every record again."""
        with self.opened() as fh:
            for index, offset in enumerate(self.offsets):
                yield encode(self._read(fh, index)) if index in self.changes else _line_at(fh, offset)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class Spool:
    """Records written to a file as they are made, in order, read back as `JournalRecords` (`grade` of a
    large run, docs/en/scale-and-ray.md#memory). A record `held` stays in memory until `close`, for what
    changes it later (a `select-best` group decided once all its candidates are graded)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = path.open("wb")
        self.offsets = array("q")
        self.light = DiskRows()
        self.held: dict[int, Mapping[str, Any]] = {}

    def add(self, record: Mapping[str, Any], held: bool = False) -> None:
        if held:
            self.held[len(self.offsets)] = record
            self.offsets.append(-1)
            self.light.append({})
            return
        self.offsets.append(self._write(record))
        self.light.append(light(record))

    def _write(self, record: Mapping[str, Any]) -> int:
        offset = self.fh.tell()
        self.fh.write(encode(record) + b"\n")
        return offset

    def close(self) -> JournalRecords:
        for index, record in self.held.items():
            self.offsets[index] = self._write(record)
            self.light.update(index, light(record))  # over its empty placeholder
        self.held.clear()
        self.fh.close()
        return JournalRecords(self.path, self.offsets, self.light)


def records_where(records: Sequence[R], keep: Callable[[R], object], mentions: tuple[bytes, ...] = ()) -> list[R]:
    """The records for which `keep(record)` is true. `keep` must read only fields a light record keeps
    (see `light`): streamed records are tested on their light form and only the kept ones are read back.
    `mentions`: the keys `keep` needs, as they stand in JSON (`b'"teardown"'`); a streamed light record
    whose text holds none of them is passed over undecoded (most records of a large run have none)."""
    if isinstance(records, JournalRecords) and isinstance(records.light, DiskRows) and mentions:
        chosen = [i for i, line in enumerate(records.light.lines())
                  if any(m in line for m in mentions) and keep(cast(R, decode(line)))]
    elif isinstance(records, JournalRecords) and records.light is not None:
        lights = cast(Sequence[R], records.light)  # each record's light form, which `keep` reads
        chosen = [i for i, lite in enumerate(lights) if keep(lite)]
    else:
        return [r for r in records if keep(r)]
    if not chosen:
        return []
    with records.opened() as fh:
        return cast(list[R], [records._read(fh, i) for i in chosen])  # a journal's records are Records


def records_at(records: Sequence[R], positions: Sequence[int]) -> list[R]:
    """`[records[i] for i in positions]`, a streamed run's read with the file opened once."""
    if isinstance(records, JournalRecords):
        with records.opened() as fh:
            return cast(list[R], [records._read(fh, i) for i in positions])
    return [records[i] for i in positions]


def keys_of(records: Sequence[R]) -> Sequence[R]:
    """What to scan for fields a light record keeps: a streamed run's light forms, else the records."""
    if isinstance(records, JournalRecords) and records.light is not None:
        return cast(Sequence[R], records.light)  # their light forms: the keys a light record keeps
    return records


def update_record(records: Sequence[R], index: int, fields: Mapping[str, Any]) -> None:
    """Set `fields` on `records[index]` (a record, a diff's row), whether the rows are in memory or read
    back from a journal or a file of rows (where changing the dict a read gave would change nothing)."""
    if isinstance(records, (JournalRecords, DiskRows)):
        records.update(index, fields)
    else:
        record = records[index]
        if isinstance(record, dict):  # a record in memory is a dict (a `Record` too)
            record.update(fields)


def _read_at(fh: IO[bytes], offset: int) -> Record:
    record: Record = decode(_line_at(fh, offset))
    return record


LINE_GUESS = 8192  # bytes read at once for a line (a record of a three-turn conversation is ~2.5 KB)


def _line_at(fh: IO[bytes], offset: int) -> bytes:
    """The record at byte `offset`: a journal line, or a run.json results line (its comma dropped). Read
    with `os.pread` where there is one: records in plan order jump back and forth in a journal written in
    finish order, and a buffered file seeking out of its buffer reads a whole block again for each."""
    if not _PREAD:
        fh.seek(offset)
        return fh.readline().rstrip(b"\r\n").removesuffix(b",")
    fd = fh.fileno()
    chunk, searched = os.pread(fd, LINE_GUESS, offset), 0
    while (end := chunk.find(b"\n", searched)) < 0:
        more = os.pread(fd, max(len(chunk), LINE_GUESS), offset + len(chunk))
        if not more:
            end = len(chunk)
            break
        searched, chunk = len(chunk), chunk + more
    return chunk[:end].rstrip(b"\r").removesuffix(b",")


_PREAD = hasattr(os, "pread")


def to_plain(value: Any) -> Any:
    """`json.dumps(default=...)`: a JournalRecords is written as the list it stands for."""
    if isinstance(value, JournalRecords):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
