"""Spreadsheets as suites and back: one row per user turn.

Columns: test_id, user, label, contains, not_contains, regex, not_regex, name, tags. Rows with the same
test_id form one conversation (a blank test_id continues the test above). In contains, not_contains and
tags several values are separated by `|` (write `\\|` for a literal bar); a regex cell holds one pattern
per line, since `|` is a regex's own alternation. UTF-8 with or without a BOM (as spreadsheets export).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import regex

from evalspec.authoring.importers import ImportedSuite, literal, plain, unliteral
from evalspec.authoring.importers.shapes import SuiteTest, SuiteTurn
from evalspec.core.errors import ConfigError, Problem
from evalspec.core.suggest import did_you_mean, slugify
from evalspec.extend.patterns import regex_problem

COLUMNS = ("test_id", "user", "label", "contains", "not_contains", "regex", "not_regex", "name", "tags")
CHECKS = {"contains": "contains", "not_contains": "not-contains", "regex": "regex", "not_regex": "not-regex"}
PATTERN_COLUMNS = ("regex", "not_regex")


def split_cell(cell: str, column: str) -> list[str]:
    """Several values in one cell: `|`-separated (`\\|` escapes), or one regex per line."""
    if not cell.strip():
        return []
    if column in PATTERN_COLUMNS:
        return [line for line in cell.splitlines() if line.strip()]
    parts = regex.split(r"(?<!\\)\|", cell)
    return [p.replace("\\|", "|").strip() for p in parts if p.strip()]


def join_cell(values: list[str], column: str) -> str:
    if column in PATTERN_COLUMNS:
        return "\n".join(values)
    return "|".join(v.replace("|", "\\|") for v in values)


def import_csv(path: Path) -> ImportedSuite:
    """A CSV file -> one suite; problems name the file and line."""
    shown = str(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError([Problem(shown, None, "", f"not UTF-8 ({exc}); save the sheet as CSV UTF-8")]) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [(h or "").strip().lower() for h in reader.fieldnames or []]
    reader.fieldnames = header
    problems: list[Problem] = []
    for h in header:
        if h and h not in COLUMNS:
            problems.append(Problem(shown, 1, "", f"unknown column '{h}'{did_you_mean(h, COLUMNS)}; "
                                                  f"columns: {', '.join(COLUMNS)}"))
    if "user" not in header:
        problems.append(Problem(shown, 1, "", "no 'user' column: each row is one user turn"))
    if problems:
        raise ConfigError(problems)
    tests: dict[str, SuiteTest] = {}
    current: str | None = None
    for row in reader:
        line = reader.line_num
        cells = {k: (row.get(k) or "") for k in COLUMNS}
        if not any(v.strip() for v in cells.values()):
            continue
        user = cells["user"].strip()
        if not user:
            problems.append(Problem(shown, line, "", "empty 'user' cell: each row is one user turn"))
            continue
        tid = plain(cells["test_id"].strip()) or current or slugify(cells["name"] or user)
        current = tid
        test = tests.setdefault(tid, {"id": tid, "conversation": []})
        if cells["name"].strip() and "name" not in test:
            test["name"] = plain(cells["name"].strip())
        for tag in plain(split_cell(cells["tags"], "tags")):
            test.setdefault("tags", [])
            if tag not in test["tags"]:
                test["tags"].append(tag)
        turn: SuiteTurn = {"user": literal(user)}  # every cell is sent or matched as written
        if cells["label"].strip():
            turn["label"] = plain(cells["label"].strip())
        checks = [{CHECKS[col]: v} for col in CHECKS for v in split_cell(cells[col], col)]
        for check in checks:
            if "regex" in next(iter(check)) and (bad := regex_problem(next(iter(check.values())))):
                problems.append(Problem(shown, line, "", bad))
        if checks:
            turn["assert"] = literal(checks)
        test["conversation"].append(turn)
    if problems:
        raise ConfigError(problems)
    if not tests:
        raise ConfigError([Problem(shown, None, "", "no rows: each row is one user turn")])
    ordered = [{k: t[k] for k in ("id", "name", "tags", "conversation") if k in t} for t in tests.values()]
    return ImportedSuite(filename=f"{path.stem}.yaml", data={"description": f"Imported from {path.name}",
                                                               "tests": ordered}, source=path.name)


def export_csv(suite_path: Path) -> tuple[str, list[str]]:
    """A suite's scripted user turns as CSV rows (with a BOM, for spreadsheets), and what did not fit."""
    from evalspec.config.loader import load_suite

    suite = load_suite(suite_path)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    skipped: list[str] = []
    by_type = {v: k for k, v in CHECKS.items()}
    for test in suite.tests:
        if test.simulate is not None:
            skipped.append(f"{test.id}: a simulated user (no scripted turns)")
            continue
        if test.asserts:
            skipped.append(f"{test.id}: {len(test.asserts)} test-level assertion(s)")
        first = True
        for turn in test.conversation:
            if turn.kind != "user":
                skipped.append(f"{test.id}: a '{turn.kind}' entry")
                continue
            cells: dict[str, list[str]] = {c: [] for c in CHECKS}
            for spec in turn.asserts:
                column = by_type.get(spec.name)
                plain = isinstance(spec.value, str) and spec.scope == "turn" and spec.threshold is None \
                    and spec.severity == "major" and spec.weight == 1.0 and not spec.options
                if column is None or not plain:
                    skipped.append(f"{test.id}: '{spec.name}' on turn '{str(turn.text)[:30]}'")
                    continue
                cells[column].append(unliteral(str(spec.value)))
            writer.writerow([test.id, unliteral(str(turn.text)), turn.label or "",
                             *(join_cell(cells[c], c) for c in CHECKS),
                             test.name if first and test.name != test.id else "",
                             join_cell(test.tags, "tags") if first else ""])
            first = False
    from evalspec.core.redact import redact, run_secrets

    return "\ufeff" + redact(out.getvalue(), run_secrets([suite])), skipped
