"""memory-recall scoring (exact, fuzzy, partial credit) and refers-to / asks-clarification."""

from __future__ import annotations

import pytest

from evalspec.assertions.memory import fuzzy_mention, mentions, recall_key
from tests.helpers import check, transcript


@pytest.mark.parametrize("expected,reply,score", [
    ("北京", "您在北京市工作", 1.0),
    ("测试工程师", "您是做测试的", 0.5),
    ("上海市", "您在上海", 0.5),
    ("张三", "您叫李四", 0.0),
    ("Alice", "Your name is alice.", 1.0),
    ("Al", "Your name is Alice.", 0.0),  # Latin on word boundaries
    ("Software Engineer", "you are an engineer", 0.5),
    (["Boston", "波士顿"], "你住在波士顿", 1.0),
])
def test_recall_key_scores(expected: object, reply: str, score: float) -> None:
    assert recall_key(reply, expected, fuzzy=True, partial=0.5)[0] == score


def test_partial_credit_and_mean_over_keys() -> None:
    result = check("memory-recall: {name: 张三, city: 北京, job: 测试工程师}",
                   transcript(("还记得我吗？", "您叫张三，在北京市，做测试的。")))
    assert result.score == pytest.approx((1 + 1 + 0.5) / 3)
    assert result.passed is False  # default threshold 1.0
    notes = {e.note.split(":")[0]: e for e in result.evidence}
    assert notes["job"].text == "测试" and "fuzzy" in notes["job"].note


def test_memory_recall_passes_with_exact_hits() -> None:
    result = check("memory-recall: {name: 张三, city: 北京}", transcript(("?", "您叫张三，在北京。")))
    assert result.passed is True and result.score == 1.0


def test_fuzzy_off_and_custom_partial_credit() -> None:
    reply = transcript(("?", "您是做测试的"))
    assert check("{memory-recall: {job: 测试工程师}, fuzzy: false}", reply).score == 0.0
    assert check("{memory-recall: {job: 测试工程师}, partial_credit: 0.25}", reply).score == 0.25
    assert check("{memory-recall: {job: 测试工程师}, threshold: 0.5}", reply).passed is True


def test_fuzzy_needs_two_consecutive_cjk_characters() -> None:
    assert fuzzy_mention("北方", "北京") is None
    assert fuzzy_mention("在京北", "北京") is None
    assert mentions("I like CATS", "cats") == "CATS"


def test_refers_to_right_entity_and_no_distractor() -> None:
    spec = "refers-to: {expected: [瑶光, Yaoguang], not: [追风]}"
    assert check(spec, transcript(("它的续航？", "瑶光续航620公里"))).passed
    wrong = check(spec, transcript(("它的续航？", "追风续航510公里")))
    assert wrong.passed is False and wrong.evidence[0].text == "追风"
    both = check(spec, transcript(("它的续航？", "瑶光比追风远")))
    assert both.passed is False
    assert check("refers-to: 瑶光", transcript(("?", "没有提到"))).passed is False


def test_asks_clarification_heuristic() -> None:
    assert check("{asks-clarification: null, mode: heuristic}", transcript(("它多少钱？", "请问您指的是哪款车型？"))).passed
    result = check("{asks-clarification: null, mode: heuristic}", transcript(("它多少钱？", "19.99万。")))
    assert result.passed is False and result.score == 0.0
    assert check("{asks-clarification: null, mode: heuristic}", transcript(("how much?", "Which model do you mean?"))).passed


def test_asks_clarification_without_judge_is_an_error() -> None:
    result = check("asks-clarification: null", transcript(("它多少钱？", "请问是哪款？")))
    assert result.passed is None and "judge" in (result.error or "")
