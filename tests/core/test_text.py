"""JSON inside prose has one reader: the text checks and the judge find it the same way."""

from __future__ import annotations

import pytest

from evalspec.core.errors import GradingError
from evalspec.core.text import find_json, normalize, normalized
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


@pytest.mark.parametrize("names,text,read", [
    (["nfkc"], "１３９　１２３４（微信同号）ＶＩＰ", "139 1234(微信同号)VIP"),
    (["digits"], "139 1234-5678.9\n10", "139123456789\n10"),  # not across a line break
    (["nfkc", "digits"], "⒈2 电话 １３９　１２３４　５６７８", "12 电话 13912345678"),
    (["casefold", "nfkc"], "ᵛᴵᴾ Straße", "vip strasse"),
    ([], "ＶＩＰ", "ＶＩＰ"),
])
def test_normalize_reads_the_text_in_the_fixed_order(names, text, read) -> None:
    assert normalize(text, names) == read


def test_normalized_text_leads_back_to_the_text_as_written() -> None:
    seen = normalized("请加 １３９　１２３４　５６７８ 微信同号", ["digits", "nfkc"])
    start = seen.text.index("13912345678")
    assert seen.source(start, start + 11) == "１３９　１２３４　５６７８"
    assert seen.source(start, start) == ""
