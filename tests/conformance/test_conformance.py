"""SPEC §26, trust by construction: every reply source × every check family × the hostile shapes.

The table is in rows.py: one evalspec run per source × shape (`test_cell_exit`), whose run.json holds
one test per family (and per form of "no reply"), each held to its shape's verdict (`test_cell`).
A combination that makes no sense is skipped with its reason (state checks need a source that reports
state). The expectations follow SPEC as written; see EXPECT in rows.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conformance.bots import Bots
from tests.conformance.rows import (
    FAMILIES,
    SECRETS,
    SHAPES,
    SOURCES,
    Case,
    Cell,
    Family,
    Shape,
    Skip,
    Source,
    cases_of,
    play,
    secret_forms,
)
from tests.helpers import LITELLM

CELLS: dict[tuple[str, str], Cell] = {}


def cell(source: Source, shape: Shape, root: Path, bots: Bots) -> Cell:
    key = (source.name, shape.name)
    if key not in CELLS:
        CELLS[key] = play(source, shape, root / f"{source.name}-{shape.name}", bots)
    return CELLS[key]


def group(source: Source) -> pytest.MarkDecorator:
    """One worker plays a source's cells (each run once); litellm is imported by the litellm group only."""
    return LITELLM if "litellm" in source.name else pytest.mark.xdist_group(f"conformance-{source.name}")


CELL_PARAMS = [pytest.param(src, shape, family, marks=group(src), id=f"{src.name}-{shape.name}-{family.name}")
               for src in SOURCES for shape in SHAPES for family in FAMILIES]
EXIT_PARAMS = [pytest.param(src, shape, marks=group(src), id=f"{src.name}-{shape.name}")
               for src in SOURCES for shape in SHAPES]


def errors_of(record: dict[str, Any]) -> str:
    return "\n".join(str(e) for e in [record.get("error"), *(a.get("error") for a in record.get("assertions", []))]
                     if e)


def hold(case: Case, got: Cell) -> None:
    expect = case.expect
    if expect.status == "refused":
        assert case.id not in got.records
        return
    record = got.records.get(case.id)
    assert record is not None, f"{case.id}: no record in run.json (exit {got.code}):\n{got.output[-2000:]}"
    summary = [(a["type"], a.get("pass"), a.get("skipped"), a.get("error"), a.get("evidence")) for a in record["assertions"]]
    where = f"{case.id}: status {record['status']}, error {record.get('error')!r}, assertions {summary}"
    assert record["status"] == expect.status, where
    if expect.error is not None:
        errors = errors_of(record)
        assert errors and expect.error in errors.lower(), where
    if expect.turn is not None:
        family: Family = case.evidence_of or case.family
        failing = [a for a in record["assertions"] if a["type"] == family.type and a.get("pass") is False]
        assert failing, where
        evidence = [e for a in failing for e in a.get("evidence") or []]
        assert any(e.get("turn") == expect.turn for e in evidence), where
        if family.matched:
            assert any(family.matched in str(e.get("text")) for e in evidence if e.get("turn") == expect.turn), where
    if expect.silent_turn is not None:
        replies = [m for m in record["transcript"] if m["role"] == "assistant" and m.get("turn") == expect.silent_turn]
        assert replies and replies[-1]["content"] == "", where
    if expect.status == "skipped":
        assert all(a.get("skipped") for a in record["assertions"]), where


@pytest.mark.parametrize(("source", "shape", "family"), CELL_PARAMS)
def test_cell(source: Source, shape: Shape, family: Family, cells_root: Path, bots: Bots) -> None:
    try:
        cases = cases_of(shape, family, source)
    except Skip as why:
        pytest.skip(str(why))
    got = cell(source, shape, cells_root, bots)
    for case in cases:
        hold(case, got)


@pytest.mark.parametrize(("source", "shape"), EXIT_PARAMS)
def test_cell_exit(source: Source, shape: Shape, cells_root: Path, bots: Bots) -> None:
    got = cell(source, shape, cells_root, bots)
    if not got.cases:
        pytest.skip("no family applies")
    assert "Traceback" not in got.output, got.output[-3000:]
    assert got.code == shape.exit(source), f"exit {got.code}:\n{got.output[-3000:]}"
    if shape.exit(source) == 2:
        assert "ghost" in got.output, got.output[-3000:]
    if shape.outputs:
        leaked = {(key, form, path.name) for key in source.secrets for form in secret_forms(SECRETS[key])
                  for path in got.files if form in path.read_text(encoding="utf-8", errors="replace")}
        leaked |= {(key, form, "console") for key in source.secrets for form in secret_forms(SECRETS[key])
                   if form in got.output}
        assert not leaked, sorted(leaked)
        assert any(p.name == "report.html" for p in got.files)
