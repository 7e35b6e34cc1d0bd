"""A test's `dataset:` (docs/en/suite-format.md#dataset): a JSONL or CSV file whose every row is one
instance of the test, the row's fields its vars.

Rows are read as the plan walks them (`rows`), one at a time: however many the file holds, none is kept.
`scan` is the one full pass `validate` makes: every line must read, every row must carry the fields the
test's templates name, and no two rows may give one instance id. It keeps an 8-byte hash per row in a
bit table (at most 16 MiB whatever the size) and reads the file a second time only to name the two lines of a
suspected duplicate.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import orjson

from evalspec.core.errors import ControlFlow, Problem

SUFFIXES = (".jsonl", ".csv")
_TABLE_BITS = 1 << 27  # the duplicate scan's largest bit table: 16 MiB


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


def row_id(test_id: str, row: Row) -> str:
    """The instance id of a row: `ID[VALUE]` when the row has an `id` field, else `ID[row=N]`."""
    value = row.fields.get("id")
    if value is None or value == "":
        return f"{test_id}[row={row.number}]"
    return f"{test_id}[{str(value).lower() if isinstance(value, bool) else value}]"


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
    except UnicodeDecodeError as exc:
        raise DatasetProblem(path, None, f"dataset is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
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
                value = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise DatasetProblem(path, line_no, f"not a JSON line ({exc.msg}); each line of a dataset is one "
                                                    'JSON object, e.g. {"question": "...", "follow_up": "..."}') from None
            if not isinstance(value, dict):
                raise DatasetProblem(path, line_no, f"a dataset row is a JSON object of fields, not "
                                                    f"{type(value).__name__}")
            number += 1
            yield Row(number, line_no, value)


def _csv(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header or not any(h.strip() for h in header):
            raise DatasetProblem(path, 1, "a CSV dataset starts with a header row naming its fields")
        names = [h.strip() for h in header]
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


def scan(path: Path, test_id: str, named: set[str]) -> list[Problem]:
    """Every problem of the whole file: the first line that cannot be read, rows without a field the
    templates name (`named`: fields of the first row), and rows that give one instance id (both lines)."""
    problems: list[Problem] = []
    try:  # at least 16 bits for each row the file could hold (a row takes 3 bytes or more)
        bits = min(_TABLE_BITS, 1 << max(13, (path.stat().st_size * 8).bit_length()))
    except OSError:
        bits = _TABLE_BITS
    table = bytearray(bits // 8)
    suspects: set[bytes] = set()
    try:
        for row in rows(path):
            if (missing := sorted(named - row.fields.keys())) and len(problems) < 20:  # the first 20 rows named
                problems.append(Problem(str(path), row.line, "", f"this row has no field "
                                                                 f"{', '.join(map(repr, missing))} (the test's "
                                                                 "templates name it)"))
            digest = _digest(row_id(test_id, row))
            bit = int.from_bytes(digest[:4], "little") % bits
            if table[bit >> 3] & (1 << (bit & 7)):
                suspects.add(digest)
            table[bit >> 3] |= 1 << (bit & 7)
    except DatasetProblem as exc:
        return [*problems, exc.problem]
    del table
    return problems + (_duplicates(path, test_id, suspects) if suspects else [])


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=8).digest()


def _duplicates(path: Path, test_id: str, suspects: set[bytes]) -> list[Problem]:
    """The rows among `suspects` (hashes seen twice) that really share an instance id, each named with
    the line of the first."""
    first: dict[str, int] = {}
    problems: list[Problem] = []
    for row in rows(path):
        iid = row_id(test_id, row)
        if _digest(iid) not in suspects:
            continue
        if iid in first:
            problems.append(Problem(str(path), row.line, "", f"instance id '{iid}' is also that of the row at line "
                                                              f"{first[iid]}: each row needs its own 'id' (two "
                                                              "instances with one id would merge into one verdict)"))
        else:
            first[iid] = row.line
    return problems
