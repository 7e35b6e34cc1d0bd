"""Graded rubrics (`levels:`), `reference:` and the each_turn judge prompt, against a loopback judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from tests.servers import OpenAIServer, Reply, chat_body

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def levels_judge(answers: list[str]) -> OpenAIServer:
    return OpenAIServer(lambda r, n: Reply(body=chat_body(json.dumps({"reason": f"第{n + 1}次", "level": answers[n % len(answers)]},
                                                                     ensure_ascii=False))))


def go(tmp_path: Path, server: OpenAIServer, asserts: str) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge, api_base: "{server.base}"}}
tests:
  - id: t
    conversation:
      - user: 这台瑶光是哪年的车？
      - user: 能分期吗？
    assert:
{asserts}
""", encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


CONFLICT = "      - follows-correction:\n        levels: {主动指出并更正: 1.0, 更正但未指出: 0.8, 部分更正: 0.4, 忽略: 0}"


def test_a_level_answer_scores_that_level_and_passes_at_the_default_threshold(tmp_path: Path) -> None:
    with levels_judge(["更正但未指出"]) as server:
        data = go(tmp_path, server, CONFLICT)
    a = data["results"][0]["assertions"][0]
    assert a["pass"] is True and a["score"] == 0.8 and a["details"]["level"] == "更正但未指出"
    request = server.chats()[0]
    assert request["response_format"]["json_schema"]["schema"]["properties"]["level"]["enum"] == \
        ["主动指出并更正", "更正但未指出", "部分更正", "忽略"]
    assert "部分更正" in request["messages"][-1]["content"]


def test_a_low_level_fails_and_an_explicit_threshold_decides(tmp_path: Path) -> None:
    with levels_judge(["部分更正"]) as server:
        low = go(tmp_path, server, CONFLICT)["results"][0]["assertions"][0]
        lenient = go(tmp_path, server, CONFLICT + "\n        threshold: 0.4")["results"][0]["assertions"][0]
    assert (low["pass"], low["score"]) == (False, 0.4)
    assert (lenient["pass"], lenient["score"]) == (True, 0.4)


def test_an_answer_that_is_no_level_is_an_error(tmp_path: Path) -> None:
    with levels_judge(["差不多吧"]) as server:
        data = go(tmp_path, server, CONFLICT)
    a = data["results"][0]["assertions"][0]
    assert data["results"][0]["status"] == "error" and a["pass"] is None
    assert "'差不多吧'" in a["error"] and "not one of: 主动指出并更正, 更正但未指出, 部分更正, 忽略" in a["error"]


def test_samples_take_the_majority_level_and_a_tie_goes_to_the_lower_score(tmp_path: Path) -> None:
    with levels_judge(["忽略", "主动指出并更正", "主动指出并更正"]) as server:
        majority = go(tmp_path, server, CONFLICT + "\n        samples: 3")["results"][0]["assertions"][0]
    with levels_judge(["主动指出并更正", "部分更正"]) as server:
        tie = go(tmp_path, server, CONFLICT + "\n        samples: 2")["results"][0]["assertions"][0]
    assert majority["score"] == 1.0 and majority["reason"].startswith("2/3 samples chose 主动指出并更正")
    assert tie["score"] == 0.4 and tie["pass"] is False


def test_levels_default_uses_the_seed_levels(tmp_path: Path) -> None:
    with levels_judge(["轻微发散但能拉回"]) as server:
        data = go(tmp_path, server, "      - stays-on-topic:\n        levels: default")
    a = data["results"][0]["assertions"][0]
    assert (a["pass"], a["score"]) == (True, 0.7)
    enum = server.chats()[0]["response_format"]["json_schema"]["schema"]["properties"]["level"]["enum"]
    assert enum == ["全程锚定", "轻微发散但能拉回", "明显漂移", "完全偏离"]


def test_levels_default_is_refused_where_the_seed_has_none(tmp_path: Path) -> None:
    with levels_judge(["x"]) as server, pytest.raises(ConfigError) as caught:
        go(tmp_path, server, "      - coherence:\n        levels: default")
    assert "levels" in str(caught.value)


def test_the_reference_is_shown_to_the_judge(tmp_path: Path) -> None:
    with OpenAIServer(lambda r, n: Reply(body=chat_body('{"reason": "ok", "pass": true}'))) as server:
        go(tmp_path, server, "      - llm-rubric: 回答了年份\n        reference: 2024 年款")
    assert "2024 年款" in server.chats()[0]["messages"][-1]["content"]


def test_each_turn_judge_prompt_stops_at_the_turn_under_review(tmp_path: Path) -> None:
    with OpenAIServer(lambda r, n: Reply(body=chat_body('{"reason": "ok", "pass": true}'))) as server:
        go(tmp_path, server, "      - llm-rubric: 礼貌\n        scope: each_turn")
    prompts = sorted((r["messages"][-1]["content"] for r in server.chats()), key=len)
    assert len(prompts) == 2
    assert "能分期吗？" not in prompts[0] and "这台瑶光是哪年的车？" in prompts[0]
    assert "能分期吗？" in prompts[1]
