"""Model-graded and embedding assertions with a loopback judge: only parsed JSON verdicts count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.assertions.graded import cosine
from evalspec.core.errors import ConfigError, GradingError
from evalspec.play.runner import RunOptions
from evalspec.providers.answers import Shown, read_answer
from tests.assertions.helpers import BOT, go, judged
from tests.servers import OpenAIServer, Reply, chat_body


@pytest.mark.parametrize("answer", [
    '{"reason": "回答了分期问题", "pass": true}',
    'Here is my verdict:\n```json\n{"reason": "ok", "pass": true}\n```',
    'Sure. {"pass": true, "reason": "fine"} Hope that helps.',
])
def test_llm_rubric_accepts_json_verdicts(tmp_path: Path, answer: str) -> None:
    with judged(answer) as server:
        data = go(tmp_path, server, "      - llm-rubric: 助手回答了分期问题")
    a = data["results"][0]["assertions"][0]
    assert a["pass"] is True and a["score"] == 1.0 and a["scope"] == "conversation"
    prompt = server.chats()[0]["messages"][1]["content"]
    assert "能分期吗？" in prompt and "助手回答了分期问题" in prompt  # the judge sees transcript and rubric


def test_prose_without_json_is_an_error_never_a_verdict(tmp_path: Path) -> None:
    with judged("Yes, the assistant passes this rubric.") as server:
        data = go(tmp_path, server, "      - llm-rubric: 助手回答了分期问题")
    record = data["results"][0]
    assert record["status"] == "error"
    assert record["assertions"][0]["pass"] is None and "not a JSON verdict" in record["assertions"][0]["error"]
    assert data["gate"]["exit_code"] == 3


def test_judge_error_inside_negation_is_still_an_error(tmp_path: Path) -> None:
    with judged("no json here") as server:
        data = go(tmp_path, server, "      - not-llm-rubric: 助手推销了贷款")
    assert data["results"][0]["assertions"][0]["error"]


def test_failing_verdict_and_negation(tmp_path: Path) -> None:
    with judged('{"reason": "第2轮没有提到首付", "pass": false}') as server:
        data = go(tmp_path, server, "      - llm-rubric: x\n      - not-llm-rubric: y")
    first, negated = data["results"][0]["assertions"]
    assert first["pass"] is False and first["reason"] == "第2轮没有提到首付"
    assert negated["pass"] is True and negated["score"] == 1.0


def test_samples_take_the_majority(tmp_path: Path) -> None:
    answers = ['{"pass": true, "reason": "a"}', '{"pass": false, "reason": "b"}', '{"pass": true, "reason": "c"}']
    with judged(answers) as server:
        data = go(tmp_path, server, "      - {llm-rubric: x, samples: 3}")
    a = data["results"][0]["assertions"][0]
    assert a["pass"] is True and a["score"] == pytest.approx(2 / 3) and server.calls == 3
    assert data["results"][0]["judge_calls"] == 3 and data["summary"]["judge_calls"] == 3


@pytest.mark.parametrize("name", ["trajectory:goal-success: 用户得到了分期信息", "knowledge-retention: null",
                                  "coherence: null", "follows-correction: null", "stays-on-topic: null",
                                  "rejects-false-premise: null", "conversation-relevance: null",
                                  "role-adherence: 汽车销售顾问"])
def test_conversation_judges_pass_and_fail(tmp_path: Path, name: str) -> None:
    with judged('{"pass": true, "reason": "ok"}') as server:
        ok = go(tmp_path, server, f"      - {name}")
    with judged('{"pass": false, "reason": "no"}') as server:
        ko = go(tmp_path, server, f"      - {name}")
    assert ok["results"][0]["assertions"][0]["pass"] is True
    assert ko["results"][0]["assertions"][0]["pass"] is False


def test_deterministic_red_line_runs_first_and_skips_judges(tmp_path: Path) -> None:
    with judged('{"pass": true, "reason": "ok"}') as server:
        data = go(tmp_path, server, "      - {contains: 不存在的词, severity: critical}\n      - llm-rubric: x")
    red, judge = data["results"][0]["assertions"]
    assert red["pass"] is False and judge["pass"] is None and "not judged" in judge["reason"]
    assert server.calls == 0
    assert data["results"][0]["status"] == "failed"


def test_similar_and_topic_coherence_use_the_embedder(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        data = go(tmp_path, server, "      - similar: 瑶光指导价分期首付两成\n        threshold: 0.3\n"
                                    "      - similar: Completely unrelated English words\n"
                                    "      - topic-coherence: {min_adjacent: 0.0, max_drift: 1.0}")
    sim, unrelated, topic = data["results"][0]["assertions"]
    assert sim["error"] is None and sim["pass"] is True, sim
    assert unrelated["pass"] is False and unrelated["score"] < sim["score"]
    assert topic["pass"] is True and {"adjacent_mean", "drift"} <= set(topic["details"])


def test_missing_judge_stops_before_any_call(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"providers:\n  - id: bot\n    python: {BOT}:respond\n"
                    "tests:\n  - id: t\n    conversation: [{user: hi}]\n    assert: [{llm-rubric: x}]\n")
    with pytest.raises(ConfigError, match="needs a judge: set `judge:`"):
        run([path], options=RunOptions(run_dir=tmp_path / "run"))


def test_read_answer_and_cosine() -> None:
    assert read_answer('{"pass": false}', None, shown=Shown()) == {"pass": False}
    with pytest.raises(GradingError):
        read_answer("[1, 2]", None, shown=Shown())
    assert cosine([1, 0], [1, 0]) == 1.0 and cosine([1, 0], [0, 1]) == 0.0


def test_an_assertion_can_name_its_own_judge(tmp_path: Path) -> None:
    with judged('{"pass": false, "reason": "suite judge"}') as suite_judge, \
            judged('{"pass": true, "reason": "own judge"}') as own:
        data = go(tmp_path, suite_judge, f"      - llm-rubric: x\n        provider: {{model: openai/strict, api_base: '{own.base}'}}")
    a = data["results"][0]["assertions"][0]
    assert a["pass"] is True and a["reason"] == "own judge"
    assert own.calls == 1 and suite_judge.calls == 0


def test_asks_clarification_with_the_judge_passes_and_fails(tmp_path: Path) -> None:
    with judged('{"pass": true, "reason": "asks which model"}') as server:
        ok = go(tmp_path, server, "      - asks-clarification: null")
    with judged('{"pass": false, "reason": "guessed"}') as server:
        ko = go(tmp_path, server, "      - asks-clarification: null")
        prompt = server.chats()[0]["messages"][1]["content"]
    assert ok["results"][0]["assertions"][0]["pass"] is True
    assert ko["results"][0]["assertions"][0]["pass"] is False
    assert "clarify" in prompt and "Reply under evaluation (turn 2)" in prompt


def test_topic_coherence_fails_on_drift(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        data = go(tmp_path, server, "      - topic-coherence: {min_adjacent: 0.99, max_drift: 0.0}")
    topic = data["results"][0]["assertions"][0]
    assert topic["pass"] is False and topic["details"]["drift"] > 0


def per_turn_judge(bad_turns: set[int]) -> OpenAIServer:
    """A judge that fails the reply of each turn in `bad_turns` (read from the prompt's 'turn N')."""
    import re

    def script(request: dict[str, Any], n: int) -> Reply:
        found = re.search(r"Reply under evaluation \(turn (\d+)\)", request["messages"][1]["content"])
        turn = int(found.group(1)) if found else 0
        ok = turn not in bad_turns
        return Reply(body=chat_body(f'{{"reason": "turn {turn} {"ok" if ok else "off topic"}", "pass": {str(ok).lower()}}}'))
    return OpenAIServer(script)


def four_turns(tmp_path: Path, server: OpenAIServer, asserts: str) -> dict[str, Any]:
    path = tmp_path / "four.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge-model, api_base: "{server.base}"}}
tests:
  - id: t
    conversation:
      - user: 这台瑶光是哪年的车？
      - user: 能分期吗？
      - user: 首付多少？
      - user: 颜色有哪些？
    assert:
{asserts}
""", encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def test_conversation_relevance_judges_each_turn_and_scores_the_share_of_good_turns(tmp_path: Path) -> None:
    """SPEC §20: one judge call per assistant turn (the last N turns shown), score = share of good turns,
    each bad turn as evidence, threshold 1.0 by default; summary.judge_calls counts the 4 calls."""
    with per_turn_judge({2}) as server:
        data = four_turns(tmp_path, server, "      - conversation-relevance:\n        window: 2")
    a = data["results"][0]["assertions"][0]
    assert (a["pass"], a["score"]) == (False, 0.75)
    assert [e["turn"] for e in a["evidence"]] == [2] and "off topic" in a["evidence"][0]["text"]
    assert "3/4 turns good" in a["reason"]
    prompts = [r["messages"][1]["content"] for r in server.chats()]
    assert len(prompts) == 4 and [f"(turn {k})" in p for k, p in enumerate(prompts, 1)] == [True] * 4
    last = prompts[3]  # window 2: turns 3 and 4 only
    assert "首付多少？" in last and "颜色有哪些？" in last and "能分期吗？" not in last
    assert data["results"][0]["judge_calls"] == 4 and data["summary"]["judge_calls"] == 4


def test_per_turn_threshold_and_the_other_per_turn_checks(tmp_path: Path) -> None:
    with per_turn_judge({2}) as server:
        data = four_turns(tmp_path, server, "      - conversation-relevance:\n        threshold: 0.7\n"
                                            "      - role-adherence: 汽车销售顾问\n        per_turn: true\n"
                                            "      - knowledge-retention:\n        per_turn: true\n        window: 1\n"
                                            "      - knowledge-retention:\n"
                                            "      - conversation-relevance:\n        per_turn: false")
    relevance, role, retention, whole, once = data["results"][0]["assertions"]
    assert (relevance["pass"], relevance["score"]) == (True, 0.75)
    assert (role["pass"], role["score"], retention["score"]) == (False, 0.75, 0.75)
    assert whole["pass"] is True and once["pass"] is True  # one call each over the whole conversation
    assert data["summary"]["judge_calls"] == 4 + 4 + 4 + 1 + 1
    role_prompts = [r["messages"][1]["content"] for r in server.chats() if "汽车销售顾问" in r["messages"][1]["content"]]
    assert len(role_prompts) == 4


def test_per_turn_judgement_reports_every_call_before_an_unusable_answer(tmp_path: Path) -> None:
    """An unusable answer at turn 3 still reports the usage of every call (GradingError.usage), so
    summary.judge_calls can count them; turn 4 is still judged (an error never hides a failure)."""
    import asyncio

    from evalspec.assertions.graded import judge_turns
    from evalspec.config.model import AssertionSpec
    from evalspec.extend.check import GradingContext
    from evalspec.providers.calls import CallStats, ProviderCaller
    from evalspec.providers.judge import make_judge
    from evalspec.providers.model_provider import ModelProvider

    answers = ['{"reason": "ok", "pass": true}', '{"reason": "ok", "pass": true}', "I cannot judge this."]
    transcript = [m for k in (1, 2, 3, 4) for m in ({"role": "user", "content": f"q{k}", "turn": k},
                                                     {"role": "assistant", "content": f"a{k}", "turn": k})]
    spec = AssertionSpec(type="conversation-relevance", negate=False, value=None)
    with judged(answers) as server:
        provider = ModelProvider("judge", {"model": "openai/j", "api_base": server.base, "client": "lean"})
        caller = ProviderCaller(provider, cache=None, timeout=10, retries=0, max_concurrency=None, rpm=None,
                                stats=CallStats())
        ctx = GradingContext(transcript, {}, {}, "t", None, tmp_path, judge=make_judge(caller))

        async def grade() -> None:
            try:
                await judge_turns(spec, ctx, "relevant", 5)
            finally:
                await provider.aclose()

        with pytest.raises(GradingError) as info:
            asyncio.run(grade())
    assert "not a JSON verdict" in str(info.value)
    assert len(server.chats()) == 4 and [u["tokens"] for u in info.value.usage] == [15, 15, 15, 15]
