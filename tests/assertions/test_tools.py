"""Tool-call assertions and `tool:` session rules, on transcripts with tool rounds (SPEC §13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec.assertions.graded import format_transcript
from evalspec.core.errors import ConfigError
from evalspec.play.simulated import flipped
from tests.helpers import check, spec


def call(name: str, cid: str, **args: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": args}


def agent_turn(turn: int, user: str, rounds: list[list[dict[str, Any]]], reply: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": user, "turn": turn}]
    for calls in rounds:
        out.append({"role": "assistant", "content": "", "turn": turn, "tool_calls": calls, "intermediate": True})
        out.extend({"role": "tool", "content": "ok", "turn": turn, "tool_call_id": c["id"], "name": c["name"]}
                   for c in calls)
    out.append({"role": "assistant", "content": reply, "turn": turn, "latency_ms": 5.0, "tokens": 3, "cost": None})
    return out


# the flaw of the demo agent: it books before the customer has said when
EAGER = (agent_turn(1, "瑶光有现车吗？", [[call("lookup_stock", "a", model="瑶光")]], "有现车，已为您预约试驾")
         + agent_turn(2, "我想周六来", [[call("book_test_drive", "b", model="瑶光", time="周六")]], "已预约周六")
         + agent_turn(3, "再约一次周日", [[call("book_test_drive", "c", model="瑶光", time="周日 10:00"),
                                        call("lookup_stock", "d", model="追风", city="北京")]], "好的"))
EAGER[1]["tool_calls"].append(call("book_test_drive", "e", model="瑶光"))
LABELS = {"time_given": 2}


def test_tool_called_counts_calls_on_the_whole_conversation_by_default() -> None:
    assert check("tool-called: book_test_drive", EAGER).passed
    result = check("tool-called: {name: book_test_drive, count: {max: 2}}", EAGER)
    assert result.passed is False and "called 3 time(s)" in result.reason
    assert [e.turn for e in result.evidence] == [1, 2, 3]
    assert check("tool-called: {name: book_test_drive, count: {min: 3, max: 3}}", EAGER).passed


def test_tool_called_args_are_a_subset_match_with_full_match_regexes() -> None:
    assert check("tool-called: {name: lookup_stock, args: {model: 追风}}", EAGER).passed
    assert check("tool-called: {name: book_test_drive, args: {time: 're:周[六日] \\d\\d:\\d\\d'}}", EAGER).passed
    partial = check("tool-called: {name: book_test_drive, args: {time: 're:周'}}", EAGER)  # regex must match whole
    assert partial.passed is False and "with other arguments" in partial.reason
    assert check("tool-called: {name: lookup_stock, args: {model: 凌云}}", EAGER).passed is False


def test_under_a_turn_tool_assertions_read_only_that_turns_calls() -> None:
    assert check("tool-called: lookup_stock", EAGER, turn=1).passed
    result = check("tool-called: lookup_stock", EAGER, turn=2)
    assert result.passed is False and "in turn 2" in result.reason
    assert check("not-tool-called: book_test_drive", EAGER, turn=1).passed is False
    assert check("tool-called: book_test_drive\nscope: {turns: [2, 3]}", EAGER).passed


def test_not_tool_called_takes_a_name_or_a_list() -> None:
    assert check("not-tool-called: send_coupon", EAGER).passed
    result = check("not-tool-called: [send_coupon, book_test_drive]", EAGER)
    assert result.passed is False and result.evidence[0].turn == 1
    assert result.evidence[0].text == 'book_test_drive({"model": "瑶光"})'


@pytest.mark.parametrize("mode, calls, passed", [
    ("strict", ["lookup_stock", "book_test_drive", "book_test_drive", "book_test_drive", "lookup_stock"], True),
    ("strict", ["lookup_stock", "book_test_drive", "lookup_stock", "book_test_drive", "book_test_drive"], False),
    ("strict", ["lookup_stock", "book_test_drive"], False),
    ("unordered", ["book_test_drive", "lookup_stock", "book_test_drive", "lookup_stock", "book_test_drive"], True),
    ("unordered", ["book_test_drive", "lookup_stock", "lookup_stock"], False),
    ("subset", ["lookup_stock", "lookup_stock", "book_test_drive", "book_test_drive", "book_test_drive", "x"], True),
    ("subset", ["lookup_stock", "book_test_drive"], False),  # the agent booked more often than the reference allows
    ("superset", ["book_test_drive", "lookup_stock"], True),
    ("superset", ["lookup_stock", "lookup_stock", "lookup_stock"], False),
])
def test_tool_sequence_has_agentevals_four_modes(mode: str, calls: list[str], passed: bool) -> None:
    result = check(f"tool-sequence: {{calls: {calls}, mode: {mode}}}", EAGER)
    assert result.passed is passed, result.reason
    assert result.reason.startswith(mode)


def test_tool_sequence_entries_may_name_arguments_and_default_to_strict() -> None:
    turn2 = "tool-sequence: {calls: [{name: book_test_drive, args: {time: 周六}}]}\nscope: {turns: [2]}"
    assert check(turn2, EAGER).passed
    wrong = check(turn2.replace("周六", "周日"), EAGER)
    assert wrong.passed is False and "call 1 is book_test_drive" in wrong.reason


TOOLS = [{"type": "function", "function": {"name": "book_test_drive", "parameters": {
    "type": "object", "required": ["model", "time"], "properties": {"time": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "lookup_stock", "parameters": {
             "type": "object", "required": ["model"], "additionalProperties": False,
             "properties": {"model": {"type": "string"}, "city": {"type": "string"}}}}}]


def test_tool_args_valid_checks_each_call_against_the_declared_schema() -> None:
    result = check("type: tool-args-valid", EAGER, tools=TOOLS)
    assert result.passed is False
    assert [(e.turn, e.note) for e in result.evidence] == [(1, "'time' is a required property")]
    assert check("type: tool-args-valid", EAGER, turn=2, tools=TOOLS).passed


def test_tool_args_valid_fails_a_call_to_an_undeclared_tool_and_reads_tools_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "agent_tools.py").write_text(f"TOOLS = {TOOLS[:1]!r}\n", encoding="utf-8")
    result = check("tool-args-valid: true", EAGER, turn=3, suite_dir=tmp_path, tools="agent_tools.py:TOOLS")
    assert result.passed is False and result.evidence[-1].note == "not a declared tool"
    none = check("tool-args-valid: true", EAGER, turn=2, tools=None)
    assert none.passed is False and none.evidence[0].note == "the provider declares no tools"


def test_session_rules_take_a_tool_instead_of_a_pattern() -> None:
    early = check("not-before: {tool: book_test_drive, turn: time_given}", EAGER, LABELS)
    assert early.passed is False and "turn 1 matched tool book_test_drive before turn 2" in early.reason
    assert check("not-before: {tool: lookup_stock, turn: 3}", EAGER, LABELS).passed is False
    assert check("not-before: {tool: send_coupon, turn: 3}", EAGER, LABELS).passed
    assert check("within: {tool: book_test_drive, after: time_given}", EAGER, LABELS).passed
    assert check("within: {tool: lookup_stock, after: time_given}", EAGER, LABELS).passed is False
    at_most = check("at-most: {tool: book_test_drive, count: 1, after: time_given}", EAGER, LABELS)
    assert at_most.passed is False and "2 calls to book_test_drive" in at_most.reason
    assert check("not-after: {tool: book_test_drive, after: 3}", EAGER, LABELS).passed is False
    assert check("not-after: {tool: send_coupon, after: 1}", EAGER, LABELS).passed


def test_a_session_rule_needs_exactly_one_of_pattern_and_tool() -> None:
    with pytest.raises(ConfigError, match="needs 'pattern' or 'tool'"):
        spec("not-after: {tool: a, pattern: b, after: 1}")
    with pytest.raises(ConfigError, match="needs 'pattern' or 'tool'"):
        spec("not-after: {after: 1}")


def test_text_assertions_read_a_turns_last_message_and_judges_see_the_calls() -> None:
    assert check("contains: 已预约周六", EAGER, turn=2).passed
    assert check("tokens: 9\nscope: conversation", EAGER).passed  # intermediate rounds carry no figures
    text = format_transcript(EAGER)
    assert '[turn 1] Assistant called tool lookup_stock({"model": "瑶光"})' in text
    assert "[turn 1] Tool lookup_stock returned: ok" in text


def test_simulated_users_do_not_see_tool_calls() -> None:
    seen = flipped(EAGER)
    assert [m["content"] for m in seen][:2] == ["瑶光有现车吗？", "有现车，已为您预约试驾"]
    assert all("tool_calls" not in m and m["content"] for m in seen)


def test_attackers_see_every_reply_but_no_tool_round() -> None:
    from evalspec.play.attack import flipped as attacker_view

    reported = [{"role": "user", "content": "hi", "turn": 1},
                {"role": "assistant", "content": "booked", "turn": 1, "tool_calls": [call("book_test_drive", "x")]}]
    assert [m["content"] for m in attacker_view(EAGER + reported)][-2:] == ["hi", "booked"]
    assert "" not in [m["content"] for m in attacker_view(EAGER)]
