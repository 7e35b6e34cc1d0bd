"""BotiumScript files read into convos, partials, utterance lists and scripting memory (docs/en/importers.md).

Botium keeps one model behind several file formats: `.convo.txt` / `.pconvo.txt` (a title line and `#me`,
`#bot`, `#begin`, `#end`, `#include NAME` sections), `.utterances.txt`, `.scriptingmemory.txt`, and the
same content as YAML or JSON (`convos:`, `partialConvos:`, `utterances:`, `scriptingMemory:`), CSV
(question/answer rows, or conversation/sender/text rows) and XLSX (the CSV layouts, one per sheet). Each
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


def _table_convos(rows: list[list[str]], path: Path, rel: str, sheet: str = "") -> list[Convo]:
    """Botium's CSV layouts (the header row skipped): question/answer (one convo per row, named L<row>) or
    conversation/sender/text (one convo per conversation id, a section per row)."""
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        return []
    width = len(rows[0])
    prefix = f"{sheet} " if sheet else ""
    if width == 2:
        return [Convo(f"{prefix}L{n}", [("#me", [row[0]], n), ("#bot", [row[1]] if len(row) > 1 else [], n)], path, rel)
                for n, row in enumerate(rows[1:], 2)]
    if width == 3:
        convos: dict[str, Convo] = {}
        for n, row in enumerate(rows[1:], 2):
            name, sender, text = (row + ["", "", ""])[:3]
            convo = convos.setdefault(name, Convo(prefix + name, [], path, rel))
            convo.sections.append((f"#{sender.strip().lower()}", text.splitlines(), n))
        return list(convos.values())
    return []


def _csv_rows(text: str) -> list[list[str]]:
    first = text.split("\n", 1)[0]
    delimiter = next((d for d in (",", ";", "|", "\t") if d in first), ",")
    return [list(r) for r in csv.reader(io.StringIO(text), delimiter=delimiter)]


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
                for sheet, rows in _xlsx_sheets(path):
                    _add(source, _table_convos(rows, path, rel, sheet), ".pconvo." in name)
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
