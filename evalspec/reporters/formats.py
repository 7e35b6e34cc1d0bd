"""The report files a command can write. `FORMATS` is their table: each format's name (its line in the
summary), its command-line flag and help, and its writer (imported only when that report is written). A
new report format is its writer module and one row here; `evalspec run` and `evalspec report` take its
flag from this table (docs/en/reports-and-gate.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the table is read by the command line's start-up: no run.json types imported then
    from evalspec.results.rundata import RunData


@dataclass(frozen=True)
class ReportSettings:
    """What the reports share: their language (None: the run's own), how many failing tests the
    Markdown lists, and whether the HTML embeds every transcript."""

    lang: str | None = None
    max_failures: int = 50
    html_all: bool = False


Writer = Callable[["RunData", Path, ReportSettings], None]


@dataclass(frozen=True)
class ReportFormat:
    name: str  # the report's line in the summary ("junit: out/junit.xml")
    flag: str  # its option on `run` and `report`
    help: str
    write: Writer


def _junit(data: RunData, path: Path, settings: ReportSettings) -> None:
    from evalspec.reporters.junit import write_junit

    write_junit(data, path, settings.lang)


def _markdown(data: RunData, path: Path, settings: ReportSettings) -> None:
    from evalspec.reporters.markdown import render_markdown

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_markdown(data, lang=settings.lang, max_failures=settings.max_failures), encoding="utf-8")


def _html(data: RunData, path: Path, settings: ReportSettings) -> None:
    from evalspec.reporters.html import write_html

    path.parent.mkdir(parents=True, exist_ok=True)
    write_html(data, path, html_all=settings.html_all, lang=settings.lang)


#: in the order they are written and listed in the summary
FORMATS: tuple[ReportFormat, ...] = (
    ReportFormat("junit", "--junit", "write JUnit XML", _junit),
    ReportFormat("markdown", "--md", "write a Markdown summary", _markdown),
    ReportFormat("html", "--html", "write a self-contained HTML report", _html),
)


def write_reports(data: RunData, paths: Mapping[str, str], settings: ReportSettings,
                  formats: tuple[ReportFormat, ...] = FORMATS) -> dict[str, str]:
    """Each report asked for (`paths`: format name → file) → {format name: file}, in the table's order; an
    OSError names the report it was writing (a failed write names no file)."""
    written = {}
    for report in formats:
        raw = paths.get(report.name)
        if not raw:
            continue
        try:
            report.write(data, Path(raw), settings)
        except OSError as exc:
            if exc.filename is None:
                exc.filename = raw
            raise
        written[report.name] = raw
    return written
