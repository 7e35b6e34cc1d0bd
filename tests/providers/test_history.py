"""Context strategies (`history: full | window | summary | facts`) on model and python providers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.config.loader import load_suite
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from evalspec.providers.history import exchanges, window
from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body


def strategy_server(rejects_response_format: bool = False) -> OpenAIServer:
    """Strategy calls (a `Summary so far` / `Facts so far` prompt) get a numbered summary or a fact list;
    the bot's calls get `echo: ...`."""
    folds = {"n": 0}

    def script(request: dict[str, Any], n: int) -> Reply:
        prompt = request["messages"][-1]["content"]
        if "so far:" in prompt and "New exchange:" in prompt:
            if rejects_response_format and "response_format" in request:
                return Reply(400, {"error": {"message": "unsupported parameter: response_format"}})
            folds["n"] += 1
            if prompt.startswith("Facts"):
                before = prompt.split("\n")[1]
                known = json.loads(before) if before.startswith("[") else []
                users = [line[6:] for line in prompt.splitlines() if line.startswith("User: ")]
                body = {"facts": known + [f"user said {u}" for u in users]}
            else:
                body = {"summary": f"S{folds['n']}"}
            return Reply(body=chat_body(json.dumps(body), prompt_tokens=20, completion_tokens=8))
        last = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
        return Reply(body=chat_body(f"echo: {last}"))

    return OpenAIServer(script)


def suite(tmp_path: Path, provider: str, turns: int = 4) -> Path:
    conversation = "\n".join(f"      - user: 第{i}个问题" for i in range(1, turns + 1))
    path = tmp_path / "s.yaml"
    path.write_text(f"providers:\n{provider}\ntests:\n  - id: t\n    conversation:\n{conversation}\n", encoding="utf-8")
    return path


def model_provider(server: OpenAIServer, history: str) -> str:
    return f"""\
  - id: m
    model: openai/gpt-4o-mini
    client: lean
    api_base: {server.base}
    api_key: sk-test
    system: 你是汽车销售顾问
    history: {history}"""


def go(path: Path, tmp_path: Path, cache: bool = False) -> dict[str, Any]:
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=cache,
                                          cache_dir=tmp_path / "cache")).data


def strategy_requests(server: OpenAIServer) -> list[dict[str, Any]]:
    return [r for r in server.chats() if "so far:" in r["messages"][-1]["content"]]


def bot_requests(server: OpenAIServer) -> list[dict[str, Any]]:
    return [r for r in server.chats() if "so far:" not in r["messages"][-1]["content"]]


def test_summary_folds_each_older_exchange_once_into_the_system_message(tmp_path: Path) -> None:
    with strategy_server() as server:
        data = go(suite(tmp_path, model_provider(server, "{mode: summary, turns: 1}")), tmp_path)
    record = data["results"][0]
    assert record["status"] == "passed", record
    folds = strategy_requests(server)
    # turns 3 and 4 each fold one more exchange (1 and 2); the second fold starts from the first summary
    assert len(folds) == 2
    assert "(none)" in folds[0]["messages"][1]["content"] and "User: 第1个问题" in folds[0]["messages"][1]["content"]
    assert "Summary so far:\nS1" in folds[1]["messages"][1]["content"]
    assert "User: 第2个问题\nAssistant: echo: 第2个问题" in folds[1]["messages"][1]["content"]
    for fold in folds:
        assert fold["response_format"]["type"] == "json_schema"
        assert fold["response_format"]["json_schema"]["schema"]["required"] == ["summary"]
        assert fold["max_tokens"] == 500
    last = bot_requests(server)[-1]["messages"]
    assert last[0] == {"role": "system", "content": "你是汽车销售顾问\n\nSummary of the earlier conversation:\nS2"}
    assert [m["content"] for m in last[1:]] == ["第3个问题", "echo: 第3个问题", "第4个问题"]
    # counted and costed apart from the bot's own tokens
    assert record["strategy_calls"] == 2 and record["strategy_tokens"] == 56
    assert record["tokens"] == 4 * 15 and record["calls"] == 4
    assert record["strategy_cost"] == pytest.approx(2 * (20 * 1.5e-7 + 8 * 6e-7))
    assert data["summary"]["strategy_tokens"] == 56
    assert data["suites"][0]["providers"][0]["context"] == "summary 1"


def test_strategy_calls_are_cached_with_the_conversation(tmp_path: Path) -> None:
    with strategy_server() as server:
        path = suite(tmp_path, model_provider(server, "{mode: summary, turns: 1, max_tokens: 64}"))
        first = go(path, tmp_path, cache=True)["results"][0]
        calls = len(server.chats())
        second = go(path, tmp_path, cache=True)["results"][0]
        assert len(server.chats()) == calls == 6
    assert first["strategy_calls"] == 2 and second["strategy_calls"] == 0
    assert second["cached_calls"] == 4
    assert strategy_requests(server)[0]["max_tokens"] == 64


def test_facts_lists_what_the_user_stated_with_the_last_exchanges(tmp_path: Path) -> None:
    with strategy_server() as server:
        go(suite(tmp_path, model_provider(server, "{mode: facts, turns: 1}"), turns=3), tmp_path)
    folds = strategy_requests(server)
    assert len(folds) == 2  # one per finished exchange, incrementally
    assert folds[1]["response_format"]["json_schema"]["schema"]["required"] == ["facts"]
    assert '["user said 第1个问题"]' in folds[1]["messages"][1]["content"]
    last = bot_requests(server)[-1]["messages"]
    assert last[0]["content"] == "你是汽车销售顾问\n\nFacts the user has stated:\n- user said 第1个问题\n- user said 第2个问题"
    assert [m["role"] for m in last[1:]] == ["user", "assistant", "user"]


def test_a_python_provider_receives_the_messages_the_strategy_built(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(
        "def respond(messages, context):\n"
        "    return ' | '.join(m['role'] + ':' + m['content'] for m in messages)\n", encoding="utf-8")
    with strategy_server() as server:
        provider = f"""\
  - id: py
    python: bot.py:respond
    history: {{mode: facts, turns: 1, model: {{model: openai/small, api_base: {server.base}, api_key: x}}}}
  - id: py-window
    python: bot.py:respond
    history: {{mode: window, turns: 1}}"""
        data = go(suite(tmp_path, provider, turns=3), tmp_path)
    facts, windowed = (r["transcript"][-1]["content"] for r in data["results"])
    assert facts.startswith("system:Facts the user has stated:\n- user said 第1个问题\n- user said 第2个问题 | user:第2个问题")
    assert windowed.startswith("user:第2个问题 | assistant:") and windowed.endswith("user:第3个问题")
    assert all(r["model"] == "small" for r in strategy_requests(server))


def test_a_server_that_rejects_response_format_gets_the_plain_request_from_then_on(tmp_path: Path) -> None:
    with strategy_server(rejects_response_format=True) as server:
        data = go(suite(tmp_path, model_provider(server, "{mode: summary, turns: 0}"), turns=3), tmp_path)
    assert data["results"][0]["status"] == "passed", data["results"][0]["error"]
    plain = [r for r in strategy_requests(server) if "response_format" not in r]
    structured = [r for r in strategy_requests(server) if "response_format" in r]
    assert len(plain) == 2 and all(r["max_tokens"] == 500 for r in plain)
    assert len(structured) == 3, "each form is asked once (SPEC §20's chain), not on every fold"
    assert [r["response_format"]["type"] for r in structured] == ["json_schema", "json_object", "json_object"]


@pytest.mark.parametrize(("provider", "message"), [
    ("  - id: p\n    python: bot.py:respond\n    history: {mode: summary, turns: 2}", "needs 'model'"),
    ("  - id: p\n    model: openai/gpt-4o-mini\n    history: {mode: facts}", "needs 'turns'"),
    ("  - id: p\n    http: {url: 'http://127.0.0.1:1/chat'}\n    history: {mode: window, turns: 2}",
     "applies to model: and python: providers"),
    ("  - id: p\n    model: openai/gpt-4o-mini\n    history: {mode: window, turns: 2, model: x}", "go with mode summary"),
])
def test_history_problems_are_named_with_their_line(tmp_path: Path, provider: str, message: str) -> None:
    (tmp_path / "bot.py").write_text("def respond(m, c):\n    return 'ok'\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_suite(suite(tmp_path, provider))
    assert message in str(err.value) and "s.yaml:4" in str(err.value)


@pytest.mark.parametrize("mode", ["summary", "facts"])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_summary_or_facts_strategy_on_a_python_provider_without_model_is_a_config_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, command: str) -> None:
    """Not a KeyError from the preflight: exit 2, the key named and what to add, nothing called."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bot.py").write_text("def respond(m, c):\n    open('called', 'a').write('x')\n    return 'ok'\n",
                                     encoding="utf-8")
    path = suite(tmp_path, f"  - id: p\n    python: bot.py:respond\n    history: {{mode: {mode}, turns: 2}}")
    code, out = invoke(command, str(path))
    assert code == 2, out
    assert f"s.yaml:4: providers[0].history: provider 'p': history mode '{mode}' on a python provider " \
           f"needs 'model'" in out
    assert not (tmp_path / "called").exists()


@pytest.mark.parametrize("turns", ["abc", ".nan", ".inf", "[2]", "1e400"])
@pytest.mark.parametrize("mode", ["window", "summary"])
def test_a_history_turns_that_is_no_count_is_a_config_error_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, turns: str) -> None:
    """The preflight reads the strategy of a suite the loader already found wrong: exit 2 naming the key."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bot.py").write_text("def respond(m, c):\n    return 'ok'\n", encoding="utf-8")
    path = suite(tmp_path, f"  - id: p\n    python: bot.py:respond\n    history: {{mode: {mode}, turns: {turns}}}")
    code, out = invoke("validate", str(path))
    assert code == 2, out
    assert "s.yaml:4: providers[0].history.turns: " in out, out


def test_window_counts_exchanges_and_skips_unanswered_user_messages() -> None:
    msgs = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "B"},
            {"role": "user", "content": "c"}, {"role": "assistant", "content": "C1"},
            {"role": "assistant", "content": "C2"}, {"role": "user", "content": "new"}]
    assert [len(g) for g in exchanges(msgs[:-1])] == [2, 3]
    assert [m["content"] for m in window(msgs, 1)] == ["c", "C1", "C2", "new"]
    assert [m["content"] for m in window(msgs, 0)] == ["new"]
