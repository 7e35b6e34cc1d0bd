"""`model:` providers against a loopback OpenAI-compatible server, through litellm and the lean client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM
from tests.servers import OpenAIServer, Reply, chat_body

CLIENTS = [pytest.param("litellm", marks=LITELLM), "lean"]


def suite(tmp_path: Path, server: OpenAIServer, client: str, extra: str = "", turns: int = 1,
          body: str | None = None) -> Path:
    conversation = "\n".join(f"      - user: 第{i}个问题" for i in range(1, turns + 1))
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers:
  - id: m
    model: openai/gpt-4o-mini
    client: {client}
    api_base: {server.base}
    api_key: sk-test-123
    system: 你是汽车销售顾问
{extra}
tests:
  - id: t
    conversation:
{conversation}
""" + (body or ""), encoding="utf-8")
    return path


def go(path: Path, tmp_path: Path) -> dict[str, Any]:
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


@pytest.mark.parametrize("client", CLIENTS)
def test_reply_tokens_latency_and_cost_recorded(tmp_path: Path, client: str, echo_server: OpenAIServer) -> None:
    data = go(suite(tmp_path, echo_server, client, turns=2), tmp_path)
    record = data["results"][0]
    assert record["status"] == "passed", record
    replies = [m for m in record["transcript"] if m["role"] == "assistant"]
    assert [m["content"] for m in replies] == ["echo: 第1个问题", "echo: 第2个问题"]
    assert all(m["tokens"] == 15 and m["latency_ms"] > 0 for m in replies)
    assert replies[0]["cost"] == pytest.approx(10 * 1.5e-7 + 5 * 6e-7)
    first = echo_server.chats()[0]
    assert first["messages"][0] == {"role": "system", "content": "你是汽车销售顾问"}
    assert first["model"] == "gpt-4o-mini"
    assert echo_server.auth[0] == "Bearer sk-test-123"
    # the system's own reply is the next turn's context
    assert echo_server.chats()[1]["messages"][2] == {"role": "assistant", "content": "echo: 第1个问题"}
    # the key never lands in run.json
    assert "sk-test-123" not in str(data)


@pytest.mark.parametrize("client", CLIENTS)
def test_window_history_sends_only_the_last_exchanges(tmp_path: Path, client: str, echo_server: OpenAIServer) -> None:
    go(suite(tmp_path, echo_server, client, extra="    history: {mode: window, turns: 2}", turns=5), tmp_path)
    last = echo_server.chats()[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in last if m["role"] == "user"] == ["第3个问题", "第4个问题", "第5个问题"]
    assert sum(1 for m in echo_server.chats()[1]["messages"] if m["role"] == "user") == 2


@pytest.mark.parametrize("client", CLIENTS)
def test_429_then_200_is_retried_honouring_retry_after(tmp_path: Path, client: str) -> None:
    def script(request: dict[str, Any], n: int) -> Reply:
        if n == 0:
            return Reply(429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": "0"})
        return Reply(body=chat_body("ok"))

    with OpenAIServer(script) as server:
        data = go(suite(tmp_path, server, client), tmp_path)
    assert data["results"][0]["status"] == "passed"
    assert server.calls == 2


@pytest.mark.parametrize("client", CLIENTS)
def test_persistent_500_is_an_error_with_its_cause(tmp_path: Path, client: str) -> None:
    with OpenAIServer(lambda r, n: Reply(500, {"error": {"message": "upstream exploded"}}, {"Retry-After": "0"})) as server:
        data = go(suite(tmp_path, server, client, extra="    retries: 2"), tmp_path)
    record = data["results"][0]
    assert record["status"] == "error" and record["stop_reason"] == "error"
    assert "500" in record["error"] or "InternalServerError" in record["error"]
    assert server.calls == 3
    assert data["gate"]["exit_code"] == 3


@pytest.mark.parametrize("client", CLIENTS)
def test_401_is_not_retried(tmp_path: Path, client: str) -> None:
    with OpenAIServer(lambda r, n: Reply(401, {"error": {"message": "bad key"}})) as server:
        data = go(suite(tmp_path, server, client), tmp_path)
    assert data["results"][0]["status"] == "error" and server.calls == 1


def test_hanging_server_times_out(tmp_path: Path) -> None:
    with OpenAIServer(lambda r, n: Reply(body=chat_body("late"), delay=3)) as server:
        data = go(suite(tmp_path, server, "lean", extra="    timeout: 0.3\n    retries: 1"), tmp_path)
    record = data["results"][0]
    assert record["status"] == "error" and "timed out" in record["error"]
    # counted on the client: under load the retry may time out before the server has even read it
    assert (record["retries"], record["failed_calls"]) == (1, 2)
    assert server.calls >= 1


def test_unreachable_server_is_an_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "s.yaml"
    path.write_text(f"providers:\n  - id: m\n    model: openai/x\n    api_base: http://127.0.0.1:{port}/v1\n"
                    "    retries: 0\ntests:\n  - id: t\n    conversation: [{user: hi}]\n")
    record = go(path, tmp_path)["results"][0]
    assert record["status"] == "error" and "connection" in record["error"].lower()


def test_missing_api_key_stops_before_any_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: gpt\n    model: openai/gpt-4o-mini\ntests:\n  - id: t\n    conversation: [{user: hi}]\n")
    with pytest.raises(ConfigError) as info:
        go(path, tmp_path)
    message = str(info.value)
    assert "provider 'gpt'" in message and "OPENAI_API_KEY" in message
    assert not (tmp_path / "run" / "journal.jsonl").exists()


def test_malformed_api_base_is_a_preflight_error(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: gpt\n    model: openai/x\n    api_base: localhost:8000\n"
                    "tests:\n  - id: t\n    conversation: [{user: hi}]\n")
    with pytest.raises(ConfigError, match="api_base: malformed URL 'localhost:8000': expected http"):
        go(path, tmp_path)


def test_unknown_model_provider_is_a_preflight_error(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: odd\n    model: nosuchprovider/some-model\n"
                    "tests:\n  - id: t\n    conversation: [{user: hi}]\n")
    with pytest.raises(ConfigError, match="provider 'odd': model 'nosuchprovider/some-model': 'nosuchprovider' is not a provider litellm knows"):
        go(path, tmp_path)
    path.write_text(path.read_text().replace("nosuchprovider/some-model", "antropic/claude-x"))
    with pytest.raises(ConfigError, match="did you mean 'anthropic'"):
        go(path, tmp_path)


def test_provider_configuration_is_described_with_a_system_prompt_hash(tmp_path: Path, echo_server: OpenAIServer) -> None:
    data = go(suite(tmp_path, echo_server, "lean", extra="    history: {mode: window, turns: 3}\n    params: {temperature: 0}"), tmp_path)
    config = data["suites"][0]["providers"][0]
    assert config["context"] == "window 3" and config["history"] == {"mode": "window", "turns": 3} and len(config["system_sha256"]) == 12
    from evalspec.config.model import describe_provider

    assert describe_provider(config) == f"openai/gpt-4o-mini · history window 3 · temperature=0 · system #{config['system_sha256']}"


def test_system_prompt_is_a_template_over_suite_vars(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        path = suite(tmp_path, server, "lean")
        path.write_text("vars: {brand: 星途}\n" + path.read_text(encoding="utf-8").replace(
            "system: 你是汽车销售顾问", "system: 你是{{ brand }}的汽车销售顾问"), encoding="utf-8")
        go(path, tmp_path)
        assert server.chats()[0]["messages"][0]["content"] == "你是星途的汽车销售顾问"
        path.write_text(path.read_text(encoding="utf-8").replace("{{ brand }}", "{{ brnd }}"), encoding="utf-8")
        with pytest.raises(ConfigError, match="'brnd' is undefined"):
            go(path, tmp_path)


def test_a_system_prompt_naming_a_test_var_is_rendered_for_each_test(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        path = tmp_path / "s.yaml"
        path.write_text(f"""\
vars: {{brand: 星途}}
providers:
  - id: m
    model: openai/gpt-4o-mini
    client: lean
    api_base: {server.base}
    api_key: sk-test-123
    system: 你是{{{{ brand }}}}的{{{{ role }}}}
tests:
  - id: sales
    vars: {{role: 销售顾问}}
    conversation: [{{user: 你好}}]
  - id: service
    vars: {{role: service agent}}
    conversation: [{{user: 你好}}]
  - id: nobody
    conversation: [{{user: 你好}}]
""", encoding="utf-8")
        with pytest.raises(ConfigError, match="system: names role, which test 'nobody' has not among its vars"):
            go(path, tmp_path)  # found before any call
        assert server.chats() == []
        path.write_text(path.read_text(encoding="utf-8").replace("  - id: nobody\n", "  - id: nobody\n"
                                                                 "    vars: {role: 顾问}\n"), encoding="utf-8")
        records = {r["test_id"]: r for r in go(path, tmp_path)["results"]}
        systems = sorted(chat["messages"][0]["content"] for chat in server.chats())
        assert systems == ["你是星途的service agent", "你是星途的销售顾问", "你是星途的顾问"]
        assert {r["status"] for r in records.values()} == {"passed"}
        # a name no test has is still a typo found before any call
        path.write_text(path.read_text(encoding="utf-8").replace("{{ role }}", "{{ rol }}"), encoding="utf-8")
        with pytest.raises(ConfigError, match="'rol' is undefined"):
            go(path, tmp_path)
