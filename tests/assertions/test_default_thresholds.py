"""A type's declared default threshold is the one its check uses when the suite gives none."""

from __future__ import annotations

from evalspec.extend.registry import threshold_of
from tests.helpers import spec


def test_the_declared_default_applies_and_an_explicit_threshold_wins() -> None:
    assert threshold_of(spec("similar: 退款流程")) == 0.8
    assert threshold_of(spec("python: checks.py:score")) == 0.5
    assert threshold_of(spec("{similar: 退款流程, threshold: 0.3}")) == 0.3
    assert threshold_of(spec("contains: x")) == 0.5  # a type without a default
