"""Every built-in check gives its reason in English (`reason`) and Chinese (`reason_zh`) (SPEC §32,
docs/en/reports-and-gate.md#language): one failing case per check family, graded for real."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalspec.assertions.evaluate import evaluate
from evalspec.core.text import chinese_turn
from evalspec.extend.check import GradingContext, JudgeRequest, JudgeVerdict
from tests.helpers import check, spec, transcript

REPLY = transcript(("你好", "收到：你好，联系 138 1234 5678"), ("再见", "收到：再见"))
STATE = [dict(m, state={"slots": {"car": "汉"}}, parts=[{"text": m["content"], "buttons": [{"title": "预约"}]}])
         if m["role"] == "assistant" else m for m in REPLY]
TOOLS = [dict(m, tool_calls=[{"id": "c1", "name": "lookup", "arguments": {"q": "价格"}}])
         if m["role"] == "assistant" and m["turn"] == 1 else m for m in REPLY]
FINISHED = [dict(m, finish_reason="length") if m["role"] == "assistant" else m for m in REPLY]
CHECKER = "def check(output, context):\n    return 0.2\n"

CASES = [  # family, assertion, transcript, the English reason it replaces
    ("text", "contains: 您好", REPLY, "did not find '您好'"),
    ("text", "not-regex: '收到'", REPLY, "unexpected: matched '收到'"),
    ("text", "word-count: {max: 2}", REPLY, "words (min None, max 2)"),
    ("session", "at-most: {pattern: 收到, count: 1}", REPLY, "2 replies matched (at most 1): turns 1, 2"),
    ("session", "within: {pattern: 预约, after: 1, turns: 2}", REPLY, "no reply in turns 1-2 matched /预约/"),
    ("memory", "memory-recall: {name: 王五}", REPLY, "recall 0.00: name not found"),
    ("memory", "refers-to: {expected: 汉}", REPLY, "expected 汉, but the reply names neither"),
    ("state", "state: {path: slots.car, equals: 秦}", STATE, "slots.car = 汉, expected 秦"),
    ("state", "buttons: [取消]", STATE, "missing 取消 (buttons: 预约)"),
    ("tools", "tool-called: {name: book}", TOOLS, "book called 0 time(s) in the conversation, expected at least 1"),
    ("tools", "not-tool-called: lookup", TOOLS, "lookup was called in the conversation (turn 1)"),
    ("pii", "not-pii: cn_mobile", REPLY, "unexpected: found cn_mobile '138 1234 5678'"),
    ("sql", "is-sql: {}", REPLY, "not mysql SQL"),
    ("finish-reason", "finish-reason: stop", FINISHED, "finish reason 'length', expected 'stop'"),
    ("custom", "python: checker.py:check", REPLY, "checker.py:check returned 0.2"),
]


@pytest.mark.parametrize(("family", "rule", "messages", "english"), CASES, ids=[f"{c[0]}-{c[1][:20]}" for c in CASES])
def test_each_check_family_says_why_in_both_languages(tmp_path: Path, family: str, rule: str,
                                                      messages: list[dict[str, Any]], english: str) -> None:
    (tmp_path / "checker.py").write_text(CHECKER, encoding="utf-8")
    result = check(rule, messages, suite_dir=tmp_path).to_json()
    assert result["pass"] is False and english in result["reason"], result
    assert _own_chinese(result["reason"], result["reason_zh"]), result["reason_zh"]


def _own_chinese(reason: str, reason_zh: str) -> set[str]:
    """The Chinese characters of `reason_zh` that are evalspec's words (not quoted from the reply or rule)."""
    return {ch for ch in reason_zh if chinese_turn(ch)} - set(reason)


def test_the_session_rule_a_pm_read_in_every_chinese_report() -> None:
    result = check("at-most: {pattern: 收到, count: 1}", REPLY).to_json()
    assert result["reason"] == "2 replies matched (at most 1): turns 1, 2"
    assert result["reason_zh"] == "2 条回复匹配（最多 1）：第 1, 2 轮"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_javascript_checks_say_why_in_both_languages() -> None:
    result = check("javascript: output.length > 100", REPLY).to_json()
    assert result["reason"] == "javascript returned false" or "returned false" in result["reason"], result
    assert "返回 false" in result["reason_zh"], result


def test_judged_checks_keep_the_judges_words_and_frame_them_in_both_languages(tmp_path: Path) -> None:
    answers = iter([{"reason": "语气生硬", "pass": False}, {"reason": "还行", "pass": True},
                    {"reason": "不礼貌", "pass": False}])

    async def judge(request: JudgeRequest) -> JudgeVerdict:
        return JudgeVerdict(next(answers), "", {"tokens": 1, "cost": 0.0, "cached": False})

    ctx = GradingContext(REPLY, {}, {}, "t", None, tmp_path, judge=judge)
    result = asyncio.run(evaluate(spec("{llm-rubric: 礼貌, samples: 3}"), ctx)).to_json()
    assert result["reason"] == "1/3 judge samples passed; 语气生硬"
    assert result["reason_zh"] == "3 次评审采样中 1 次通过；语气生硬"
