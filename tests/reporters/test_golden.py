"""Console (no colour), Markdown and JUnit of one fixed run, byte for byte."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from typing import Any

from rich.console import Console

from evalspec.reporters.console import print_summary
from evalspec.reporters.junit import build_junit
from evalspec.reporters.markdown import render_markdown
from tests.reporters.golden import check_golden


def console_text(run: dict[str, Any]) -> str:
    out = io.StringIO()
    print_summary(Console(file=out, width=120, no_color=True, highlight=False, soft_wrap=True), run, {})
    return out.getvalue()


def junit_text(run: dict[str, Any]) -> str:
    root = build_junit(run)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def test_console_summary_matches_its_golden_file(fixed_run: dict[str, Any]) -> None:
    check_golden("console.txt", console_text(fixed_run))


def test_markdown_matches_its_golden_file(fixed_run: dict[str, Any]) -> None:
    check_golden("summary.md", render_markdown(fixed_run, env={}))


def test_junit_matches_its_golden_file(fixed_run: dict[str, Any]) -> None:
    check_golden("junit.xml", junit_text(fixed_run))
