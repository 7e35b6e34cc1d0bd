"""SPEC §23, paying less for judging: judge prompts put the transcript before the rubric (a provider's prompt
cache serves the shared prefix), the prompt tokens a cache served are recorded (`cached_tokens`) and priced
at the cached price, and `judge: {batch: true}` asks one call for a conversation's judged checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM
from tests.servers import OpenAIServer, Reply, chat_body

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"
ANSWER = '{"reason": "ok", "pass": true, "level": "全程锚定"}'
THREE = """      - llm-rubric: 助手回答了分期问题
      - stays-on-topic: null
        levels: default
      - knowledge-retention: null
"""


def cached_usage(body: dict[str, Any], prompt: int = 1000, cached: int = 800) -> dict[str, Any]:
    body["usage"] = {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5,
                     "prompt_tokens_details": {"cached_tokens": cached}}
    return body


def go(tmp_path: Path, server: OpenAIServer, asserts: str, judge: str = "", provider: str = "") -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers:
{provider or f"  - id: bot{chr(10)}    python: {BOT}:respond"}
judge: {{model: openai/gpt-4o-mini, api_base: "{server.base}", api_key: sk-test{judge}}}
tests:
  - id: t
    conversation:
      - user: 这台瑶光是哪年的车？
      - user: 能分期吗？
    assert:
{asserts}
""", encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def test_judge_requests_carry_the_transcript_before_the_rubric_and_share_their_prefix(tmp_path: Path) -> None:
    with OpenAIServer(lambda r, n: Reply(body=chat_body(ANSWER))) as server:
        data = go(tmp_path, server, THREE)
    assert [a["error"] for a in data["results"][0]["assertions"]] == [None, None, None]
    chats = server.chats()
    assert len(chats) == 3
    systems = {c["messages"][0]["content"] for c in chats}
    assert len(systems) == 1  # one system message for every judged check, graded rubrics too
    users = [c["messages"][1]["content"] for c in chats]
    last_reply = data["results"][0]["transcript"][-1]["content"]
    for text, rubric in zip(users, ["助手回答了分期问题", "does not drift", "retains facts"], strict=True):
        assert text.index("能分期吗？") < text.index(last_reply) < text.index(rubric), text
    shared = os.path.commonprefix(users)
    assert "这台瑶光是哪年的车？" in shared and last_reply in shared  # the whole transcript is the shared prefix


@pytest.mark.parametrize("client", ["lean", pytest.param("litellm", marks=LITELLM)])
def test_cached_prompt_tokens_are_recorded_and_priced_at_the_cached_price(tmp_path: Path, client: str) -> None:
    with OpenAIServer(lambda r, n: Reply(body=cached_usage(chat_body(ANSWER if "judge" in json.dumps(r)
                                                                     or "evaluator" in json.dumps(r) else "好的"))))\
            as server:
        provider = (f"  - id: m\n    model: openai/gpt-4o-mini\n    client: {client}\n    api_base: {server.base}\n"
                    "    api_key: sk-test")
        data = go(tmp_path, server, "      - llm-rubric: 助手回答了分期问题", provider=provider)
    record = data["results"][0]
    reply = record["transcript"][-1]
    full, cached_price, out = 1.5e-7, 7.5e-8, 6e-7  # gpt-4o-mini in litellm's price map
    assert reply["cached_tokens"] == 800
    assert reply["cost"] == pytest.approx(200 * full + 800 * cached_price + 5 * out)
    usage = record["assertions"][0]["details"]["verdicts"][0]["_judge"]
    assert usage["cached_tokens"] == 800
    assert usage["cost"] == pytest.approx(200 * full + 800 * cached_price + 5 * out)


BATCH = ', batch: true'
ALL_THREE = '{"a1": {"reason": "答了分期", "pass": true}, "a2": {"reason": "没跑题", "level": "全程锚定"}, ' \
            '"a3": {"reason": "又问了一遍", "pass": false}}'


def test_batch_turns_three_judged_checks_of_a_conversation_into_one_call(tmp_path: Path) -> None:
    with OpenAIServer(lambda r, n: Reply(body=chat_body(ALL_THREE))) as server:
        data = go(tmp_path, server, THREE, judge=BATCH)
    record = data["results"][0]
    assert server.calls == 1 and record["judge_calls"] == 1
    a1, a2, a3 = record["assertions"]
    assert (a1["pass"], a1["score"], a1["reason"]) == (True, 1.0, "答了分期")
    assert (a2["pass"], a2["score"], a2["details"]["level"]) == (True, 1.0, "全程锚定")
    assert (a3["pass"], a3["score"], a3["reason"]) == (False, 0.0, "又问了一遍")
    assert [a["details"]["batch"] for a in (a1, a2, a3)] == ["a1", "a2", "a3"]
    asked = server.chats()[0]
    text = asked["messages"][1]["content"]
    assert text.index("能分期吗？") < text.index("助手回答了分期问题") < text.index("does not drift") \
        < text.index("retains facts")  # the transcript first, then the criteria in suite order
    schema = asked["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["a1", "a2", "a3"]
    assert schema["properties"]["a2"]["properties"]["level"]["enum"] == ["全程锚定", "轻微发散但能拉回", "明显漂移", "完全偏离"]


@pytest.mark.parametrize(("answer", "errors"), [
    ('{"a1": {"reason": "ok", "pass": true}, "a3": {"reason": "ok", "pass": true}}', [None, "no verdict 'a2'", None]),
    ('{"a1": {"reason": "ok", "pass": true}, "a2": {"reason": "ok", "level": "很好"}, "a3": {"reason": "...", "pass": true}}',
     [None, "not one of", "format example"]),
    ('Format: {"a1": {"reason": "<reason>", "pass": true}, "a2": {"reason": "<reason>", "level": "x"}, '
     '"a3": {"reason": "<reason>", "pass": true}}', ["refusal", "refusal", "refusal"]),
    ('{"a1": {"reason": "ok", "pass": true}, "a2": {"reason": "ok", "level": "全程锚定"}, "a3": {"reason": "ok", "pass": true}}'
     ' On reflection: {"a1": {"reason": "no", "pass": false}}', ["disagree", None, None]),
    ('I will not grade this.', ["refusal", "refusal", "refusal"]),
])
def test_an_unusable_verdict_in_a_batch_is_an_error_of_that_check_alone(tmp_path: Path, answer: str,
                                                                          errors: list[str | None]) -> None:
    with OpenAIServer(lambda r, n: Reply(body=chat_body(answer))) as server:
        data = go(tmp_path, server, THREE, judge=BATCH)
    assertions = data["results"][0]["assertions"]
    assert server.calls == 1
    for a, expected in zip(assertions, errors, strict=True):
        if expected is None:
            assert a["error"] is None and a["pass"] is not None, a
        else:
            assert a["pass"] is None and expected in a["error"], a


def test_batch_leaves_turn_checks_samples_and_negation_as_they_are(tmp_path: Path) -> None:
    """`each_turn` and `samples: 3` are asked one by one; a `not-` check in the batch is negated."""
    answers = {"batch": '{"a1": {"reason": "ok", "pass": true}, "a2": {"reason": "retains", "pass": true}}',
               "single": '{"reason": "ok", "pass": true}'}

    def script(request: dict[str, Any], n: int) -> Reply:
        schema = request["response_format"]["json_schema"]["schema"]
        return Reply(body=chat_body(answers["batch" if "a1" in schema["properties"] else "single"]))

    asserts = """      - llm-rubric: 助手回答了分期问题
      - not-knowledge-retention: null
      - llm-rubric: 每一轮都礼貌
        scope: each_turn
      - llm-rubric: 语气友好
        samples: 3
"""
    with OpenAIServer(script) as server:
        data = go(tmp_path, server, asserts, judge=BATCH)
    a1, a2, each, sampled = data["results"][0]["assertions"]
    assert server.calls == 1 + 2 + 3  # one batch, two turns, three samples
    assert a1["pass"] is True and a2["pass"] is False and a2["details"]["batch"] == "a2"
    assert each["pass"] is True and "batch" not in each.get("details", {})
    assert sampled["pass"] is True and len(sampled["details"]["verdicts"]) == 3


def test_a_second_opinion_review_carries_the_conversation_before_the_rule() -> None:
    from evalspec.review.second_opinion import review_prompt
    from tests.helpers import spec, transcript

    record = {"transcript": transcript(("这台瑶光是哪年的车？", "2023年的"), ("能分期吗？", "可以分期"))}
    result = {"turn": None, "scope": "last_response", "pass": True, "reason": "found", "evidence": []}
    prompt = review_prompt(record, result, spec("contains: 分期"))
    assert prompt.index("能分期吗？") < prompt.index("可以分期") < prompt.index("Rule: contains")
