"""BotiumScript files read into convos, partials, utterance lists and scripting memory (docs/en/importers.md).

Botium keeps one model behind several file formats: `.convo.txt` / `.pconvo.txt` (a title line and `#me`,
`#bot`, `#begin`, `#end`, `#include NAME` sections), `.utterances.txt`, `.scriptingmemory.txt`, and the
same content as YAML or JSON (`convos:`, `partialConvos:`, `utterances:`, `scriptingMemory:`), CSV
(question/answer rows, or conversation/sender/text rows) and XLSX (sheets read by their names, as Botium
reads them). Each
reader gives `Convo`s whose sections are `(#me|#bot|..., lines, line or step number)`, named by the
file's path relative to the imported folder.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalspec.authoring.importers.yaml12 import load_yaml12
from evalspec.core.errors import ConfigError, Problem

SECTIONS = ("#me", "#bot", "#begin", "#end", "#include")
TEXT_KINDS = (".convo.txt", ".pconvo.txt", ".utterances.txt", ".scriptingmemory.txt")
OBJECT_SUFFIXES = (".yaml", ".yml", ".json")
TABLE_SUFFIXES = (".csv", ".xlsx")


@dataclass
class Convo:
    title: str
    sections: list[tuple[str, list[str], int]]  # (section, lines, line or step number of its header)
    path: Path
    rel: str = ""  # the file's path relative to the imported folder (what errors and notes name)
    where_unit: str = ""  # "" for a line number, "step " for a YAML / JSON step


@dataclass
class Source:
    """Everything a folder holds for Botium."""

    convos: list[Convo] = field(default_factory=list)
    partials: dict[str, Convo] = field(default_factory=dict)
    utterances: dict[str, list[str]] = field(default_factory=dict)
    memory: list[tuple[str, list[dict[str, str]]]] = field(default_factory=list)  # (file, rows)
    unread: list[tuple[str, str]] = field(default_factory=list)  # (file, why it was not read)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([Problem(str(path), None, "", f"cannot read: {exc}")]) from None


def parse_convo_text(text: str, path: Path, rel: str) -> Convo:
    """A `.convo.txt` / `.pconvo.txt`: the title line, then sections; `#include NAME` keeps NAME as its first line."""
    title = ""
    sections: list[tuple[str, list[str], int]] = []
    current: tuple[str, list[str], int] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        words = line.strip().split(maxsplit=1)
        head = words[0].lower() if words else ""
        if head in SECTIONS or (head.startswith("#") and current is not None and re.match(r"#\w+\Z", head)):
            current = (head, [words[1]] if head == "#include" and len(words) > 1 else [], number)
            sections.append(current)
        elif current is None:
            if line.strip() and not title:
                title = line.strip()
        else:
            current[1].append(line)
    for _, body, _ in sections:
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
    return Convo(title or path.name.split(".")[0], sections, path, rel)


def parse_convo(path: Path, rel: str = "") -> Convo:
    return parse_convo_text(_text(path), path, rel or path.name)


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value if v is not None]
    return str(value).splitlines()


def _object_convos(items: Any, path: Path, rel: str) -> list[Convo]:
    out = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        sections = []
        for s, step in enumerate(item.get("steps") or [], 1):
            if isinstance(step, dict) and len(step) == 1:
                (sender, value), = step.items()
                lines = _lines(value)
                sections.append((f"#{str(sender).lower()}", lines, s))
        out.append(Convo(str(item.get("name") or f"{path.name.split('.')[0]} {i + 1}"), sections, path, rel, "step "))
    return out


def _memory_rows(value: Any) -> list[dict[str, str]]:
    """`scriptingMemory:` of a YAML / JSON file: `[{header: {name}, values: {$var: value}}]`."""
    rows = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and isinstance(item.get("values"), dict):
            row = {"id": str((item.get("header") or {}).get("name") or "")} if isinstance(item.get("header"), dict) else {}
            row.update({str(k).lstrip("$"): str(v) for k, v in item["values"].items()})
            rows.append(row)
    return rows


def memory_text_rows(text: str) -> list[dict[str, str]]:
    """A `.scriptingmemory.txt`: a header row (`|$var1|$var2`, the first column the case name) and rows."""
    table = [[c.strip() for c in line.split("|")] for line in text.splitlines() if line.strip()]
    if len(table) < 2:
        return []
    head = table[0]
    rows = []
    for cells in table[1:]:
        row = {"id": cells[0]} if cells and cells[0] else {}
        row.update({h.lstrip("$"): cells[i] if i < len(cells) else "" for i, h in enumerate(head) if i and h})
        rows.append(row)
    return rows


def _table_convos(rows: list[list[str]], path: Path, rel: str) -> list[Convo]:
    """Botium's CSV layouts (the header row skipped): question/answer (one convo per row, named L<row>) or
    conversation/sender/text (one convo per conversation id, a section per row)."""
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        return []
    width = len(rows[0])
    if width == 2:
        return [Convo(f"L{n}", [("#me", [row[0]], n), ("#bot", [row[1]] if len(row) > 1 else [], n)], path, rel)
                for n, row in enumerate(rows[1:], 2)]
    if width == 3:
        convos: dict[str, Convo] = {}
        for n, row in enumerate(rows[1:], 2):
            name, sender, text = (row + ["", "", ""])[:3]
            convo = convos.setdefault(name, Convo(name, [], path, rel))
            convo.sections.append((f"#{sender.strip().lower()}", text.splitlines(), n))
        return list(convos.values())
    return []


def _csv_rows(text: str) -> list[list[str]]:
    first = text.split("\n", 1)[0]
    delimiter = next((d for d in (",", ";", "|", "\t") if d in first), ",")
    return [list(r) for r in csv.reader(io.StringIO(text), delimiter=delimiter)]


_XLSX_EMPTY_ROWS = 10  # Botium stops reading a sheet after more empty rows than this
_COLUMNS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class _Grid:
    """A sheet's cells by (row, column), both from 0; a cell is its text, "" when empty."""

    def __init__(self, rows: list[list[str]]) -> None:
        self.rows = rows

    def __call__(self, row: int, col: int) -> str:
        if 0 <= row < len(self.rows) and 0 <= col < len(self.rows[row]):
            return self.rows[row][col].strip()
        return ""

    def origin(self, memory: bool = False) -> tuple[int, int] | None:
        """Where Botium finds a sheet's content: its first filled cell (a scripting-memory table: the first
        filled cell with a case name below and left of it, i.e. the first variable name)."""
        for r in range(len(self.rows)):
            for c in range(len(_COLUMNS)):
                if self(r, c) and (not memory or (c > 0 and self(r + 1, c - 1))):
                    return (r, c - 1) if memory else (r, c)
        return None


def _xlsx_kind(title: str) -> str | None:
    """What Botium reads a sheet as, by its name: convos, partial convos (`Partial convos`, or `PConvos` like a
    `.pconvo.txt`), utterances or scripting memory."""
    low = title.lower()
    if "partial" in low or "pconvo" in low:
        return "partial"
    if "convo" in low or "dialog" in low:
        return "convo"
    if "utter" in low:
        return "utterances"
    if "memory" in low or "scripting" in low:
        return "memory"
    return None


def _read_workbook(sheets: list[tuple[str, list[list[str]]]], path: Path, rel: str, source: Source) -> None:
    """An XLSX as Botium reads it (docs/en/importers.md#coming-from-botium): each sheet by its name (`Convos`, `Dialogs`,
    `Partial convos`, `Utterances`, `Scripting memory`), its content from the first filled cell on, under a
    header row."""
    read = False
    for title, rows in sheets:
        kind, grid = _xlsx_kind(title), _Grid(rows)
        if kind is None or (start := grid.origin(memory=kind == "memory")) is None:
            continue
        read = True
        if kind == "memory":
            source.memory.append((f"{rel} ({title})", _xlsx_memory(grid, *start)))
        elif kind == "utterances":
            _xlsx_utterances(grid, start[0] + 1, start[1], source)
        else:
            partial = kind == "partial" or ".pconvo." in path.name.lower()
            _add(source, _xlsx_convos(grid, start[0] + 1, start[1], title, path, rel), partial)
    if not read:
        raise ConfigError([Problem(str(path), None, "", "no sheet Botium reads (its name holds convo, dialog, "
                                   "partial, utter, memory or scripting) with content")])


def _xlsx_convos(grid: _Grid, row: int, col: int, sheet: str, path: Path, rel: str) -> list[Convo]:
    """A convo sheet under its header row: a name column when the header has three cells; question / answer
    rows (a convo each), or #me and #bot cells on rows of their own, an empty row ending a convo. A cell's
    lines are a section's lines (asserters and logic hooks included)."""
    name_col = bool(grid(row - 1, col) and grid(row - 1, col + 1) and grid(row - 1, col + 2))
    me_col, bot_col = (col + 1, col + 2) if name_col else (col, col + 1)
    end = row
    empty = 0
    while empty <= _XLSX_EMPTY_ROWS:
        empty = 0 if grid(end, me_col) or grid(end, bot_col) else empty + 1
        end += 1
    filled = [r for r in range(row, end) if grid(r, me_col) or grid(r, bot_col)]
    pairs = [r for r in filled if grid(r, me_col) and grid(r, bot_col)]
    if pairs and len(pairs) < len(filled):
        raise ConfigError([Problem(str(path), None, "", f"sheet {sheet!r} mixes question / answer rows (row "
                                   f"{pairs[0] + 1}) with rows of one sender (row "
                                   f"{next(r for r in filled if r not in pairs) + 1}), as Botium refuses")])

    def lines(r: int, c: int) -> list[str]:
        return [line.strip() for line in re.split(r"\r\n|\n|\r", grid(r, c)) if line.strip()]

    def named(first: int) -> str:  # the name cell, else Botium's "Sheet-A002"
        return grid(first, col) if name_col and grid(first, col) else f"{sheet}-{_COLUMNS[col]}{first + 1:03d}"

    if pairs:
        return [Convo(named(r), [("#me", lines(r, me_col), r + 1), ("#bot", lines(r, bot_col), r + 1)], path, rel,
                      "row ") for r in filled]
    convos: list[Convo] = []
    current: Convo | None = None
    for r in range(row, end):
        if not (grid(r, me_col) or grid(r, bot_col)):
            current = None
            continue
        if current is None:
            current = Convo(named(r), [], path, rel, "row ")
            convos.append(current)
        sender = "#me" if grid(r, me_col) else "#bot"
        current.sections.append((sender, lines(r, me_col if sender == "#me" else bot_col), r + 1))
    return convos


def _xlsx_utterances(grid: _Grid, row: int, col: int, source: Source) -> None:
    """An utterances sheet: a name and its first phrasing on one row, more phrasings below it."""
    current: list[str] | None = None
    empty = 0
    while empty <= _XLSX_EMPTY_ROWS:
        name, text = grid(row, col), grid(row, col + 1)
        if name and text:
            current = source.utterances[name] = [text]
        elif text and current is not None:
            current.append(text)
        empty = 0 if text else empty + 1
        if not text:
            current = None
        row += 1


def _xlsx_memory(grid: _Grid, row: int, col: int) -> list[dict[str, str]]:
    """A scripting-memory sheet: `$variables` across and a case a row, or (the first cell below the origin a
    `$variable`) cases across and a variable a row."""
    if grid(row + 1, col).startswith("$"):
        cases = []
        c = col + 1
        while grid(row, c):
            cases.append(grid(row, c))
            c += 1
        rows = [{"id": case} for case in cases]
        r = row + 1
        while grid(r, col):
            for i, case_row in enumerate(rows):
                case_row[grid(r, col).lstrip("$")] = grid(r, col + 1 + i)
            r += 1
        return rows
    names = []
    c = col + 1
    while grid(row, c):
        names.append(grid(row, c))
        c += 1
    out = []
    r = row + 1
    while grid(r, col):
        out.append({"id": grid(r, col), **{n.lstrip("$"): grid(r, col + 1 + i) for i, n in enumerate(names)}})
        r += 1
    return out


def _xlsx_sheets(path: Path) -> list[tuple[str, list[list[str]]]]:
    try:
        import openpyxl
    except ImportError:
        raise ConfigError([Problem(str(path), None, "", "reading .xlsx needs openpyxl (pip install openpyxl)")]) from None
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable workbook is this file's error
        raise ConfigError([Problem(str(path), None, "", f"cannot read the workbook: {exc}")]) from None
    sheets = []
    for sheet in book.worksheets:
        rows = [["" if c is None else str(c) for c in row] for row in sheet.iter_rows(values_only=True)]
        sheets.append((sheet.title, rows))
    book.close()
    return sheets


def read_folder(files: list[Path], root: Path) -> Source:
    """Every Botium file among `files` (paths under `root`), read into one Source."""
    source = Source()
    for path in files:
        rel = str(path.relative_to(root))
        name = path.name.lower()
        try:
            if name.endswith(".pconvo.txt"):
                partial = parse_convo(path, rel)
                source.partials[partial.title] = partial
            elif name.endswith(".convo.txt"):
                source.convos.append(parse_convo(path, rel))
            elif name.endswith(".utterances.txt"):
                lines = [line.strip() for line in _text(path).splitlines() if line.strip()]
                if lines:
                    source.utterances[lines[0]] = lines[1:]
            elif name.endswith(".scriptingmemory.txt"):
                source.memory.append((rel, memory_text_rows(_text(path))))
            elif name.endswith(OBJECT_SUFFIXES):
                _read_object(path, rel, source)
            elif name.endswith(".csv") and (".convo." in name or ".pconvo." in name):
                convos = _table_convos(_csv_rows(_text(path)), path, rel)
                _add(source, convos, ".pconvo." in name)
            elif name.endswith(".xlsx"):
                _read_workbook(_xlsx_sheets(path), path, rel, source)
        except ConfigError as exc:
            source.unread.append((rel, "; ".join(p.message for p in exc.problems)))
    return source


def _add(source: Source, convos: list[Convo], partial: bool) -> None:
    if partial:
        source.partials.update({c.title: c for c in convos})
    else:
        source.convos += convos


def _read_object(path: Path, rel: str, source: Source) -> None:
    """A YAML / JSON BotiumScript file; YAML or JSON that is not BotiumScript is skipped."""
    text = _text(path)
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else load_yaml12(text)
    except ValueError as exc:
        raise ConfigError([Problem(str(path), None, "", f"not JSON: {exc}")]) from None
    except Exception as exc:  # noqa: BLE001 - yaml.YAMLError and its kin: this file's error
        raise ConfigError([Problem(str(path), None, "", f"not YAML: {exc}")]) from None
    if not isinstance(data, dict) or not {"convos", "partialConvos", "utterances", "scriptingMemory"} & set(data):
        return
    source.convos += _object_convos(data.get("convos"), path, rel)
    _add(source, _object_convos(data.get("partialConvos"), path, rel), True)
    for name, phrasings in (data.get("utterances") or {}).items() if isinstance(data.get("utterances"), dict) else []:
        source.utterances[str(name)] = _lines(phrasings)
    if data.get("scriptingMemory"):
        source.memory.append((rel, _memory_rows(data["scriptingMemory"])))
