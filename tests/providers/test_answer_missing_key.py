"""A judge's answer that is an object of its own but lacks a key it was asked for is named for that key,
not called a refusal (docs/en/judges.md#how-a-verdict-is-read): the error says what to fix."""

from __future__ import annotations

import pytest

from evalspec.core.errors import GradingError
from evalspec.providers.answers import Shown, read_answer

SCHEMA: dict[str, object] = {"type": "object", "required": ["reason", "winner"],
                             "properties": {"reason": {"type": "string"}, "winner": {"enum": ["A", "B", "tie"]}}}


def test_an_object_without_its_reason_is_named_for_the_missing_key() -> None:
    with pytest.raises(GradingError) as caught:
        read_answer('{"winner": "B"}', SCHEMA, shown=Shown())
    assert "has no 'reason' (it was asked for reason, winner)" in str(caught.value)
    assert "refusal" not in str(caught.value)


def test_prose_is_still_a_refusal() -> None:
    with pytest.raises(GradingError, match="not a JSON verdict .*a refusal"):
        read_answer("我觉得 B 更好。", SCHEMA, shown=Shown())
