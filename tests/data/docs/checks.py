"""Checks the manual's examples name (`python: checks.py:polite`); tests/test_docs.py puts this file
beside every example suite it validates."""

from __future__ import annotations

from typing import Any


def polite(output: str, context: dict[str, Any]) -> float:
    """1.0 when the reply addresses the customer politely (您), else 0.0."""
    return 1.0 if "您" in output else 0.0
