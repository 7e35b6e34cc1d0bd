"""The reporters' fixed run (fixtures/run.json, rebuilt by fixtures/make_fixture.py) and golden files."""

from __future__ import annotations

import copy
import io
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from rich.console import Console

from evalspec.reporters.console import print_summary
from evalspec.reporters.junit import build_junit

FIXTURES = Path(__file__).parent / "fixtures"
RUN = json.loads((FIXTURES / "run.json").read_text(encoding="utf-8"))


def fixed() -> dict[str, Any]:
    """Passed, failed (critical and not), error, xfailed, xpassed, a draft, measured curve points, a missed SLA."""
    return copy.deepcopy(RUN)


def sections() -> dict[str, Any]:
    """fixtures/sections.json (rebuilt by fixtures/make_sections.py): attacks on red lines, a judged assertion
    with the judge's second opinion (a flagged type, a suggested attribution), tool calls, failed teardowns."""
    return json.loads((FIXTURES / "sections.json").read_text(encoding="utf-8"))


def check_golden(name: str, text: str) -> None:
    """Compare with fixtures/NAME; EVALSPEC_UPDATE_GOLDEN=1 rewrites it instead."""
    path = FIXTURES / name
    if os.environ.get("EVALSPEC_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs (EVALSPEC_UPDATE_GOLDEN=1 to accept)"


def console_text(run: dict[str, Any]) -> str:
    out = io.StringIO()
    print_summary(Console(file=out, width=120, no_color=True, highlight=False, soft_wrap=True), run, {})
    return out.getvalue()


def junit_text(run: dict[str, Any]) -> str:
    root = build_junit(run)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"
