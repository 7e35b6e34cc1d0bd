"""Judge and simulated-user calls ask for structured output and carry max_tokens; a server that rejects
response_format is answered through the tolerant parser, and the rejection is remembered per model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from servers import OpenAIServer, Reply, chat_body

from evalspec import run
from evalspec.runner import RunOptions

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def suite(tmp_path: Path, server: OpenAIServer, judge_extra: str = "", tests: str = "", client: str = "lean") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers:
  - id: bot
    python: {BOT}:respond
judge: {{model: openai/judge-model, api_base: "{server.base}", client: {client}{judge_extra}}}
simulator: {{model: openai/sim-model, api_base: "{server.base}", client: {client}}}
options: {{seed: 7}}
tests:
  - id: t
    conversation:
      - user: 能分期吗？
    assert:
      - llm-rubric: 助手回答了分期问题
      - llm-rubric: 助手没有推销贷款
{tests}
""", encoding="utf-8")
    return path


def go(path: Path, tmp_path: Path) -> dict[str, Any]:
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def verdict(request: dict[str, Any], n: int) -> Reply:
    return Reply(body=chat_body('{"reason": "ok", "pass": true}'))


@pytest.mark.parametrize("client", ["lean", "litellm"])
def test_judge_calls_send_the_verdict_schema_and_a_token_cap(tmp_path: Path, client: str) -> None:
    with OpenAIServer(verdict) as server:
        data = go(suite(tmp_path, server, client=client), tmp_path)
    assert [a["pass"] for a in data["results"][0]["assertions"]] == [True, True]
    request = server.chats()[0]
    assert request["max_tokens"] == 512
    schema = request["response_format"]["json_schema"]["schema"]
    assert request["response_format"]["type"] == "json_schema"
    assert schema["required"] == ["reason", "pass"] and schema["properties"]["pass"] == {"type": "boolean"}


def test_max_tokens_is_configurable_on_the_judge(tmp_path: Path) -> None:
    with OpenAIServer(verdict) as server:
        go(suite(tmp_path, server, judge_extra=", max_tokens: 150"), tmp_path)
    assert {r["max_tokens"] for r in server.chats()} == {150}


def test_a_server_that_rejects_response_format_falls_back_once_per_model(tmp_path: Path) -> None:
    def picky(request: dict[str, Any], n: int) -> Reply:
        if "response_format" in request:
            return Reply(400, {"error": {"message": "response_format is not supported"}})
        return Reply(body=chat_body('Verdict: {"reason": "fine", "pass": true} — done.'))

    with OpenAIServer(picky) as server:
        path = tmp_path / "one.yaml"
        path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge-model, api_base: "{server.base}"}}
tests: [{{id: t, conversation: [{{user: 你好}}], assert: [{{llm-rubric: 礼貌}}]}}]
""", encoding="utf-8")
        first = go(path, tmp_path)
        assert first["results"][0]["status"] == "passed", first["results"][0]["error"]
        assert ["response_format" in r for r in server.chats()] == [True, False]
        data = go(suite(tmp_path, server), tmp_path)  # the same model again: the format is not offered again
    assert [a["pass"] for a in data["results"][0]["assertions"]] == [True, True]
    assert ["response_format" in r for r in server.chats()] == [True, False, False, False]
    assert all(r["max_tokens"] == 512 for r in server.chats())


def test_a_non_format_client_error_is_not_retried_without_the_format(tmp_path: Path) -> None:
    with OpenAIServer(lambda r, n: Reply(401, {"error": {"message": "bad key"}})) as server:
        data = go(suite(tmp_path, server), tmp_path)
    assert data["results"][0]["status"] == "error"
    assert all("response_format" in r for r in server.chats())


def test_simulated_user_answers_json_with_a_cap_and_the_seed(tmp_path: Path) -> None:
    def script(request: dict[str, Any], n: int) -> Reply:
        if "role-playing" in request["messages"][0]["content"]:
            said = sum(1 for m in request["messages"] if m["role"] == "assistant")
            return Reply(body=chat_body(json.dumps({"message": "追风能分期吗？" if said == 0 else "DONE"})))
        return Reply(body=chat_body('{"reason": "ok", "pass": true}'))

    simulate = """\
  - id: buyer
    simulate:
      persona: 一个年轻人
      goal: 问分期
      max_turns: 3
      stop_when: [{user_says: DONE}]"""
    with OpenAIServer(script) as server:
        data = go(suite(tmp_path, server, tests=simulate), tmp_path)
    record = next(r for r in data["results"] if r["test_id"] == "buyer")
    assert [m["content"] for m in record["transcript"] if m["role"] == "user"] == ["追风能分期吗？", "DONE"]
    assert record["stop_reason"] == "user_says"
    sim = [r for r in server.chats() if "role-playing" in r["messages"][0]["content"]]
    assert sim and all(r["max_tokens"] == 256 and r["seed"] == 7 for r in sim)
    assert sim[0]["response_format"]["json_schema"]["schema"]["required"] == ["message"]


def test_a_server_error_naming_response_format_falls_back_too(tmp_path: Path) -> None:
    """llama-cpp-python's server answers 500 to `json_schema`; the judge still gets its verdict."""
    def llama_like(request: dict[str, Any], n: int) -> Reply:
        if "response_format" in request:
            return Reply(500, {"error": {"message": "1 validation error: ('body', 'response_format', 'type'): "
                                                    "Input should be 'text' or 'json_object'"}})
        return Reply(body=chat_body('{"reason": "fine", "pass": true}'))

    with OpenAIServer(llama_like) as server:
        path = tmp_path / "s.yaml"
        path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/llama-like, api_base: "{server.base}", retries: 0}}
tests: [{{id: t, conversation: [{{user: 你好}}], assert: [{{llm-rubric: 礼貌}}]}}]
""", encoding="utf-8")
        data = go(path, tmp_path)
    assert data["results"][0]["status"] == "passed", data["results"][0]["error"]
    assert ["response_format" in r for r in server.chats()] == [True, False]
