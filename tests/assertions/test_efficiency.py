"""`efficiency`: 1 − corrections / user turns, corrections found by correcting phrases in zh and en."""

from __future__ import annotations

from evalspec.assertions.efficiency import correcting_phrase
from tests.helpers import check, transcript


def test_chinese_corrections_lower_the_score_and_are_the_evidence() -> None:
    messages = transcript(("帮我按销售额排序", "好的，已按销售额排序"), ("不对，按利润排序", "好的，已按利润排序"),
                          ("只看华东区", "好的"), ("我说的是华北区！", "抱歉，已改为华北区"), ("是不是漏了一月？", "没有漏"))
    result = check("efficiency: {min: 0.8}", messages)
    assert result.score == 1 - 2 / 5 and result.passed is False
    assert [(e.turn, e.note) for e in result.evidence] == [(2, "correction: 不对"), (4, "correction: 我说的是")]


def test_english_corrections_and_questions_that_only_look_like_them() -> None:
    messages = transcript(("Book a table for two", "Done, for four."), ("No, I said two.", "Sorry, two it is."),
                          ("Is this not the cheapest option?", "It is."), ("OK. That’s not the time I asked for.", "Sorry, 7 pm then."))
    result = check("efficiency: {min: 0.7}", messages)
    assert [e.turn for e in result.evidence] == [2, 4]  # the second clause of turn 4 opens with "that's not"
    assert result.score == 0.5 and not result.passed
    assert check("efficiency:", messages[:2] + messages[4:6]).score == 1.0


def test_fillers_and_golden_history_are_not_user_turns() -> None:
    messages = transcript(("不对", "嗯"), ("今天天气怎么样？", "晴"), ("错了，是三个", "好的"))
    messages[2]["filler"] = True
    messages[0]["history"] = True
    result = check("efficiency:", messages)
    assert result.score == 0.0 and [e.turn for e in result.evidence] == [3]


def test_phrases_replace_the_built_in_list() -> None:
    messages = transcript(("不对，要红色的", "好的"), ("搞错了吧，我要蓝色", "好的"))
    result = check("efficiency: {phrases: [搞错了]}", messages)
    assert [e.turn for e in result.evidence] == [2] and result.score == 0.5


def test_a_phrase_counts_only_where_a_clause_starts() -> None:
    assert correcting_phrase("是不是这样？", ("不是",)) is None
    assert correcting_phrase("对不对", ("不对",)) is None
    assert correcting_phrase("好吧。不是这个", ("不是",)) == "不是"
    assert correcting_phrase("nothing, I said", ("no,",)) is None
    assert correcting_phrase("Well, I said Tuesday", ("I said",)) == "I said"
