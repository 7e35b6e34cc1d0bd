"""A test's `dataset:` (docs/en/suite-format.md#dataset): a JSONL or CSV file whose every row is one
instance of the test, the row's fields its vars.

Rows are read as the plan walks them (`rows`), one at a time: however many the file holds, none is kept.
`scan` is the one full pass `validate` makes: every line must read, every row must carry the fields the
test's templates name, and no two rows may give one instance id (`Repeats`: a bit table of at most 16 MiB
whatever the size, the file read a second time only to name the two lines of a suspected duplicate).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import itertools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import orjson

from evalspec.config.repeats import Repeats, lines_in
from evalspec.core import jsontext
from evalspec.core.errors import ControlFlow, Problem

SUFFIXES = (".jsonl", ".csv")
_LISTED = 20  # the rows with a problem `scan` names (then how many more)


@dataclass(frozen=True)
class Row:
    """One row of a dataset: its number among the rows (from 1), its line in the file, its fields."""

    number: int
    line: int
    fields: dict[str, Any]


class DatasetProblem(ControlFlow):
    """A dataset that cannot be read: file, line and what is wrong."""

    def __init__(self, file: Path, line: int | None, message: str) -> None:
        super().__init__(message)
        self.problem = Problem(str(file), line, "", message)


def dataset_file(suite_path: Path, dataset: str) -> Path:
    """The file a test's `dataset:` names (relative to its suite file)."""
    path = Path(dataset)
    return path if path.is_absolute() else suite_path.parent / path


def digest(path: Path) -> str | None:
    """The sha256 of a dataset file (or any file: a run's recorded conversations), read in blocks (a million
    rows are never held); None when it cannot be read (`validate` names why). It is part of its suite's sha256: a `--resume` after the rows changed
    would give one instance id to two rows (docs/en/suite-format.md#dataset)."""
    found = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while block := fh.read(1 << 20):
                found.update(block)
    except OSError:
        return None
    return found.hexdigest()


def row_id(test_id: str, row: Row) -> str:
    """The instance id of a row: `ID[VALUE]` when the row has an `id` field (its text without surrounding
    spaces: a spreadsheet's `q1 ` is `q1`), else `ID[row=N]`."""
    value = row.fields.get("id")
    text = str(value).lower() if isinstance(value, bool) else "" if value is None else str(value).strip()
    return f"{test_id}[{text}]" if text else f"{test_id}[row={row.number}]"


def id_problem(row: Row) -> str | None:
    """What is wrong with a row's `id` field as an instance id, or None: it is text or a number on one line."""
    value = row.fields.get("id")
    if isinstance(value, (dict, list)):
        return (f"this row's 'id' is a JSON {'object' if isinstance(value, dict) else 'list'}: an id is a text or "
                "a number (it names the instance: faq[VALUE])")
    if isinstance(value, str) and any(c < " " or c == "\x7f" for c in value.strip()):
        return f"this row's 'id' {value!r} holds a line break or control character: an id is text on one line"
    return None


def rows(path: Path) -> Iterator[Row]:
    """Every row of the file, in file order, read as it is reached; a line that cannot be read is a
    DatasetProblem naming it."""
    if not path.is_file():
        raise DatasetProblem(path, None, f"dataset file {path} does not exist; give a JSONL file (one JSON "
                                         "object a line) or a CSV file with a header row")
    try:
        found = 0
        for row in _csv(path) if path.suffix.lower() == ".csv" else _jsonl(path):
            found += 1
            yield row
        if not found:  # no instance: the test would check nothing, silently (docs/en/suite-format.md#dataset)
            raise DatasetProblem(path, None, f"dataset file {path} has no rows, so its test would check nothing; "
                                             "give it one row an instance (or remove the test)")
    except UnicodeDecodeError:
        line = _first_not_utf8(path)
        raise DatasetProblem(path, line, _not_utf8(path, line)) from None
    except OSError as exc:
        raise DatasetProblem(path, None, f"dataset cannot be read: {exc.strerror or exc}") from None


def _jsonl(path: Path) -> Iterator[Row]:
    number = 0
    with path.open("rb") as fh:
        for line_no, line in enumerate(fh, 1):
            if line_no == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if not line.strip():
                continue
            try:
                value = jsontext.loads(line, lenient=False)  # an id beyond 64 bits stays that integer
            except ValueError as exc:
                if _first_not_utf8(path, line_no, line) is not None:
                    raise DatasetProblem(path, line_no, _not_utf8(path, line_no)) from None
                raise DatasetProblem(path, line_no, f"not a JSON line ({getattr(exc, 'msg', exc)}); each line of a dataset is one "
                                                    'JSON object, e.g. {"question": "...", "follow_up": "..."}') from None
            if not isinstance(value, dict):
                raise DatasetProblem(path, line_no, f"a dataset row is a JSON object of fields, not "
                                                    f"{type(value).__name__}")
            number += 1
            yield Row(number, line_no, value)


def _first_not_utf8(path: Path, start: int = 1, first: bytes | None = None) -> int | None:
    """The number of the first line from `start` (`first`: its bytes, already read) that is not UTF-8
    text, or None."""
    with path.open("rb") as fh:
        lines = enumerate(fh, 1) if first is None else iter([(start, first)])
        for line_no, line in lines:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return line_no
    return None


def _not_utf8(path: Path, line: int | None) -> str:
    """Why a dataset that is not UTF-8 cannot be read, and how to save it (a Chinese Excel saves GBK)."""
    raw = b""
    if line is not None:
        with path.open("rb") as fh:
            raw = next(itertools.islice(fh, line - 1, None), b"")
    if line == 1 and raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        seen = " (it is UTF-16)"
    else:
        try:
            raw.decode("gb18030")
            seen = " (it reads as GBK/GB18030)" if raw else ""
        except UnicodeDecodeError:
            seen = ""
    how = ' (in Excel: "CSV UTF-8")' if path.suffix.lower() == ".csv" else ""
    return f"{'this line' if line is not None else 'the dataset'} is not UTF-8 text{seen}; save the file as UTF-8{how}"


def _csv(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header or not any(h.strip() for h in header):
            raise DatasetProblem(path, 1, "a CSV dataset starts with a header row naming its fields")
        names = [h.strip() for h in header]
        for column, name in enumerate(names):
            if name and (again := names.index(name)) != column:  # one cell of the two would be lost
                raise DatasetProblem(path, 1, f"the header names {name!r} twice (columns {again + 1} and "
                                              f"{column + 1}): give each column its own name")
        number, line_no = 0, reader.line_num + 1
        for cells in reader:
            start, line_no = line_no, reader.line_num + 1
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(names):
                raise DatasetProblem(path, start, f"this row has {len(cells)} cells and the header {len(names)} "
                                                  f"({', '.join(names)})")
            number += 1
            yield Row(number, start, dict(zip(names, cells)))


def first_row(path: Path) -> Row | None:
    return next(rows(path), None)


def template_texts(value: Any) -> Iterator[str]:
    """Every text inside a test's specs that may be a template (`{{ ... }}` or `{% ... %}`)."""
    if isinstance(value, str):
        if "{{" in value or "{%" in value:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from template_texts(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from template_texts(item)
    elif is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            if f.name not in ("where", "value_where", "parsed"):
                yield from template_texts(getattr(value, f.name))


def scan(path: Path, test_id: str, named: set[str], check: Callable[[Row], Problem | None] | None = None
         ) -> list[Problem]:
    """Every problem of the whole file, in one pass: the first line that cannot be read, rows without a
    field the templates name (`named`: fields of the first row) or with null there, an `id` that cannot
    name an instance, what `check` finds in a row (its rendering), and rows that give one instance id
    (both lines). At most `_LISTED` rows are named, then how many more there are."""
    lines = lines_in([path])
    ids: Repeats[int] = Repeats(lines)
    helper = _Halves.start(path, named, check) if check is not None and lines >= _HALVED_FROM else None
    mine = _Found()
    unreadable: DatasetProblem | None = None  # the line the pass stopped at
    try:
        try:
            for index, row in enumerate(rows(path)):
                if helper is None or index % 2 == 0:  # the other half's rows are the helper's
                    mine.add(row.line, _row_problem(path, row, named, check))
                ids.add(row_id(test_id, row))
        except DatasetProblem as exc:
            unreadable = exc
        found = mine.merged(helper.found() if helper is not None else _Found())
    finally:
        if helper is not None:
            helper.stop()
    problems = [problem for _, problem in found.listed]
    if unreadable is not None:
        return problems + [unreadable.problem]
    if found.more:
        problems.append(Problem(str(path), None, "", f"and {found.more} more rows with a problem like these"))
    return problems + _duplicates(path, test_id, ids)


class _Found:
    """The rows with a problem of one pass, by their line: the first `_LISTED` named, the rest counted."""

    def __init__(self, listed: list[tuple[int, Problem]] | None = None, more: int = 0) -> None:
        self.listed, self.more = listed or [], more

    def add(self, line: int, problem: Problem | None) -> None:
        if problem is None:
            return
        if len(self.listed) < _LISTED:
            self.listed.append((line, problem))
        else:
            self.more += 1

    def merged(self, other: _Found) -> _Found:
        """Both halves' rows in the file's order: the first `_LISTED` of them named, as one pass names them."""
        both = sorted(self.listed + other.listed, key=lambda found: found[0])
        return _Found(both[:_LISTED], self.more + other.more + max(0, len(both) - _LISTED))


_HALVED_FROM = 4000  # lines: a larger file's rows are checked by two processes, each taking every other row


class _Halves:
    """The odd rows of a large dataset checked (rendered: the costly part of `scan`) in a forked process
    while this one checks the even rows, so `validate` and a run's start take half the time on two cores
    (docs/en/scale-and-ray.md#a-million-rows). What it finds comes back as JSON through a pipe; should it
    fail in any way, this process checks those rows itself: the problems are those of one pass either way."""

    def __init__(self, pid: int, fd: int, path: Path, named: set[str],
                 check: Callable[[Row], Problem | None] | None) -> None:
        self.pid, self.fd = pid, fd
        self.path, self.named, self.check = path, named, check

    @classmethod
    def start(cls, path: Path, named: set[str], check: Callable[[Row], Problem | None] | None) -> _Halves | None:
        if not hasattr(os, "fork") or sys.platform != "linux" or threading.active_count() > 1:
            return None  # forking is safe only where no other thread holds a lock
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the helper: never returns
            os.close(read_fd)
            code = 1
            try:
                found = _Halves.odd_rows(path, named, check)
                data = orjson.dumps({"listed": [[line, p.file, p.line, p.path, p.message] for line, p in found.listed],
                                     "more": found.more})
                view = memoryview(data)
                while view:
                    view = view[os.write(write_fd, view):]
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        return cls(pid, read_fd, path, named, check)

    @staticmethod
    def odd_rows(path: Path, named: set[str], check: Callable[[Row], Problem | None] | None) -> _Found:
        """The problems of the odd rows (the second, the fourth, ...), up to a line that cannot be read
        (the pass over every row names that one)."""
        found = _Found()
        try:
            for index, row in enumerate(rows(path)):
                if index % 2 == 1:
                    found.add(row.line, _row_problem(path, row, named, check))
        except DatasetProblem:
            pass
        return found

    def found(self) -> _Found:
        """What the helper found in the odd rows; if it failed, the odd rows checked here."""
        said = self.result()
        return said if said is not None else _Halves.odd_rows(self.path, self.named, self.check)

    def result(self) -> _Found | None:
        chunks = []
        try:
            while chunk := os.read(self.fd, 1 << 16):
                chunks.append(chunk)
        finally:
            self.stop()
        try:
            said = orjson.loads(b"".join(chunks))
            listed = [(int(line), Problem(file, at, key, message)) for line, file, at, key, message in said["listed"]]
            return _Found(listed, int(said["more"]))
        except (ValueError, KeyError, TypeError):
            return None

    def stop(self) -> None:
        """Close the pipe and reap the helper (ended first, should it still run: an error or Ctrl-C here)."""
        if self.fd < 0:
            return
        os.close(self.fd)
        self.fd = -1
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _row_problem(path: Path, row: Row, named: set[str], check: Callable[[Row], Problem | None] | None
                 ) -> Problem | None:
    """The first problem of one row (docs/en/suite-format.md#dataset), or None."""
    if missing := sorted(named - row.fields.keys()):
        return Problem(str(path), row.line, "", f"this row has no field {', '.join(map(repr, missing))} (the "
                                                "test's templates name it)")
    if nulls := sorted(name for name in named if row.fields[name] is None):
        return Problem(str(path), row.line, "", f"this row's field {', '.join(map(repr, nulls))} is null (the "
                                                'test\'s templates name it): give it a value, "" for an empty one')
    if message := id_problem(row):
        return Problem(str(path), row.line, "", message)
    return check(row) if check is not None else None


def _duplicates(path: Path, test_id: str, ids: Repeats[int]) -> list[Problem]:
    """The rows that give an instance id an earlier row gave (the file is read again only when the first
    pass suspects one), each named with the line of the first."""
    again = ((row_id(test_id, row), row.line) for row in rows(path))
    return [Problem(str(path), line, "", f"instance id '{iid}' is also that of the row at line {first}: each row "
                                          "needs its own 'id' (two instances with one id would merge into one verdict)")
            for iid, first, line in ids.found(again)]
