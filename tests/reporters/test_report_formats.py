"""The table of report formats (evalspec/reporters/formats.py) is what `run` and `report` offer and what
they write: one flag per row, each file written by its row's writer, listed in the table's order, and a
write that fails names its file (docs/en/reports-and-gate.md)."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import click
import pytest

from evalspec.app.cli.main import main
from evalspec.reporters.formats import FORMATS, ReportFormat, ReportSettings, write_reports


def flags(command: str) -> list[str]:
    cmd = main.commands[command]
    return [opt for p in cmd.params if isinstance(p, click.Option) for opt in p.opts]


@pytest.mark.parametrize("command", ["run", "report"])
def test_every_format_of_the_table_is_an_option_of_run_and_report(command: str) -> None:
    offered = flags(command)
    assert all(report.flag in offered for report in FORMATS)
    listed = [f for f in offered if f in {r.flag for r in FORMATS}]
    assert listed == sorted(listed)  # --html, --junit, --md: by flag, as --help lists them


def test_each_report_is_written_by_its_row_and_listed_in_the_tables_order(fixed_run: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    paths = {r.name: str(tmp_path / "out" / f"report.{r.name}") for r in reversed(FORMATS)}
    written = write_reports(fixed_run, paths, ReportSettings(lang="zh"))
    assert list(written) == [r.name for r in FORMATS]
    assert all(Path(p).is_file() and Path(p).stat().st_size > 0 for p in written.values())
    assert "<testsuite" in Path(written["junit"]).read_text(encoding="utf-8")


def test_a_report_that_cannot_be_written_names_its_file(fixed_run: dict[str, Any], tmp_path: Path) -> None:
    def full_disk(data: dict[str, Any], path: Path, settings: ReportSettings) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    table = (*FORMATS, ReportFormat("full", "--full", "a disk that is full", full_disk))
    with pytest.raises(OSError) as caught:
        write_reports(fixed_run, {"full": "out/full.txt"}, ReportSettings(), table)
    assert caught.value.filename == "out/full.txt"
