"""What a reply is (evalspec/extend/transcript.py): the three kinds of assistant message a transcript holds
(a turn's reply, a tool round before it, golden history the test scripted) and which helper counts which."""

from __future__ import annotations

from typing import Any, cast

from evalspec.extend.transcript import Message, is_reply, is_system_message, replies, system_messages


def _m(role: str, content: str, turn: int | None, **flags: Any) -> Message:
    return cast(Message, {"role": role, "content": content, "turn": turn, "latency_ms": None, "tokens": None,
                          "cost": None, **flags})


USER_1 = _m("user", "你好", 1, history=True)
GOLDEN = _m("assistant", "您好，我是客服。", 1, injected=True)  # an `assistant:` line of the test
USER_2 = _m("user", "帮我查订单", 2)
ROUND = _m("assistant", "", 2, intermediate=True, tool_calls=[{"id": "c1", "name": "orders", "arguments": {}}])
RESULT = _m("tool", "[]", 2, tool_call_id="c1")
REPLY = _m("assistant", "您没有订单。", 2)
LAST_WORDS = _m("user", "谢谢，再见", None, not_sent=True)
TRANSCRIPT = [USER_1, GOLDEN, USER_2, ROUND, RESULT, REPLY, LAST_WORDS]


def test_a_reply_is_the_systems_last_word_on_a_turn() -> None:
    assert replies(TRANSCRIPT) == [REPLY]
    assert [is_reply(m) for m in (GOLDEN, ROUND, RESULT, REPLY, USER_2)] == [False, False, False, True, False]


def test_golden_history_counts_as_a_reply_only_as_the_conversation_heard_it() -> None:
    assert replies(TRANSCRIPT, golden=True) == [GOLDEN, REPLY]
    assert is_reply(GOLDEN, golden=True) and not is_reply(ROUND, golden=True)


def test_the_system_wrote_its_replies_and_its_tool_rounds_never_golden_history() -> None:
    assert system_messages(TRANSCRIPT) == [ROUND, REPLY]
    assert not is_system_message(GOLDEN) and not is_system_message(RESULT)
