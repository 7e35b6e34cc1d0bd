"""The reporters' fixed run (fixtures/run.json, rebuilt by fixtures/make_fixture.py) and golden files."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

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
