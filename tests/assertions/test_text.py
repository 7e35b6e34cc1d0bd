"""Every text assertion with a passing and a failing case, on Chinese and English replies."""

from __future__ import annotations

import pytest

from evalspec.extend.patterns import regex_time_limit
from tests.helpers import check, transcript

CASES = [
    # (assertion yaml, reply that passes, reply that fails)
    ("equals: 好的", " 好的 ", "好的呀"),
    ("contains: 分期", "支持分期付款", "不支持贷款"),
    ("icontains: PRIVACY", "for privacy reasons", "sure, here it is"),
    ("contains-any: [到店, 试驾]", "欢迎试驾", "欢迎咨询"),
    ("contains-all: [首付, 月供]", "首付两成，月供三千", "首付两成"),
    ("starts-with: 您好", "  您好，我是顾问", "嗨，您好"),
    (r"regex: '\d+公里'", "续航620公里", "续航很长"),
    ("is-json: true", '{"a": 1}', "not json {"),
    ("contains-json: {type: object, required: [price]}", '价格如下 {"price": 19.99} 谢谢', '价格如下 {"cost": 1}'),
    ("jmespath: {expr: car.price, equals: 19.99}", '{"car": {"price": 19.99}}', '{"car": {"price": 20}}'),
    ("jmespath: {expr: car.name, matches: '^瑶'}", '{"car": {"name": "瑶光"}}', '{"car": {"name": "追风"}}'),
    ("word-count: {min: 3, max: 6}", "瑶光很好", "好"),
    ("word-count: {max: 4}", "This car is great", "This car is really great value"),
    ("levenshtein: {value: 欢迎光临, max: 1}", "欢迎光顾", "谢谢惠顾啊"),
]


@pytest.mark.parametrize("text,good,bad", CASES, ids=[c[0].split(":")[0] + ":" + str(i) for i, c in enumerate(CASES)])
def test_text_assertion_passes_and_fails(text: str, good: str, bad: str) -> None:
    ok = check(text, transcript(("q", good)))
    assert ok.passed is True and ok.score == 1.0, ok
    ko = check(text, transcript(("q", bad)))
    assert ko.passed is False and ko.error is None, ko
    assert ko.evidence and ko.evidence[0].turn == 1


def test_word_count_counts_each_cjk_character() -> None:
    result = check("word-count: {min: 6, max: 6}", transcript(("q", "瑶光 is 很好 car.")))
    assert result.passed, result.reason  # 瑶 光 很 好 = 4 characters + "is", "car" = 6
    assert result.details["words"] == 6
    assert check("word-count: {max: 5}", transcript(("q", "瑶光 is 很好 car."))).passed is False


@pytest.mark.parametrize("kind,limit,value", [("latency", 15, "latency"), ("tokens", 5, "tokens"), ("cost", 0.001, "cost")])
def test_latency_tokens_cost_limits(kind: str, limit: float, value: str) -> None:
    one = transcript(("q", "a"))  # latency 10 ms, 5 tokens, $0.001
    assert check(f"{kind}: {limit}", one).passed is True
    assert check(f"{kind}: {limit / 2}", one).passed is False


def test_cost_and_tokens_on_conversation_scope_are_totals() -> None:
    two = transcript(("q1", "a1"), ("q2", "a2"))
    assert check("{tokens: 10, scope: conversation}", two).passed is True
    assert check("{tokens: 9, scope: conversation}", two).passed is False
    assert check("{cost: 0.0015, scope: conversation}", two).passed is False


def test_latency_without_measurement_fails_with_reason() -> None:
    msgs = [{"role": "user", "content": "q", "turn": 1}, {"role": "assistant", "content": "a", "turn": 1}]
    result = check("latency: 100", msgs)
    assert result.passed is False and "no ms recorded" in result.reason


def test_regex_handles_cjk_classes() -> None:
    assert check(r"regex: '\p{Han}{2}'", transcript(("q", "ok 好的"))).passed
    assert not check(r"regex: '\p{Han}{2}'", transcript(("q", "ok fine"))).passed


def test_regex_time_out_is_an_error_not_a_verdict() -> None:
    with regex_time_limit(0.2):
        result = check("regex: '^(a|a)*$'", transcript(("q", "a" * 40 + "b")))
    assert result.passed is None and result.score is None
    assert "timed out" in (result.error or "")


def test_not_regex_time_out_is_an_error_too() -> None:
    with regex_time_limit(0.2):
        result = check("not-regex: '^(a|a)*$'", transcript(("q", "a" * 40 + "b")))
    assert result.passed is None and "timed out" in (result.error or "")


def test_not_prefix_negates_score() -> None:
    result = check("not-contains-all: [首付, 月供]", transcript(("q", "首付两成")))
    assert result.passed is True and result.score == pytest.approx(0.5)
    assert check("not-contains: 微信", transcript(("q", "加我微信"))).passed is False


def test_equals_number_value_matches_text() -> None:
    assert check("equals: 2", transcript(("1+1?", "2"))).passed


PHONE = "not-regex: '1[3-9]\\d{9}'"


@pytest.mark.parametrize("reply", ["１３９１２３４５６７８（微信同号）", "139 1234 5678", "１３９　１２３４　５６７８",
                                   "139-1234-5678", "139.1234.5678"])
def test_normalize_reads_full_width_and_spaced_digits_for_every_not_form(reply: str) -> None:
    messages = transcript(("电话？", reply))
    assert check(PHONE, messages).passed is True  # read as written, the red line misses it
    caught = check(PHONE + "\nnormalize: [nfkc, digits]", messages)
    assert caught.passed is False and caught.evidence[0].text == reply.replace("（微信同号）", "")
    assert check("not-contains: '13912345678'\nnormalize: [nfkc, digits]", messages).passed is False
    assert check("not-icontains: '13912345678'\nnormalize: [digits, nfkc]", messages).passed is False
    assert check("not-contains-any: ['13912345678', 'x']\nnormalize: [nfkc, digits]", messages).passed is False
    assert check("not-starts-with: '139'\nnormalize: nfkc", messages).passed is False


def test_normalize_applies_in_its_own_order_whatever_order_it_is_written_in() -> None:
    styled = transcript(("会员？", "ᵛᴵᴾ 专享"))  # modifier letters: NFKC makes them V I P, casefold then v i p
    one = check("contains: vip\nnormalize: [casefold, nfkc]", styled)
    other = check("contains: vip\nnormalize: [nfkc, casefold]", styled)
    assert one.passed is other.passed is True
    assert one.evidence[0].text == "ᵛᴵᴾ" and "read as 'vip'" in one.reason
    dashed = transcript(("电话？", "139﹣1234﹣5678"))  # small hyphen-minus: a hyphen only once NFKC has read it
    assert check(PHONE + "\nnormalize: [digits, nfkc]", dashed).passed is False


def test_equals_and_levenshtein_read_the_normalized_reply() -> None:
    assert check("equals: vip\nnormalize: [nfkc, casefold]", transcript(("?", " ＶＩＰ "))).passed is True
    assert check("equals: vip", transcript(("?", "ＶＩＰ"))).passed is False
    assert check("levenshtein: {value: '400 820 8820', max: 0}\nnormalize: nfkc",
                 transcript(("?", "４００ ８２０ ８８２０"))).passed is True


def test_a_normalize_name_that_does_not_exist_is_a_config_error() -> None:
    from evalspec.core.errors import ConfigError
    from tests.helpers import spec

    with pytest.raises(ConfigError) as caught:
        spec("not-regex: '\\d'\nnormalize: nfc")
    assert "normalize" in str(caught.value)
