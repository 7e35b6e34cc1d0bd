"""The bot's own state (SPEC §24): `state` and `buttons` checks on every scope, `not-`, a turn without
state (an error, never a pass), session rules over state, and `{reply, state, parts}` examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec.core.errors import ConfigError
from tests.helpers import check, invoke, spec, transcript

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"

STATES = [
    {"slots": {"city": "北京", "car_model": None}, "active_flow": None, "handoff": False, "n": 0},
    {"slots": {"city": "北京", "car_model": "瑶光"}, "active_flow": "book_test_drive", "handoff": False, "n": 1},
    {"slots": {"city": "北京", "car_model": "瑶光", "booking_id": "BK-0042"}, "active_flow": None,
     "handoff": False, "n": 2},
]
PARTS: list[list[dict[str, Any]]] = [
    [{"text": "您好", "buttons": [], "image": None, "custom": None}],
    [{"text": "选个时间", "buttons": [{"title": "周六", "payload": "/sat"}], "image": None, "custom": None},
     {"text": "或者", "buttons": [{"title": "周日", "payload": "/sun"}, {"title": "都不行", "payload": None}]}],
    [{"text": "已预约", "buttons": [{"title": "改约", "payload": "/change"}]}],
]


def shop(states: list[Any] = STATES, parts: list[Any] = PARTS) -> list[dict[str, Any]]:
    """A three-turn booking conversation whose replies carry the bot's state and parts."""
    messages = transcript(("你好", "您好"), ("我想试驾瑶光", "选个时间\n或者"), ("周六", "已预约"))
    for m in messages:
        if m["role"] == "assistant":
            if states[m["turn"] - 1] is not None:
                m["state"] = states[m["turn"] - 1]
            if parts[m["turn"] - 1] is not None:
                m["parts"] = parts[m["turn"] - 1]
    return messages


SHOP = shop()


def test_an_expression_passes_when_truthy_and_names_the_turn_and_the_value() -> None:
    ok = check("state: \"slots.car_model == '瑶光'\"", SHOP, turn=2)
    assert ok.passed is True and ok.error is None
    assert [(e.turn, e.text) for e in ok.evidence] == [(2, "slots.car_model == '瑶光' = true")]
    bad = check("state: \"slots.car_model == '瑶光'\"", SHOP, turn=1)
    assert bad.passed is False and bad.score == 0.0
    assert bad.reason == "slots.car_model == '瑶光' = false, not true"
    assert [e.turn for e in bad.evidence] == [1]


def test_truthiness_is_jmespath_s_zero_is_true_and_empty_or_null_is_false() -> None:
    assert check("state: n", SHOP, turn=1).passed is True  # 0 is truthy in JMESPath
    assert check("state: handoff", SHOP, turn=1).passed is False
    missing = check("state: slots.car_model", SHOP, turn=1)
    assert missing.passed is False and missing.evidence[0].text == "slots.car_model = null"


def test_equals_matches_in_and_exists_pass_and_fail_with_the_value_found() -> None:
    cases = [
        ("state: {path: active_flow, equals: book_test_drive}", 2, True, "active_flow = book_test_drive"),
        ("state: {path: active_flow, equals: book_test_drive}", 3, False,
         "active_flow = null, expected book_test_drive"),
        ("state: {path: slots.booking_id, matches: '^BK-\\d{4}$'}", 3, True, "slots.booking_id = BK-0042"),
        ("state: {path: slots.booking_id, matches: '^BK-\\d{4}$'}", 2, False,
         "slots.booking_id = null, does not match /^BK-\\d{4}$/"),
        ("state: {path: slots.car_model, in: [瑶光, 天枢]}", 2, True, "slots.car_model = 瑶光"),
        ("state: {path: slots.city, in: [上海, 深圳]}", 2, False, 'slots.city = 北京, not one of ["上海", "深圳"]'),
        ("state: {path: slots.booking_id, exists: true}", 3, True, "slots.booking_id = BK-0042"),
        ("state: {path: slots.booking_id, exists: true}", 2, False, "slots.booking_id = null, expected it to exist"),
        ("state: {path: slots.booking_id, exists: false}", 2, True, "slots.booking_id = null"),
        ("state: {path: slots.booking_id, exists: false}", 3, False,
         "slots.booking_id = BK-0042, expected it not to exist"),
        ("state: {path: n, equals: 1}", 2, True, "n = 1"),
        ("state: {path: n, equals: 1.0}", 2, True, "n = 1"),
        ("state: {path: n, equals: true}", 2, False, "n = 1, expected true"),  # JSON: true is not 1
        ("state: {path: handoff, in: [0, null]}", 2, False, "handoff = false, not one of [0, null]"),
        ("state: {path: slots, equals: {city: 北京, car_model: 瑶光}}", 2, True,
         'slots = {"city": "北京", "car_model": "瑶光"}'),
    ]
    for rule, turn, passed, reason in cases:
        result = check(rule, SHOP, turn=turn)
        assert (result.passed, result.reason) == (passed, reason), rule
        assert result.evidence[0].turn == turn


def test_not_state_negates_and_says_what_was_found() -> None:
    assert check("not-state: handoff", SHOP, turn=2).passed is True
    bad = check("not-state: {path: active_flow, equals: book_test_drive}", SHOP, turn=2)
    assert bad.passed is False and bad.reason == "unexpected: active_flow = book_test_drive"
    assert bad.evidence[0].turn == 2


def test_every_scope_reads_the_state_of_its_turns() -> None:
    flow = "state: {path: active_flow, equals: book_test_drive}"
    last = check(flow, SHOP)  # test level: last_response (turn 3)
    assert last.passed is False and last.evidence[0].turn == 3
    assert check("state: slots.booking_id", SHOP).passed is True
    assert check(flow + "\nscope: any_turn", SHOP).passed is True
    every = check(flow + "\nscope: each_turn", SHOP)
    assert every.passed is False and every.reason.startswith("2/3 replies failed (turns 1, 3)")
    assert check("state: slots.city\nscope: each_turn", SHOP).passed is True
    assert check(flow + "\nscope: {turns: [2]}", SHOP).passed is True
    named = check(flow + "\nscope: {turns: [booking]}", SHOP, labels={"booking": 2})
    assert named.passed is True and named.evidence[0].turn == 2
    assert check(flow + "\nscope: {turns: [1, 2]}", SHOP).passed is False
    never = check("not-state: handoff\nscope: each_turn", SHOP)
    assert never.passed is True and [e.turn for e in never.evidence] == [1, 2, 3]


def test_a_turn_without_state_is_an_error_never_a_pass_also_negated() -> None:
    stateless = shop(states=[STATES[0], None, STATES[2]])
    for rule in ("state: slots.city", "not-state: slots.city", "state: {path: slots.x, exists: false}",
                 "not-state: {path: slots.x, exists: true}"):
        result = check(rule, stateless, turn=2)
        assert result.passed is None and result.score is None, rule
        assert result.error == "turn 2 has no state to check: the provider reported none for it"
    every = check("not-state: handoff\nscope: each_turn", stateless)
    assert every.passed is None and every.error is not None and "turn 2" in every.error
    assert check("state: slots.city\nscope: any_turn", stateless).error is not None
    assert check("state: slots.city", stateless, turn=3).passed is True  # the turns that have one still grade


def test_conversation_scope_is_an_error_a_state_belongs_to_one_turn() -> None:
    result = check("state: slots.city\nscope: conversation", SHOP)
    assert result.passed is None and "scope each_turn, any_turn or last_response" in (result.error or "")


def test_buttons_at_least_in_any_order_across_every_part() -> None:
    ok = check("buttons: [周日, 周六]", SHOP, turn=2)
    assert ok.passed is True and ok.reason == "offers 周日 / 周六"
    assert [(e.turn, e.text) for e in ok.evidence] == [(2, "周六 / 周日 / 都不行")]
    bad = check("buttons: [周六, 下周一]", SHOP, turn=2)
    assert bad.passed is False and bad.reason == "missing 下周一 (buttons: 周六 / 周日 / 都不行)"
    none = check("buttons: [周六]", SHOP, turn=1)  # parts without buttons: a fail, not an error
    assert none.passed is False and none.reason == "missing 周六 (buttons: no buttons)"


def test_buttons_exact_wants_these_titles_and_no_other_in_order() -> None:
    assert check("buttons: [周六, 周日, 都不行]\nexact: true", SHOP, turn=2).passed is True
    more = check("buttons: [周六, 周日]\nexact: true", SHOP, turn=2)
    assert more.passed is False and more.reason == "buttons 周六 / 周日 / 都不行, expected exactly 周六 / 周日"
    assert check("buttons: [周日, 周六, 都不行]\nexact: true", SHOP, turn=2).passed is False
    assert check("buttons: [周六, 周日]\nexact: false", SHOP, turn=2).passed is True


def test_buttons_on_every_scope_and_negated() -> None:
    assert check("buttons: [改约]", SHOP).passed is True  # test level: the last reply
    assert check("buttons: [周六]", SHOP).passed is False
    assert check("buttons: [周六]\nscope: any_turn", SHOP).passed is True
    each = check("buttons: [周六]\nscope: each_turn", SHOP)
    assert each.passed is False and "turns 1, 3" in each.reason
    assert check("buttons: [周六]\nscope: {turns: [2]}", SHOP).passed is True
    negated = check("not-buttons: [周六]", SHOP, turn=2)
    assert negated.passed is False and negated.reason == "unexpected: offers 周六"
    assert check("not-buttons: [周六]\nscope: {turns: [1, 3]}", SHOP).passed is True


def test_buttons_on_a_turn_without_parts_is_an_error_also_negated() -> None:
    partless = shop(parts=[PARTS[0], None, PARTS[2]])
    for rule in ("buttons: [周六]", "not-buttons: [周六]", "buttons: [周六]\nexact: true"):
        result = check(rule, partless, turn=2)
        assert result.passed is None and result.error is not None and result.error.startswith("turn 2 has no parts")
    assert check("not-buttons: [周六]\nscope: each_turn", partless).error is not None


def test_the_values_are_checked_when_the_suite_loads() -> None:
    for rule, message in [("state: {path: a, equals: 1, exists: true}", "one comparison per state check: found "
                                                                         "equals, exists"),
                          ("state: 'slots.[=='", "bad JMESPath expression 'slots.[=='"),
                          ("state: {equals: 1}", "needs 'path'"),
                          ("state: {path: a, matches: '('}", "bad regex '('"),
                          ("buttons: []", "at least 1 item"),
                          ("buttons: [周六]\nexact: yes please", "exact"),
                          ("not-before: {state: 'a[==', turn: 2}", "bad JMESPath expression"),
                          ("not-before: {state: a, pattern: b, turn: 2}", "not-before")]:
        with pytest.raises(ConfigError) as caught:
            spec(rule)
        assert message in str(caught.value), (rule, str(caught.value))


SESSION_LABELS = {"signal": 2, "booked": 3}


def test_session_rules_take_a_state_expression() -> None:
    early = check("not-before: {state: \"active_flow == 'book_test_drive'\", turn: signal}", SHOP, SESSION_LABELS)
    assert early.passed is True
    late = check("not-before: {state: \"active_flow == 'book_test_drive'\", turn: booked}", SHOP, SESSION_LABELS)
    assert late.passed is False
    assert late.reason == "turn 2 matched state active_flow == 'book_test_drive' before turn 3"
    assert [(e.turn, e.text) for e in late.evidence] == [(2, "active_flow == 'book_test_drive' = true")]

    assert check("within: {state: slots.booking_id, after: signal, turns: 2}", SHOP, SESSION_LABELS).passed
    missed = check("within: {state: slots.booking_id, after: signal, turns: 1}", SHOP, SESSION_LABELS)
    assert missed.passed is False and missed.reason == "no reply in turn 2 matched state slots.booking_id"
    assert [(e.turn, e.text, e.note) for e in missed.evidence] == [(2, "slots.booking_id = null", "no match")]

    assert check("at-most: {state: active_flow, count: 1}", SHOP).passed is True
    many = check("at-most: {state: slots.car_model, count: 1}", SHOP)
    assert many.passed is False and [e.turn for e in many.evidence] == [2, 3]

    assert check("not-after: {state: active_flow, after: booked}", SHOP, SESSION_LABELS).passed is True
    after = check("not-after: {state: slots.car_model, after: signal}", SHOP, SESSION_LABELS)
    assert after.passed is False and after.evidence[0].turn == 2


def test_a_session_rule_on_state_is_an_error_where_a_turn_it_reads_has_none() -> None:
    stateless = shop(states=[STATES[0], None, STATES[2]])
    result = check("not-after: {state: handoff, after: 1}", stateless)
    assert result.passed is None and result.error is not None and "turn 2 has no state" in result.error
    before = check("not-before: {state: handoff, turn: 2}", stateless)  # reads turn 1 only: it has state
    assert before.passed is True


# examples (SPEC §18): `{reply, state, parts}` items and transcripts whose assistant entries carry them
def suite(asserts: str) -> str:
    return (f"providers: [{{id: bot, python: '{BOT}:respond'}}]\ntests:\n  - id: t\n    conversation:\n"
            f"      - user: 我想试驾瑶光\n        assert:\n{asserts}")


def validate(tmp_path: Path, asserts: str) -> tuple[int, str]:
    path = tmp_path / "s.yaml"
    path.write_text(suite(asserts), encoding="utf-8")
    return invoke("validate", "--strict", str(path))


STATE_EXAMPLES = """\
          - state: "slots.car_model == '瑶光'"
            severity: critical
            examples:
              fail: [{reply: 好的, state: {slots: {car_model: 天枢}}}]
              pass: [{state: {slots: {car_model: 瑶光}}}]
          - buttons: [周六, 周日]
            severity: critical
            examples:
              fail:
                - {reply: 选个时间, parts: [{text: 选个时间, buttons: [{title: 周六}]}]}
              pass:
                - {parts: [{text: a, buttons: [{title: 周日}]}, {text: b, buttons: [{title: 周六, payload: /sat}]}]}
"""


def test_state_and_buttons_examples_are_graded_offline(tmp_path: Path) -> None:
    code, output = validate(tmp_path, STATE_EXAMPLES)
    assert code == 0, output
    wrong = STATE_EXAMPLES.replace("car_model: 天枢}}}]", "car_model: 瑶光}}}]")
    code, output = validate(tmp_path, wrong)
    assert code == 2
    assert ("examples.fail[0]: fail example 1: the rule passed '好的' with state "
            '{"slots": {"car_model": "瑶光"}} — it does not catch this') in output
    exact = STATE_EXAMPLES.replace("- buttons: [周六, 周日]", "- buttons: [周六, 周日]\n            exact: true")
    code, output = validate(tmp_path, exact)
    assert code == 2 and "pass example 1: the rule failed 2 parts (" in output


def test_an_example_without_state_cannot_check_a_state_rule(tmp_path: Path) -> None:
    code, output = validate(tmp_path, "          - state: slots.city\n            examples: {fail: [好的]}\n")
    assert code == 2
    assert "fail example 1: the rule could not be checked on '好的': turn 1 has no state to check" in output


def test_a_session_rule_on_state_is_graded_on_transcript_examples(tmp_path: Path) -> None:
    rule = """\
    assert:
      - not-before: {state: "active_flow == 'book_test_drive'", turn: 2}
        severity: critical
        examples:
          fail:
            - [{user: 你好}, {assistant: 您好, state: {active_flow: book_test_drive}}, {user: 试驾}, {assistant: 好}]
          pass:
            - [{user: 你好}, {assistant: 您好, state: {active_flow: null}}, {user: 试驾}, {assistant: 好}]
"""
    path = tmp_path / "s.yaml"
    path.write_text(f"providers: [{{id: bot, python: '{BOT}:respond'}}]\ntests:\n  - id: t\n    conversation:\n"
                    f"      - user: 你好\n      - user: 试驾\n{rule}", encoding="utf-8")
    code, output = invoke("validate", "--strict", str(path))
    assert code == 0, output
    path.write_text(path.read_text(encoding="utf-8").replace("{active_flow: null}", "{active_flow: book_test_drive}"),
                    encoding="utf-8")
    code, output = invoke("validate", str(path))
    assert code == 2 and "pass example 1: the rule failed" in output and "(transcript)" in output


def test_a_malformed_state_example_is_refused_on_its_line(tmp_path: Path) -> None:
    code, output = validate(tmp_path, "          - buttons: [周六]\n            examples: "
                                      "{fail: [{reply: x, parts: [{text: a, buttons: [{label: 周六}]}]}]}\n")
    assert code == 2 and "examples.fail[0]" in output


# a whole run: a plugin provider kind that reports its state and parts, as SPEC §24's providers do
SHOP_PLUGIN = '''
from evalspec.extend.kinds import provider_kind
from evalspec.extend.provider import ProviderResponse


class Shop:
    def __init__(self, pid, stateless):
        self.id, self.stateless = pid, stateless

    def cache_identity(self):
        return {"shop": self.stateless}

    async def respond(self, messages, context):
        if self.stateless:
            return ProviderResponse("好的")
        said = messages[-1]["content"]
        state = {"slots": {"car_model": "瑶光" if "瑶光" in said else None}, "turn": context.turn}
        parts = [{"text": "选个时间", "buttons": [{"title": "周六", "payload": "/sat"}, {"title": "周日"}]}]
        return ProviderResponse("选个时间", state=state, parts=parts)


@provider_kind("shop", doc="a bot that reports its state", schema={"type": "boolean"})
def build_shop(spec, suite):
    return Shop(spec.id, spec.config["shop"] is False)
'''

RUN_SUITE = """\
plugins: [shop_plugin.py]
providers:
  - {id: shop, shop: true}
  - {id: plain, shop: false}
tests:
  - id: booked
    providers: [shop]
    conversation:
      - user: 我想试驾瑶光
        assert:
          - state: "slots.car_model == '瑶光'"
          - buttons: [周日, 周六]
      - user: 周六
    assert:
      - not-state: "slots.car_model == '瑶光'"
        scope: each_turn
      - state: {path: turn, equals: 2}
  - id: wrong
    providers: [shop]
    conversation:
      - user: 我想试驾天枢
        assert:
          - state: {path: slots.car_model, equals: 瑶光}
  - id: stateless
    providers: [plain]
    conversation:
      - user: 我想试驾瑶光
        assert:
          - not-state: handoff
"""




def test_a_run_grades_the_state_and_buttons_its_provider_reports(tmp_path: Path, clean_registries: None) -> None:
    import json

    (tmp_path / "shop_plugin.py").write_text(SHOP_PLUGIN, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(RUN_SUITE, encoding="utf-8")
    code, output = invoke("run", str(path), "-o", str(tmp_path / "run.json"), "--no-cache")
    assert code != 0, output
    results = {r["test_id"]: r for r in json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["results"]}
    assert {k: r["status"] for k, r in results.items()} == {"booked": "failed", "wrong": "failed",
                                                            "stateless": "error"}
    booked = [(a["type"], a["pass"], a["turn"]) for a in results["booked"]["assertions"]]
    assert booked == [("state", True, 1), ("buttons", True, 1), ("not-state", False, None), ("state", True, None)]
    negated = next(a for a in results["booked"]["assertions"] if a["pass"] is False)
    assert negated["reason"] == "1/2 replies failed (turns 1): unexpected: slots.car_model == '瑶光' = true"
    assert negated["evidence"] == [{"turn": 1, "text": "slots.car_model == '瑶光' = true"}]
    wrong = results["wrong"]["assertions"][0]
    assert wrong["pass"] is False and wrong["reason"] == "slots.car_model = null, expected 瑶光"
    stateless = results["stateless"]["assertions"][0]
    assert stateless["pass"] is None and "turn 1 has no state to check" in stateless["error"]
    assert [m.get("state") for m in results["booked"]["transcript"] if m["role"] == "assistant"] == [
        {"slots": {"car_model": "瑶光"}, "turn": 1}, {"slots": {"car_model": None}, "turn": 2}]
