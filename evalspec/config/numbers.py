"""Numbers are numbers (docs/en/rule-self-tests.md#verdicts-that-hold): NaN and ±inf are refused wherever a number is read.

NaN compares false with everything, so `min_pass_rate: .nan`, `min_score: .nan` or `rpm: .nan` would
pass every range check and switch their check off; infinity does the same to limits and time-outs.
One walk over a suite's data refuses them (a suite file's numbers all come from its YAML), and
`finite_problem` is the same words for a number read anywhere else (a command-line option, the API).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from evalspec.config.paths import PathKey


def finite_problem(value: Any, written: str | None = None) -> str | None:
    """Why `value` is not a number a check can use, or None (non-numbers are left to the schema)."""
    if not isinstance(value, float) or math.isfinite(value):
        return None
    shown = written or finite_word(value)
    why = "NaN compares false with everything" if math.isnan(value) else "an infinite value passes every limit"
    return f"{shown} is not a finite number ({why}, so it would switch a check off): write a finite number"


def non_finite(value: Any, path: PathKey = ()) -> Iterator[tuple[PathKey, str]]:
    """(path, problem) for every NaN or ±inf in `value`, YAML data of mappings and lists."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from non_finite(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from non_finite(item, (*path, i))
    elif (problem := finite_problem(value)) is not None:
        yield path, f"{problem}, or quote it if it is text ('{finite_word(value)}')"


def finite_word(value: float) -> str:
    return ("-.inf" if value < 0 else ".inf") if math.isinf(value) else ".nan"
