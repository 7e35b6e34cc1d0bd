"""JSON inside prose has one reader: the text checks and the judge find it the same way."""

from __future__ import annotations

import pytest

from evalspec.core.errors import GradingError
from evalspec.core.text import find_json
from evalspec.providers.judge import parse_verdict


def test_json_is_found_whole_fenced_or_inside_prose() -> None:
    assert find_json('  {"a": 1} ') == (True, {"a": 1})
    assert find_json("42") == (True, 42)  # the whole reply may be any JSON value
    assert find_json('好的，结果如下：\n```json\n{"城市": "北京"}\n```\n还需要别的吗？') == (True, {"城市": "北京"})
    assert find_json('订单是 [1, 2] 和 {"id": 3}') == (True, [1, 2])
    assert find_json("没有 JSON {坏的}") == (False, None)


def test_a_verdict_is_a_json_object_and_prose_is_no_verdict() -> None:
    assert find_json('I think [1] fits: {"pass": true}', objects_only=True) == (True, {"pass": True})
    assert parse_verdict('Verdict:\n```json\n{"reason": "ok", "pass": false}\n```') == {"reason": "ok", "pass": False}
    with pytest.raises(GradingError, match="not a JSON verdict .*a refusal"):
        parse_verdict("[1, 2] the reply passes")
