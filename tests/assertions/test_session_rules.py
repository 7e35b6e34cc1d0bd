"""Session rules: pass and fail, with the failing turn and text as evidence."""

from __future__ import annotations

from tests.helpers import check, transcript

SALES = transcript(
    ("这台瑶光是哪年的车？", "2024年款。"),
    ("能分期吗？", "支持分期，欢迎到店试驾。"),
    ("好的，周六过去", "好的，周六见！"),
)
PUSHY = transcript(
    ("这台瑶光是哪年的车？", "2024年款，欢迎到店试驾！"),
    ("能分期吗？", "支持分期，首付3万。"),
    ("好的，周六过去", "好的，顺便说下现在优惠2万，再约个试驾？"),
)
LABELS = {"no_signal": 1, "purchase_signal": 2, "accepted": 3}


def test_not_before_passes_and_names_the_premature_turn() -> None:
    assert check("not-before: {pattern: 到店|试驾, turn: purchase_signal}", SALES, LABELS).passed
    bad = check("not-before: {pattern: 到店|试驾, turn: purchase_signal}", PUSHY, LABELS)
    assert bad.passed is False
    assert [(e.turn, e.text) for e in bad.evidence] == [(1, "到店")]
    assert "turn 1" in bad.reason


def test_within_window_from_label() -> None:
    assert check("within: {pattern: 到店|试驾, after: purchase_signal, turns: 1}", SALES, LABELS).passed
    bad = check("within: {pattern: 到店|试驾, after: purchase_signal}", PUSHY, LABELS)
    assert bad.passed is False
    assert bad.evidence[0].turn == 2 and "turn 2" in bad.reason


def test_within_window_stops_at_last_turn() -> None:
    result = check("within: {pattern: 周六见, after: 3, turns: 5}", SALES, LABELS)
    assert result.passed and result.evidence[0].turn == 3


def test_within_turns_widens_the_window() -> None:
    assert not check("within: {pattern: 周六见, after: 1, turns: 2}", SALES).passed
    assert check("within: {pattern: 周六见, after: 1, turns: 3}", SALES).passed


def test_at_most_counts_matching_replies() -> None:
    assert check("at-most: {pattern: 试驾, count: 1}", SALES).passed
    bad = check("at-most: {pattern: 试驾, count: 1}", PUSHY)
    assert bad.passed is False
    assert [e.turn for e in bad.evidence] == [1, 3]


def test_at_most_from_after() -> None:
    assert check("at-most: {pattern: 试驾, count: 1, after: 2}", PUSHY).passed
    assert not check("at-most: {pattern: 试驾, count: 0, after: 2}", PUSHY).passed


def test_not_after_catches_new_pitch_after_acceptance() -> None:
    assert check(r"not-after: {pattern: '优惠|首付|\d+万', after: accepted}", SALES, LABELS).passed
    bad = check(r"not-after: {pattern: '优惠|首付|\d+万', after: accepted}", PUSHY, LABELS)
    assert bad.passed is False
    assert bad.evidence[0].turn == 3 and bad.evidence[0].text == "优惠"


def test_turn_count_bounds() -> None:
    assert check("turn-count: {min: 2, max: 3}", SALES).passed
    assert not check("turn-count: {max: 2}", SALES).passed
    assert not check("turn-count: {min: 4}", SALES).passed


def test_session_rule_under_a_turn_reads_the_transcript_up_to_that_turn() -> None:
    # at turn 2, PUSHY has invited once; the third invitation comes later
    assert check("at-most: {pattern: 试驾, count: 1}", PUSHY, turn=2).passed
    assert not check("at-most: {pattern: 试驾, count: 1}", PUSHY).passed


def test_negated_session_rule() -> None:
    result = check("not-not-before: {pattern: 试驾, turn: 2}", PUSHY)
    assert result.passed is True and result.score == 1.0


def test_injected_history_is_not_checked() -> None:
    msgs = [
        {"role": "user", "content": "hi", "turn": 1},
        {"role": "assistant", "content": "欢迎到店试驾", "turn": 1, "injected": True},
        {"role": "user", "content": "价格？", "turn": 2},
        {"role": "assistant", "content": "19.99万", "turn": 2},
    ]
    assert check("not-before: {pattern: 试驾, turn: 2}", msgs).passed


def test_unknown_label_at_run_time_is_an_error() -> None:
    result = check("not-after: {pattern: x, after: missing}", SALES, LABELS)
    assert result.passed is None and "unknown turn label" in (result.error or "")
