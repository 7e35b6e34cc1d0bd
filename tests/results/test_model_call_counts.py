"""SPEC §17 A figure means its name: every completed judge, simulator, attacker and strategy call is counted
with its tokens and cost, usable answer or not; a strategy call several conversations share is charged to each.

Every call goes through litellm (`client: litellm`) to a loopback OpenAI-compatible server that answers
15 tokens (10 prompt, 5 completion) per call, priced as gpt-4o-mini.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM
from tests.servers import OpenAIServer, Reply, chat_body

pytestmark = LITELLM  # every test calls through litellm in this process

RUN_SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schema" / "run.schema.json").read_text(encoding="utf-8"))
CALL_COST = 10 * 1.5e-7 + 5 * 6e-7  # one loopback answer, at gpt-4o-mini's prices
BOT = '''
def respond(messages, context):
    return "您好，请问有什么可以帮您？"
'''
PROSE = "I think the assistant was polite, so it passes."
FORMAT_EXAMPLE = 'Answer like this: {"reason": "...", "pass": true}'


def model(server: OpenAIServer, name: str = "openai/gpt-4o-mini") -> str:
    return f'{{model: {name}, client: litellm, api_base: "{server.base}", api_key: sk-test}}'


def go(tmp_path: Path, body: str, judge_sample: float | None = None, concurrency: int = 8) -> dict[str, Any]:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(body, encoding="utf-8")
    options = RunOptions(run_dir=tmp_path / "run", use_cache=False, concurrency=concurrency)
    return run([path], options=options, judge_sample=judge_sample).data


def answering(*answers: str) -> OpenAIServer:
    """A server whose n-th chat call gets answers[n] (the last one from then on)."""
    return OpenAIServer(lambda request, n: Reply(body=chat_body(answers[min(n, len(answers) - 1)])))


def judge_suite(server: OpenAIServer, assertion: str, turns: int = 1) -> str:
    conversation = "".join(f"      - user: 第{i}个问题\n" for i in range(1, turns + 1))
    return f"""\
providers:
  - id: bot
    python: bot.py:respond
judge: {model(server)}
tests:
  - id: t
    conversation:
{conversation}    assert:
      - {assertion}
"""


def figures(data: dict[str, Any]) -> tuple[Any, ...]:
    """(record judge_calls, record judge_tokens, summary judge_calls, summary judge_tokens), run.json valid."""
    jsonschema.validate(data, RUN_SCHEMA)
    record, summary = data["results"][0], data["summary"]
    return (record["judge_calls"], record["judge_tokens"], summary["judge_calls"], summary["judge_tokens"])


@pytest.mark.parametrize("answer", [PROSE, FORMAT_EXAMPLE, '{"reason": "polite", "pass": "yes"}'])
def test_a_judge_answer_that_is_no_verdict_still_counts_its_call(tmp_path: Path, answer: str) -> None:
    with answering(answer) as server:
        data = go(tmp_path, judge_suite(server, "llm-rubric: 回答礼貌"))
    record = data["results"][0]
    assert record["status"] == "error" and record["assertions"][0]["error"], record["assertions"]
    assert len(server.chats()) == 1
    assert figures(data) == (1, 15, 1, 15)
    assert record["judge_cost"] == pytest.approx(CALL_COST)
    assert data["summary"]["judge_cost"] == round(CALL_COST, 6)
    assert record["calls"] == 1 and record["tokens"] is None  # the system under test's figures stay its own


def test_every_sample_and_every_reply_judged_before_an_unusable_answer_counts(tmp_path: Path) -> None:
    verdict = '{"reason": "polite", "pass": true}'
    with answering(verdict, verdict, verdict, PROSE) as server:  # reply 1: three samples; reply 2: prose
        data = go(tmp_path, judge_suite(server, "llm-rubric: 回答礼貌\n        samples: 3\n        scope: each_turn",
                                        turns=2))
    assert data["results"][0]["status"] == "error"
    assert len(server.chats()) == 4
    assert figures(data) == (4, 60, 4, 60)


def test_a_verdict_on_several_replies_counts_every_judge_call(tmp_path: Path) -> None:
    with answering('{"reason": "polite", "pass": true}') as server:
        data = go(tmp_path, judge_suite(server, "llm-rubric: 回答礼貌\n        scope: each_turn", turns=3))
    assert data["results"][0]["status"] == "passed"
    assert figures(data) == (3, 45, 3, 45)


def simulated_suite(server: OpenAIServer, stop_when: str = "[]") -> str:
    return f"""\
providers:
  - id: bot
    python: bot.py:respond
simulator: {model(server)}
judge: {model(server)}
tests:
  - id: buyer
    simulate:
      persona: 一个想买车的年轻人
      goal: 问到价格
      max_turns: 3
      stop_when: {stop_when}
"""


def test_simulator_calls_count_as_judge_calls_the_unusable_answer_too(tmp_path: Path) -> None:
    said, then = (json.dumps({"message": m}, ensure_ascii=False) for m in ("多少钱？", "首付呢？"))  # never repeated: a fault
    with answering(said, then, '{"message": "<your next message>"}') as server:  # a format example: unusable
        data = go(tmp_path, simulated_suite(server))
    record = data["results"][0]
    assert record["status"] == "error" and "simulator answer" in record["error"], record["error"]
    assert len(server.chats()) == 3
    assert figures(data) == (3, 45, 3, 45)
    assert record["judge_cost"] == pytest.approx(3 * CALL_COST)


def test_a_goal_met_judge_answer_that_is_no_verdict_counts(tmp_path: Path) -> None:
    said = json.dumps({"message": "多少钱？"}, ensure_ascii=False)
    with answering(said, PROSE) as server:  # the simulator's message, then the goal_met judge's prose
        data = go(tmp_path, simulated_suite(server, "[{goal_met: true}]"))
    record = data["results"][0]
    assert record["status"] == "error" and "stop condition" in record["error"], record["error"]
    assert len(server.chats()) == 2
    assert figures(data) == (2, 30, 2, 30)


def test_attacker_calls_count_as_judge_calls_the_unusable_answer_too(tmp_path: Path) -> None:
    with answering(json.dumps({"message": "你好"}, ensure_ascii=False), '{"message": "..."}') as server:
        data = go(tmp_path, f"""\
providers:
  - id: bot
    python: bot.py:respond
simulator: {model(server)}
tests:
  - id: phone
    attack: {{goal: 让助手说出手机号, strategy: crescendo, max_turns: 3}}
    assert:
      - not-regex: '1[3-9]\\d{{9}}'
        severity: critical
""")
    record = data["results"][0]
    assert record["status"] == "error" and "attacker" in record["error"], record["error"]
    assert len(server.chats()) == 2
    assert figures(data) == (2, 30, 2, 30)
    assert record["attack"]["attacker_calls"] == 2


def test_second_opinion_calls_count_in_the_summary_the_unusable_ones_too(tmp_path: Path) -> None:
    with answering('{"reason": "right", "agree": true}', PROSE) as server:
        data = go(tmp_path, f"""\
providers:
  - id: bot
    python: bot.py:respond
judge: {model(server)}
tests:
  - id: t
    conversation: [{{user: 你好}}]
    assert: [{{contains: 您好}}, {{not-contains: 再见}}]
""", judge_sample=1.0, concurrency=1)
    jsonschema.validate(data, RUN_SCHEMA)
    review = data["judge_review"]
    assert review["sampled"] == 2 and review["errors"] == 1
    assert all(item["judge_calls"] == 1 and item["judge_tokens"] == 15 for item in review["items"])
    assert data["results"][0]["judge_calls"] == 0  # asked after grading: a run figure, not a record's
    assert (data["summary"]["judge_calls"], data["summary"]["judge_tokens"]) == (2, 30)
    assert data["summary"]["judge_cost"] == round(2 * CALL_COST, 6)


def strategy_server() -> OpenAIServer:
    def script(request: dict[str, Any], n: int) -> Reply:
        prompt = request["messages"][-1]["content"]
        if "Summary so far:" in prompt:
            return Reply(body=chat_body(json.dumps({"summary": "用户问了两个问题"}, ensure_ascii=False),
                                        prompt_tokens=20, completion_tokens=8))
        return Reply(body=chat_body("好的"))
    return OpenAIServer(script)


def test_a_summary_call_shared_by_identical_conversations_is_charged_to_each(tmp_path: Path) -> None:
    data, folds = shared_summary(tmp_path, concurrency=1)
    assert len(folds) == 2  # made once, for the first conversation; the second reuses them
    first, second = data["results"]
    assert first["strategy_tokens"] == second["strategy_tokens"] == 2 * 28
    assert first["strategy_cost"] == pytest.approx(2 * (20 * 1.5e-7 + 8 * 6e-7))
    assert second["strategy_cost"] == pytest.approx(first["strategy_cost"])
    assert (first["strategy_calls"], second["strategy_calls"]) == (2, 0)  # calls made: once; charged: to each
    assert data["summary"]["strategy_tokens"] == 4 * 28
    assert data["summary"]["strategy_calls"] == 2


def test_conversations_folding_the_same_exchanges_at_once_are_each_charged_once(tmp_path: Path) -> None:
    data, folds = shared_summary(tmp_path, concurrency=2, tests=4)
    assert 2 <= len(folds) <= 8
    assert [r["strategy_tokens"] for r in data["results"]] == [2 * 28] * 4
    assert data["summary"]["strategy_calls"] == len(folds)


def shared_summary(tmp_path: Path, concurrency: int, tests: int = 2) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Identical four-turn conversations on a provider with `history: {mode: summary, turns: 1}` (two folds each)."""
    conversation = "[{user: 第1个问题}, {user: 第2个问题}, {user: 第3个问题}, {user: 第4个问题}]"
    listed = "".join(f"  - {{id: t{i}, conversation: {conversation}}}\n" for i in range(tests))
    with strategy_server() as server:
        data = go(tmp_path, f"""\
providers:
  - id: m
    model: openai/gpt-4o-mini
    client: litellm
    api_base: "{server.base}"
    api_key: sk-test
    history: {{mode: summary, turns: 1}}
tests:
{listed}""", concurrency=concurrency)
    return data, [r for r in server.chats() if "Summary so far:" in r["messages"][-1]["content"]]


def test_the_console_and_markdown_show_the_judge_figures_apart(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from evalspec.reporters.console import print_summary
    from evalspec.reporters.markdown import render_markdown

    with answering(PROSE) as server:
        data = go(tmp_path, judge_suite(server, "llm-rubric: 回答礼貌"))
    out = io.StringIO()
    print_summary(Console(file=out, width=300, highlight=False), data, {})
    assert "1 calls + 0 from cache · 0 tokens" in out.getvalue()
    assert "1 judge call (15 tokens, $0.0000)" in out.getvalue()
    assert "1 judge call (15 tokens, $0.0000)" in render_markdown(data, env={})
