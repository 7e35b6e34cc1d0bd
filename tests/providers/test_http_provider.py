"""`http:` providers against a loopback chatbot with its own session store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from tests.servers import ChatbotServer, LoopbackServer, Reply

CONVERSATION = """\
tests:
  - id: t
    repeat: 2
    conversation:
      - user: 我叫张三
      - user: 还记得我吗？
        assert:
          - contains: （张三）
"""


def go(tmp_path: Path, text: str, cache: bool = False) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=cache,
                                          cache_dir=tmp_path / "cache")).data


def stateful(server: ChatbotServer, extra: str = "") -> str:
    return f"""\
vars: {{token: abc123}}
providers:
  - id: shop
    http:
      url: {server.url}/chat
      headers: {{X-Api-Token: "{{{{ token }}}}"}}
      body: {{session: "{{{{ thread_id }}}}", text: "{{{{ message }}}}"}}
      response: data.reply
      stateful: true{extra}
""" + CONVERSATION


def test_stateful_sends_only_the_new_message_with_a_stable_thread_id(tmp_path: Path, chatbot_server: ChatbotServer) -> None:
    data = go(tmp_path, stateful(chatbot_server))
    assert [r["status"] for r in data["results"]] == ["passed", "passed"]
    assert all(set(r) == {"session", "text"} for r in chatbot_server.requests)
    sessions = [r["session"] for r in chatbot_server.requests]
    # two conversations (repeats), two turns each: stable within, unique across
    assert len(set(sessions)) == 2 and sessions.count(sessions[0]) == 2
    assert data["results"][0]["transcript"][3]["content"] == "[2] 收到：还记得我吗？（张三）"


def test_stateless_sends_the_whole_history(tmp_path: Path) -> None:
    with ChatbotServer() as server:
        data = go(tmp_path, f"""\
providers:
  - id: bot
    http: {{url: "{server.url}/stateless", response: answer}}
tests:
  - id: t
    conversation:
      - user: 一
      - user: 二
        assert: [{{contains: "2 user messages, last: 二"}}]
""")
    assert data["results"][0]["status"] == "passed"
    second = server.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]


def test_messages_template_renders_the_history_as_a_json_list(tmp_path: Path) -> None:
    with ChatbotServer() as server:
        data = go(tmp_path, f"""\
providers:
  - id: bot
    http: {{url: "{server.url}/stateless", body: {{messages: "{{{{ messages }}}}", x: 1}}, response: answer}}
tests:
  - id: t
    conversation: [{{user: 你好}}]
""")
    assert server.requests[0] == {"messages": [{"role": "user", "content": "你好"}], "x": 1}
    assert data["results"][0]["transcript"][1]["content"] == "1 user messages, last: 你好"


def test_response_path_that_finds_nothing_is_an_error(tmp_path: Path, chatbot_server: ChatbotServer) -> None:
    data = go(tmp_path, stateful(chatbot_server).replace("data.reply", "data.missing"))
    assert data["results"][0]["status"] == "error"
    assert "data.missing" in data["results"][0]["error"]


def test_secret_headers_are_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOT_TOKEN", "very-secret-token")
    with ChatbotServer() as server:
        text = stateful(server).replace('X-Api-Token: "{{ token }}"', 'Authorization: "Bearer ${BOT_TOKEN}"')
        data = go(tmp_path, text)
    assert "very-secret-token" not in str(data)
    assert data["suites"][0]["providers"][0]["http"]["headers"]["Authorization"] == "***"


def test_5xx_then_success_is_retried(tmp_path: Path) -> None:
    calls = []

    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        calls.append(body)
        if len(calls) < 3:
            return Reply(503, {"error": "busy"}, {"Retry-After": "0"})
        return Reply(body={"reply": "ok"})

    with LoopbackServer(handle) as server:
        data = go(tmp_path, f"providers:\n  - id: b\n    http: {{url: '{server.url}/x'}}\n"
                            "tests:\n  - id: t\n    conversation: [{user: hi, assert: [{equals: ok}]}]\n")
    assert data["results"][0]["status"] == "passed" and len(calls) == 3


def test_stateful_replay_only_when_every_turn_is_cached(tmp_path: Path) -> None:
    with ChatbotServer() as server:
        first = go(tmp_path, stateful(server), cache=True)
        calls_after_first = len(server.requests)
        second = go(tmp_path, stateful(server), cache=True)
        assert len(server.requests) == calls_after_first  # fully cached: replayed, no calls
        assert second["summary"]["calls"] == 0 and second["summary"]["cached_calls"] == 4
        assert [r["status"] for r in second["results"]] == [r["status"] for r in first["results"]]
        # one more turn: not every turn is cached, so the whole conversation runs live on a new thread
        longer = stateful(server) + "      - user: 第三句\n"
        third = go(tmp_path, longer, cache=True)
    new_requests = server.requests[calls_after_first:]
    assert len(new_requests) == 6 and len({r["session"] for r in new_requests}) == 2
    assert third["results"][0]["transcript"][5]["content"].startswith("[3]")


def test_malformed_url_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="malformed URL 'localhost:8080/chat'"):
        go(tmp_path, "providers:\n  - id: b\n    http: {url: 'localhost:8080/chat'}\n"
                     "tests:\n  - id: t\n    conversation: [{user: hi}]\n")


def test_validate_names_a_malformed_url_or_python_reference_once_at_its_key(tmp_path: Path) -> None:
    from evalspec.plan.preflight import prepare

    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: b\n    http: {url: 'localhost:8080/chat'}\n  - id: p\n    python: nocolon\n"
                    "tests:\n  - id: t\n    conversation: [{user: hi}]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        prepare([path])
    lines = [str(p) for p in err.value.problems]
    assert [line for line in lines if "malformed URL" in line] == [
        f"{path}:3: providers[0].http.url: provider 'b': malformed URL 'localhost:8080/chat': "
        "expected http(s)://host[:port]/path"]
    assert [line for line in lines if "nocolon" in line] == [
        f"{path}:5: providers[1].python: provider 'p': 'nocolon' is not FILE.py:function or module:function"]


def test_an_http_provider_written_as_a_url_is_one_problem_at_its_line(tmp_path: Path) -> None:
    from evalspec.plan.preflight import prepare

    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: h\n    http: http://127.0.0.1:9/chat\n"
                    "tests:\n  - id: t\n    conversation: [{user: hi}]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        prepare([path])
    assert [str(p) for p in err.value.problems] == [
        f"{path}:3: providers[0].http: http must be a mapping like {{key: value}}, got 'http://127.0.0.1:9/chat'"]


def openai_like(calls: list[dict[str, Any]] | None, content: str | None = "好的") -> Any:
    """An http chatbot answering in OpenAI's format: `tool_calls` is left out when there are none."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls is not None:
        message["tool_calls"] = calls
    return lambda method, path, body, headers: Reply(body={"choices": [{"message": message}]})


def tool_suite(server: LoopbackServer, tool_calls: str, extra: str = "") -> str:
    return f"""\
providers:
  - id: web
    http: {{url: "{server.url}/chat", response: "choices[0].message.content", tool_calls: "{tool_calls}"{extra}}}
tests:
  - id: t
    conversation: [{{user: 帮我退款}}]
    assert: [{{not-tool-called: refund}}]
"""


def test_a_tool_calls_key_left_out_means_no_calls_but_a_path_never_matched_is_warned(tmp_path: Path) -> None:
    with LoopbackServer(openai_like(None)) as server:
        data = go(tmp_path, tool_suite(server, "choices[0].message.tool_calls"))
    assert data["results"][0]["status"] == "passed", data["results"][0]["error"]
    assert data["summary"]["warnings"] == [
        "provider 'web': tool_calls path 'choices[0].message.tool_calls' never matched: check the path"]


def test_a_tool_calls_path_that_matched_once_is_not_warned(tmp_path: Path) -> None:
    with LoopbackServer(openai_like([])) as server:
        data = go(tmp_path, tool_suite(server, "choices[0].message.tool_calls"))
    assert data["results"][0]["status"] == "passed" and "warnings" not in data["summary"]


@pytest.mark.parametrize("path", ["choice[0].message.tool_calls", "choices[0].mesage.tool_calls", "tool_call"])
def test_a_tool_calls_path_with_a_typo_is_an_error_not_no_calls(tmp_path: Path, path: str) -> None:
    calls = [{"name": "refund", "arguments": {}}]
    with LoopbackServer(lambda m, p, b, h: Reply(body={"choices": [{"message": {"content": "已退款"}}],
                                                       "tool_calls": calls})) as server:
        data = go(tmp_path, tool_suite(server, path))
    record = data["results"][0]
    assert record["status"] == "error" and f"tool_calls path '{path}' found nothing" in record["error"]
    assert data["gate"]["exit_code"] == 3


def test_an_http_turn_with_tool_calls_may_have_null_content(tmp_path: Path) -> None:
    calls = [{"name": "refund", "arguments": {"order": "A1"}}]
    with LoopbackServer(openai_like(calls, content=None)) as server:
        data = go(tmp_path, tool_suite(server, "choices[0].message.tool_calls"))
    record = data["results"][0]
    assert record["status"] == "failed", record["error"]  # the call is seen: not-tool-called fails, no error
    reply = record["transcript"][1]
    assert reply["content"] == "" and reply["tool_calls"][0]["name"] == "refund"


def test_null_content_without_tool_calls_is_still_no_reply(tmp_path: Path) -> None:
    with LoopbackServer(openai_like(None, content=None)) as server:
        data = go(tmp_path, tool_suite(server, "choices[0].message.tool_calls"))
    assert data["results"][0]["status"] == "error" and "no reply" in data["results"][0]["error"]


def test_an_oversized_response_is_an_error_naming_the_limit(tmp_path: Path) -> None:
    big = openai_like(None, content="很长" * 2000)
    with LoopbackServer(big) as server:
        small = go(tmp_path, tool_suite(server, "choices[0].message.tool_calls", ", max_response_bytes: 4000"))
        (tmp_path / "big").mkdir()
        default = go(tmp_path / "big", tool_suite(server, "choices[0].message.tool_calls"))
    record = small["results"][0]
    assert record["status"] == "error" and "larger than 4,000 bytes (http.max_response_bytes)" in record["error"]
    assert default["results"][0]["status"] == "passed"  # 12 kB is far under the default 10 MiB


def test_a_header_that_is_not_ascii_is_a_validation_error_naming_it(in_tmp: Path) -> None:
    """A curly quote pasted into a token, a Chinese header name: exit 2 naming the header and its line,
    without printing the value; a template that renders to one is an error of the turn, not a crash."""
    from tests.helpers import invoke

    (in_tmp / "s.yaml").write_text("""\
providers:
  - id: bot
    http:
      url: http://127.0.0.1:9/chat
      headers:
        Accept: application/json
        Authorization: "Bearer sk-live-abc\u201cdef\u201d"
        X-名字: ok
      response: reply
tests:
  - id: t
    conversation: [{user: hi}]
""", encoding="utf-8")
    code, out = invoke("validate", "s.yaml")
    assert code == 2, out
    assert "s.yaml:7: providers[0].http.headers.Authorization: provider 'bot': header 'Authorization'" in out, out
    assert "not ASCII" in out and "U+201C" in out and "s.yaml:8:" in out and "X-名字" in out, out
    assert "sk-live-abc" not in out and "Accept" not in out, out
    with LoopbackServer(lambda m, p, b, h: Reply(body={"reply": "ok"})) as server:
        data = go(in_tmp, f"""\
vars: {{who: 张三}}
providers:
  - id: bot
    http: {{url: "{server.url}/chat", headers: {{X-Who: "{{{{ who }}}}"}}, response: reply}}
tests:
  - id: t
    conversation: [{{user: hi}}]
""")
        assert not server.requests
    assert data["results"][0]["status"] == "error"
    assert "header 'X-Who' has a character that is not ASCII" in data["results"][0]["error"]
