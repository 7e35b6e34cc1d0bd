"""Every scope with a passing and a failing case, and negation applied before the scope combines."""

from __future__ import annotations

import pytest

from evalspec.core.errors import ConfigError
from tests.helpers import check, transcript
from tests.helpers import spec as parse

CHAT = transcript(("a", "您好"), ("b", "欢迎试驾"), ("c", "好的"))


def test_turn_scope_reads_the_attached_turn() -> None:
    assert check("contains: 试驾", CHAT, turn=2).passed
    bad = check("contains: 试驾", CHAT, turn=3)
    assert bad.passed is False and bad.evidence[0].turn == 3


def test_each_turn_all_must_pass_score_is_mean() -> None:
    assert check("{not-contains: 微信, scope: each_turn}", CHAT).passed
    bad = check("{not-contains: 试驾, scope: each_turn}", CHAT)
    assert bad.passed is False and bad.score == pytest.approx(2 / 3)
    assert [e.turn for e in bad.evidence] == [2]
    assert "turns 2" in bad.reason


def test_any_turn_one_must_pass_score_is_max() -> None:
    assert check("{contains: 试驾, scope: any_turn}", CHAT).score == 1.0
    assert check("{contains: 微信, scope: any_turn}", CHAT).passed is False


def test_any_turn_with_negation_means_one_reply_does_not_match() -> None:
    assert check("{not-contains: 好, scope: any_turn}", CHAT).passed is True  # "欢迎试驾" lacks 好
    assert check("{not-regex: '.', scope: any_turn}", CHAT).passed is False


def test_last_response_is_default_at_test_level() -> None:
    assert check("contains: 好的", CHAT).passed
    assert not check("contains: 试驾", CHAT).passed


def test_conversation_scope_reads_all_replies_joined() -> None:
    result = check("{contains-all: [您好, 试驾, 好的], scope: conversation}", CHAT)
    assert result.passed
    assert not check("{contains: 微信, scope: conversation}", CHAT).passed


def test_turn_list_and_label_scopes() -> None:
    labels = {"signal": 2}
    assert check("{contains: 试驾, scope: {turns: signal}}", CHAT, labels).passed
    bad = check("{contains: 试驾, scope: {turns: [2, 3]}}", CHAT, labels)
    assert bad.passed is False and bad.score == 0.5 and bad.evidence[0].turn == 3


def test_scope_validation() -> None:
    with pytest.raises(ConfigError, match="always reads the whole transcript"):
        parse("{within: {pattern: x, after: 1}, scope: each_turn}")
    with pytest.raises(ConfigError, match="only for assertions under a turn"):
        parse("{contains: x, scope: turn}")
    with pytest.raises(ConfigError, match="did you mean 'each_turn'"):
        parse("{contains: x, scope: each_trun}")


def test_llm_rubric_defaults_to_conversation_scope() -> None:
    assert parse("llm-rubric: 语气自然").scope == "conversation"
    assert parse("contains: x").scope == "last_response"
    assert parse("contains: x", under_turn=2).scope == "turn"


def test_short_and_full_forms_are_equivalent() -> None:
    short = parse("{memory-recall: {name: 张三}, fuzzy: false, weight: 2, severity: critical}")
    full = parse("{type: memory-recall, value: {name: 张三}, fuzzy: false, weight: 2, severity: critical}")
    for field in ("type", "negate", "value", "scope", "weight", "severity", "options"):
        assert getattr(short, field) == getattr(full, field)


def test_option_names_are_never_read_as_the_value() -> None:
    s = parse("{memory-recall: {name: 张三}, fuzzy: false, partial_credit: 0.2}")
    assert s.value == {"name": "张三"} and s.options == {"fuzzy": False, "partial_credit": 0.2}
    with pytest.raises(ConfigError, match="unknown key 'fuzy'.*did you mean 'fuzzy'"):
        parse("{memory-recall: {name: 张三}, fuzy: false}")


def test_explicit_threshold_turns_the_combined_score_into_the_verdict() -> None:
    # 2 of 3 replies lack 试驾: mean 1/3
    assert check("{contains: 试驾, scope: each_turn, threshold: 0.3}", CHAT).passed is True
    assert check("{contains: 试驾, scope: each_turn, threshold: 0.5}", CHAT).passed is False
    assert check("{not-contains: 试驾, scope: each_turn, threshold: 0.6}", CHAT).passed is True
