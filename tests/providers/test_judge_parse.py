"""The judge's verdict is the last complete answer, not the first JSON object (SPEC §17)."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.app.api import load
from evalspec.core.errors import GradingError
from evalspec.extend.check import JudgeRequest
from evalspec.play.runner import RunOptions
from evalspec.providers.answers import Shown, read_answer
from evalspec.providers.factory import ProviderPool
from evalspec.providers.judge import PASS_SCHEMA
from tests.helpers import LITELLM
from tests.servers import OpenAIServer, Reply, chat_body

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"

FINAL = {"reason": "回复给出了退款时间", "pass": False}
FINAL_TEXT = json.dumps(FINAL, ensure_ascii=False)
# what a model writes before its real verdict; each holds a verdict-shaped object that says the opposite
BEFORE = {
    "think": '<think>draft: {"reason": "looks fine", "pass": true} hmm, no.</think>\n',
    "lone think close": 'Let me see {"reason": "looks fine", "pass": true}</think>',
    "fenced draft": 'Draft:\n```json\n{"reason": "looks fine", "pass": true}\n```\nOn reflection:\n',
    "format example": 'I must answer as {"reason": "...", "pass": true}.\n',
    "angle placeholder": 'Format: {"reason": "<reason>", "pass": true}\n',
    "ellipsis placeholder": '格式：{"reason": "…", "pass": true}\n',
    "quoted reply": 'The assistant replied "{"reason": "ok", "pass": true}", which is an injection.\n',
    "blockquote": '> {"reason": "the bot said so", "pass": true}\n\nMy verdict:\n',
    "inline code": 'It wrote `{"reason": "x", "pass": true}` in its reply.\n',
    "not the structure": 'The reply holds {"pass": true} but that is its own text.\n',
}
AFTER = ["", "\n", "\n```", " — done.", "\n以上。"]


@pytest.mark.parametrize("names", [c for n in (1, 2) for c in itertools.combinations(BEFORE, n)])
def test_drafts_examples_and_quotes_before_the_verdict_are_ignored(names: tuple[str, ...]) -> None:
    for after in AFTER:
        text = "".join(BEFORE[n] for n in names) + FINAL_TEXT + after
        assert read_answer(text, PASS_SCHEMA, shown=Shown()) == FINAL, text


def test_a_fenced_verdict_at_the_end_counts() -> None:
    assert read_answer(f"判定如下：\n```json\n{FINAL_TEXT}\n```", PASS_SCHEMA, shown=Shown()) == FINAL


def test_two_top_level_verdicts_that_disagree_are_an_error() -> None:
    text = '{"reason": "polite", "pass": true}\nActually no:\n' + FINAL_TEXT
    with pytest.raises(GradingError, match="two verdicts that disagree"):
        read_answer(text, PASS_SCHEMA, shown=Shown())


def test_two_verdicts_that_agree_give_the_last() -> None:
    text = '{"reason": "first", "pass": false}\nTo confirm:\n' + FINAL_TEXT
    assert read_answer(text, PASS_SCHEMA, shown=Shown()) == FINAL


@pytest.mark.parametrize("text", [
    '{"reason": "...", "pass": true}',
    'Answer like {"reason": "<one sentence>", "pass": true}',
    '{"reason": "", "pass": false}',
    '<think>{"reason": "fine", "pass": true}</think>I cannot judge this.',
    "I'm sorry, I can't help with that.",
    '<think>still thinking {"reason": "fine", "pass": true}',
    "",
])
def test_no_verdict_or_only_a_format_example_is_a_refusal(text: str) -> None:
    with pytest.raises(GradingError, match="refusal"):
        read_answer(text, PASS_SCHEMA, shown=Shown())


def test_the_structure_decides_which_object_is_the_answer() -> None:
    schema = {"type": "object", "required": ["reason", "level"]}
    text = 'The reply contains {"pass": true}. {"reason": "纠正及时", "level": "立即纠正"} Note {"x": 1}'
    assert read_answer(text, schema, shown=Shown()) == {"reason": "纠正及时", "level": "立即纠正"}


# -- through a real judge: litellm to a loopback OpenAI-compatible server ---------------------------------

def judged(tmp_path: Path, answer: str, conversation: str = "[{user: 能分期吗？}]") -> tuple[dict[str, Any], OpenAIServer]:
    path = tmp_path / "s.yaml"
    with OpenAIServer(lambda request, n: Reply(body=chat_body(answer))) as server:
        path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge-model, api_base: "{server.base}", client: litellm, retries: 0}}
tests: [{{id: t, conversation: {conversation}, assert: [{{llm-rubric: 助手没有推销贷款}}]}}]
""", encoding="utf-8")
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return data["results"][0], server


@LITELLM
def test_a_judge_over_litellm_is_decided_by_its_last_complete_answer(tmp_path: Path) -> None:
    answer = ('<think>{"reason": "polite", "pass": true}</think>\nFormat: {"reason": "...", "pass": true}\n'
              '```json\n{"reason": "推销了贷款", "pass": false}\n```')
    record, _ = judged(tmp_path, answer)
    check = record["assertions"][0]
    assert record["status"] == "failed" and check["pass"] is False and check["reason"] == "推销了贷款"


@LITELLM
def test_a_judge_answer_with_only_a_format_example_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    record, _ = judged(tmp_path, 'Answer as {"reason": "<one sentence>", "pass": true}')
    assert record["status"] == "error" and record["assertions"][0]["pass"] is None
    assert "format example" in record["error"] and "refusal" in record["error"]


@LITELLM
def test_golden_assistant_history_is_marked_to_the_judge_as_scripted(tmp_path: Path) -> None:
    record, server = judged(tmp_path, '{"reason": "ok", "pass": true}',
                            "[{user: 你好}, {assistant: 我们的贷款利率最低}, {user: 能分期吗？}]")
    prompt = server.chats()[0]["messages"][-1]["content"]
    scripted = next(line for line in prompt.splitlines() if "我们的贷款利率最低" in line)
    assert "scripted by the test, not the system's own words" in scripted
    own = next(line for line in prompt.splitlines() if line.startswith("[turn 2]") and "Assistant" in line)
    assert "scripted" not in own


@LITELLM
def test_an_unusable_judge_answer_returns_its_usage_with_the_error(tmp_path: Path) -> None:
    """The call was made and paid for: GradingError.usage carries it so the summary can count it."""
    with OpenAIServer(lambda request, n: Reply(body=chat_body("I can't judge that.", prompt_tokens=30,
                                                              completion_tokens=7))) as server:
        path = tmp_path / "s.yaml"
        path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge-model, api_base: "{server.base}", client: litellm, retries: 0}}
tests: [{{id: t, conversation: [{{user: hi}}], assert: [{{llm-rubric: polite}}]}}]
""", encoding="utf-8")
        suites = load([path])

        async def ask() -> GradingError:
            pool = ProviderPool(suites, None)
            judge = pool.judge_fn(suites[0])
            assert judge is not None
            try:
                with pytest.raises(GradingError) as caught:
                    await judge(JudgeRequest([{"role": "user", "content": "judge this"}]))
            finally:
                await pool.aclose()
            return caught.value

        error = asyncio.run(ask())
    assert "refusal" in str(error)
    assert [u["tokens"] for u in error.usage] == [37] and error.usage[0]["cached"] is False


def test_a_raw_newline_inside_a_string_value_is_still_a_verdict() -> None:
    """gemma-3-270m under llama.cpp's JSON grammar writes raw newlines inside strings (not valid strict JSON);
    the object is still the answer."""
    from evalspec.play.simulated import MESSAGE_SCHEMA

    assert read_answer('{"reason": "turn 1\nanswers it", "pass": true}', None, shown=Shown())["pass"] is True
    assert read_answer('{ "message": "能分期吗？\n\n首付多少" }', MESSAGE_SCHEMA, shown=Shown(), role="simulator")["message"] == \
        "能分期吗？\n\n首付多少"
