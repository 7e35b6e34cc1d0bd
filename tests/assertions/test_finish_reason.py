"""`finish-reason`: why the model stopped, per reply, on every reply scope; each provider's word read as
OpenAI's; `not-`; a reply with no finish reason is an error (never a pass or a fail); examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec.core.errors import ConfigError
from evalspec.extend.provider import normalize_finish_reason
from tests.helpers import check, invoke, spec, transcript


def cut_short(*reasons: str | None) -> list[dict[str, Any]]:
    """A conversation whose replies stopped for these reasons (None: none recorded)."""
    messages = transcript(*[(f"问题{i}", f"回答{i}") for i in range(1, len(reasons) + 1)])
    for m in messages:
        if m["role"] == "assistant" and reasons[m["turn"] - 1] is not None:
            m["finish_reason"] = reasons[m["turn"] - 1]
    return messages


@pytest.mark.parametrize(("word", "read_as"), [
    ("stop", "stop"), ("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"),
    ("max_output_tokens", "length"), ("tool_use", "tool_calls"), ("function_call", "tool_calls"),
    ("refusal", "content_filter"), ("content-filter", "content_filter"), (" STOP ", "stop"),
    ("pause_turn", "pause_turn"), ("SAFETY", "safety"), ("", None), ("  ", None), (None, None), (3, None)])
def test_each_providers_word_is_read_as_openais(word: Any, read_as: str | None) -> None:
    assert normalize_finish_reason(word) == read_as


def test_the_last_reply_is_checked_by_default_and_evidence_names_its_turn_and_reason() -> None:
    messages = cut_short("stop", "length")
    failed = check("finish-reason: stop", messages)
    assert (failed.passed, failed.scope) == (False, "last_response")
    assert failed.reason == "finish reason 'length', expected 'stop'"
    assert [e.to_json() for e in failed.evidence] == [{"turn": 2, "text": "length"}]
    assert check("finish-reason: length", messages).passed is True


def test_the_value_is_read_like_the_recorded_reason_whatever_its_case_or_providers_word() -> None:
    messages = cut_short("length")
    assert check("finish-reason: LENGTH", messages).passed is True
    assert check("finish-reason: max_tokens", messages).passed is True
    assert check("finish-reason: end_turn", messages).passed is False


def test_every_reply_scope_reads_its_replies() -> None:
    messages = cut_short("stop", "length", "stop")
    each = check("{finish-reason: stop, scope: each_turn}", messages)
    assert (each.passed, each.score) == (False, pytest.approx(2 / 3, abs=1e-6))
    assert "turns 2" in each.reason
    assert check("{finish-reason: length, scope: any_turn}", messages).passed is True
    assert check("{finish-reason: stop, scope: {turns: [1, 3]}}", messages).passed is True
    assert check("finish-reason: length", messages, turn=2).passed is True  # under turn 2: that reply
    assert check("finish-reason: stop", messages, turn=2).passed is False


def test_not_finish_reason_negates_and_says_what_was_found() -> None:
    messages = cut_short("length")
    negated = check("not-finish-reason: length", messages)
    assert negated.passed is False and negated.reason == "unexpected: finish reason 'length'"
    assert check("not-finish-reason: stop", messages).passed is True


@pytest.mark.parametrize("text", ["finish-reason: stop", "not-finish-reason: stop",
                                  "{finish-reason: stop, scope: each_turn}", "{finish-reason: stop, scope: any_turn}"])
def test_a_reply_without_a_finish_reason_is_an_error_naming_the_provider_never_a_verdict(text: str) -> None:
    result = check(text, cut_short("stop", None), provider="support-bot")
    assert (result.passed, result.score) == (None, None)
    assert result.error == "turn 2: no finish reason recorded for the reply (provider 'support-bot' reported none)"


def test_the_whole_conversation_has_no_one_finish_reason_validate_says_so() -> None:
    with pytest.raises(ConfigError) as caught:
        spec("{finish-reason: stop, scope: conversation}")
    assert caught.value.problems[0].message == (
        "'finish-reason' reads one reply at a time, not the replies joined: use turn, each_turn, any_turn, "
        "last_response or {turns: [...]}")


def test_the_value_is_a_word() -> None:
    with pytest.raises(ConfigError):
        spec("finish-reason: ''")
    with pytest.raises(ConfigError):
        spec("finish-reason: [stop]")


def test_examples_carry_the_finish_reason_in_the_providers_word(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("""\
providers: [{id: bot, python: bot.py:respond}]
tests:
  - id: t
    conversation: [{user: 你好}]
    assert:
      - finish-reason: stop
        examples:
          pass: [{reply: 好的, finish_reason: end_turn}]
          fail: [{reply: 好, finish_reason: max_tokens}, [{user: 你好}, {assistant: 好, finish_reason: length}]]
""", encoding="utf-8")
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return 'ok'\n", encoding="utf-8")
    code, out = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 0, out
    (tmp_path / "s.yaml").write_text((tmp_path / "s.yaml").read_text(encoding="utf-8").replace(
        "fail: [{reply: 好, finish_reason: max_tokens}", "fail: [{reply: 好, finish_reason: end_turn}"), encoding="utf-8")
    code, out = invoke("validate", str(tmp_path / "s.yaml"))
    assert code != 0 and "finish reason end_turn" in out, out


def test_validate_warns_on_a_reason_that_is_none_it_knows_once_for_a_default(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("def r(messages, context):\n    return 'x'\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text("""\
providers: [{id: p, python: bot.py:r}]
defaults:
  assert: [{not-finish-reason: stopp}]
tests:
  - id: a
    conversation: [{user: 你好, assert: [{finish-reason: end_turn}, {finish-reason: lenght}]}]
  - id: b
    conversation: [{user: hi}]
""", encoding="utf-8")
    code, output = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 0, output
    warnings = [line for line in output.splitlines() if line.startswith("warning")]
    assert len(warnings) == 2 and "'not-finish-reason: stopp' is none of stop, length" in warnings[0]
    assert "(did you mean 'length'?)" in warnings[1] and "s.yaml:6:" in warnings[1]
