"""Console (no colour), Markdown and JUnit of one fixed run, byte for byte."""

from __future__ import annotations

from typing import Any

from evalspec.reporters.markdown import render_markdown
from tests.reporters.golden import check_golden, console_text, junit_text


def test_console_summary_matches_its_golden_file(fixed_run: dict[str, Any]) -> None:
    check_golden("console.txt", console_text(fixed_run))


def test_markdown_matches_its_golden_file(fixed_run: dict[str, Any]) -> None:
    check_golden("summary.md", render_markdown(fixed_run, env={}))


def test_junit_matches_its_golden_file(fixed_run: dict[str, Any]) -> None:
    check_golden("junit.xml", junit_text(fixed_run))
