"""The agent loop (SPEC §13) against a loopback OpenAI-compatible server that answers with tool calls,
through the lean client and litellm: rounds, parallel calls, errors, the transcript and the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.providers.history import window
from tests.providers.helpers import CLIENTS, RESULTS, agent_suite, go, roles
from tests.servers import AgentScript, OpenAIServer


@pytest.mark.parametrize("client", CLIENTS)
def test_one_round_is_answered_from_a_template_and_the_model_called_again(tmp_path: Path, client: str) -> None:
    script = AgentScript({"瑶光有现车吗？": [[("lookup_stock", {"model": "瑶光"})]]})
    with OpenAIServer(script) as server:
        record = go(agent_suite(tmp_path, server, client, ["瑶光有现车吗？"]), tmp_path)
        chats = server.chats()
    assert record["status"] == "passed", record["error"]
    assert roles(record) == [("user", 1), ("assistant", 1), ("tool", 1), ("assistant", 1)]
    call_msg, tool_msg, reply = record["transcript"][1:]
    assert call_msg["tool_calls"] == [{"id": "call_0_0_1", "name": "lookup_stock", "arguments": {"model": "瑶光"}}]
    assert call_msg["intermediate"] is True and call_msg["tokens"] is None
    assert tool_msg["content"] == "瑶光有现车3台" and tool_msg["tool_call_id"] == "call_0_0_1"
    assert reply["content"] == "done: 瑶光有现车3台"
    assert reply["tokens"] == 30 and len(reply["rounds"]) == 2  # summed over the turn's two model calls
    assert reply["latency_ms"] == pytest.approx(sum(r["latency_ms"] for r in reply["rounds"]), abs=0.01)
    assert record["tokens"] == 30
    assert [t["function"]["name"] for t in chats[0]["tools"]] == ["lookup_stock", "book_test_drive"]
    second = chats[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"] == {"name": "lookup_stock", "arguments": '{"model": "瑶光"}'}
    assert second[-1] == {"role": "tool", "tool_call_id": "call_0_0_1", "content": "瑶光有现车3台"}


@pytest.mark.parametrize("client", CLIENTS)
def test_two_rounds_call_a_python_result_with_args_and_context(tmp_path: Path, client: str) -> None:
    script = AgentScript({"周六上午十点试驾瑶光": [[("lookup_stock", {"model": "瑶光"})],
                                            [("book_test_drive", {"model": "瑶光", "time": "周六10:00"})]]})
    with OpenAIServer(script) as server:
        record = go(agent_suite(tmp_path, server, client, ["你好", "周六上午十点试驾瑶光"]), tmp_path)
        assert server.calls == 4
    assert record["status"] == "passed", record["error"]
    assert roles(record) == [("user", 1), ("assistant", 1), ("user", 2), ("assistant", 2), ("tool", 2),
                             ("assistant", 2), ("tool", 2), ("assistant", 2)]
    booked = record["transcript"][-2]["content"]
    assert booked == '{"booked": true, "model": "瑶光", "time": "周六10:00"}'
    assert record["transcript"][-1]["content"] == "done: 瑶光有现车3台 | " + booked
    assert len(record["transcript"][-1]["rounds"]) == 3


def test_parallel_calls_in_one_round_get_one_result_each(tmp_path: Path) -> None:
    script = AgentScript({"比较两款": [[("lookup_stock", {"model": "瑶光"}), ("lookup_stock", {"model": "追风"})]]})
    with OpenAIServer(script) as server:
        record = go(agent_suite(tmp_path, server, "lean", ["比较两款"]), tmp_path)
        second = server.chats()[1]["messages"]
    assert roles(record) == [("user", 1), ("assistant", 1), ("tool", 1), ("tool", 1), ("assistant", 1)]
    assert [m["tool_call_id"] for m in record["transcript"][2:4]] == ["call_0_0_1", "call_0_0_2"]
    assert record["transcript"][-1]["content"] == "done: 瑶光有现车3台 | 追风有现车3台"
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_call_to_a_tool_without_a_result_is_an_error_that_names_it(tmp_path: Path, client: str) -> None:
    script = AgentScript({"送我优惠券": [[("send_coupon", {"amount": 5000})]]})
    with OpenAIServer(script) as server:
        record = go(agent_suite(tmp_path, server, client, ["送我优惠券"]), tmp_path)
        assert server.calls == 1
    assert record["status"] == "error"
    assert "turn 1" in record["error"] and "'send_coupon'" in record["error"] and "lookup_stock" in record["error"]
    assert record["transcript"][-1]["tool_calls"][0]["name"] == "send_coupon"  # the offending call is kept


def test_arguments_that_break_the_schema_are_answered_and_fail_tool_args_valid(tmp_path: Path) -> None:
    script = AgentScript({"订试驾": [[("book_test_drive", {"model": "瑶光", "when": "明天"})]]})
    asserts = "    assert:\n      - type: tool-args-valid\n"
    results = RESULTS.replace('{python: "tools.py:book"}', "已预约")
    with OpenAIServer(script) as server:
        record = go(agent_suite(tmp_path, server, "lean", ["订试驾"], asserts=asserts, results=results), tmp_path)
    assert record["status"] == "failed"
    result = record["assertions"][0]
    assert result["type"] == "tool-args-valid" and result["pass"] is False
    assert "'time' is a required property" in result["reason"]
    assert result["evidence"][0]["turn"] == 1 and result["evidence"][0]["text"].startswith("book_test_drive(")


@pytest.mark.parametrize("client", CLIENTS)
def test_more_rounds_than_allowed_is_an_error(tmp_path: Path, client: str) -> None:
    script = AgentScript({"查一下": [[("lookup_stock", {"model": "瑶光"})]] * 5})
    with OpenAIServer(script) as server:
        record = go(agent_suite(tmp_path, server, client, ["查一下"], extra="    max_tool_rounds: 2\n"), tmp_path)
        assert server.calls == 3  # two answered rounds, then the third request for tools ends the turn
    assert record["status"] == "error"
    assert "after 2 rounds (max_tool_rounds: 2)" in record["error"]
    assert sum(1 for m in record["transcript"] if m["role"] == "tool") == 2


def test_a_rerun_of_an_agent_conversation_makes_no_calls(tmp_path: Path) -> None:
    script = AgentScript({"周六上午十点试驾瑶光": [[("lookup_stock", {"model": "瑶光"})],
                                            [("book_test_drive", {"model": "瑶光", "time": "周六10:00"})]]})
    with OpenAIServer(script) as server:
        path = agent_suite(tmp_path, server, "lean", ["你好", "周六上午十点试驾瑶光"])
        first = go(path, tmp_path, cache=True)
        calls = server.calls
        second = go(path, tmp_path, cache=True)
        assert server.calls == calls == 4
    assert second["calls"] == 0 and second["cached_calls"] == 4
    strip = [{k: v for k, v in m.items() if k not in ("cached", "latency_ms", "rounds")} for m in first["transcript"]]
    assert [{k: v for k, v in m.items() if k not in ("cached", "latency_ms", "rounds")} for m in second["transcript"]] == strip


def test_a_window_keeps_tool_messages_with_their_exchange() -> None:
    history = [
        {"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function", "function": {}}]},
        {"role": "tool", "tool_call_id": "c", "content": "r"}, {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "u3"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "d", "type": "function", "function": {}}]},
        {"role": "tool", "tool_call_id": "d", "content": "r3"},
    ]
    kept = window(history, 1)
    assert [m["content"] for m in kept] == ["u2", "", "r", "a2", "u3", "", "r3"]
    assert [m["content"] for m in window(history[:7], 0)] == ["u3"]


def test_http_and_python_providers_report_calls_that_are_recorded_not_answered(tmp_path: Path) -> None:
    from tests.servers import LoopbackServer, Reply

    def bot(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        return Reply(body={"reply": "已为您查询", "actions": [{"name": "lookup_stock", "arguments": {"model": "瑶光"}}]})

    (tmp_path / "bot.py").write_text(
        "def respond(messages, context):\n"
        "    return {'content': None, 'tool_calls': [{'name': 'book_test_drive',\n"
        "            'arguments': {'model': '瑶光', 'time': '周六'}, 'result': {'ok': True}}]}\n", encoding="utf-8")
    with LoopbackServer(bot) as server:
        (tmp_path / "s.yaml").write_text(f"""\
providers:
  - id: web
    http: {{url: "{server.url}/chat", response: reply, tool_calls: actions}}
  - id: py
    python: bot.py:respond
    tools: [{{type: function, function: {{name: book_test_drive, parameters: {{type: object, required: [time]}}}}}}]
tests:
  - id: t
    conversation: [{{user: 瑶光有货吗}}]
""", encoding="utf-8")
        data = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    web, py = data["results"]
    assert web["status"] == "passed", web["error"]
    assert roles(web) == [("user", 1), ("assistant", 1)]
    assert web["transcript"][1]["tool_calls"] == [{"id": "call_1_1", "name": "lookup_stock",
                                                   "arguments": {"model": "瑶光"}}]
    assert py["status"] == "passed", py["error"]  # an empty reply is allowed when the turn made tool calls
    assert roles(py) == [("user", 1), ("assistant", 1), ("tool", 1)]
    assert py["transcript"][2]["content"] == '{"ok": true}'


def test_tool_keys_are_checked_before_any_call(tmp_path: Path) -> None:
    from evalspec.core.errors import ConfigError, LoadError

    (tmp_path / "bot.py").write_text("def respond(m, c):\n    return 'hi'\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text("""\
providers:
  - id: py
    python: bot.py:respond
    tool_results: {lookup: 1}
  - id: m
    model: openai/x
    api_base: http://127.0.0.1:9/v1
    tools: [{type: function, function: {name: lookup_stock}}]
    tool_results: {lookup_stok: 1}
tests:
  - id: t
    conversation: [{user: hi}]
""", encoding="utf-8")
    with pytest.raises(ConfigError) as bad:
        run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False))
    text = str(bad.value)
    assert "'tool_results' is for model providers" in text
    assert "tool_results for 'lookup_stok', which is not in `tools` (did you mean 'lookup_stock'?)" in text
    (tmp_path / "s.yaml").write_text("""\
providers:
  - id: m
    model: openai/x
    api_base: http://127.0.0.1:9/v1
    tools: tools.py:TOOLS
    tool_results: {lookup: {python: "tools.py:nothing"}}
tests:
  - id: t
    conversation: [{user: hi}]
""", encoding="utf-8")
    with pytest.raises((ConfigError, LoadError)) as missing:
        run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run2", use_cache=False))
    assert "tools.py" in str(missing.value) and "does not exist" in str(missing.value)


def test_a_tool_result_function_that_exits_makes_that_test_an_error_not_the_run(tmp_path: Path) -> None:
    script = AgentScript({"订试驾": [[("book_test_drive", {"model": "瑶光", "time": "周六"})]]})
    (tmp_path / "exits.py").write_text("import sys\n\ndef book(args, context):\n    sys.exit(3)\n", encoding="utf-8")
    results = RESULTS.replace("tools.py:book", "exits.py:book")
    with OpenAIServer(script) as server:
        record = go(agent_suite(tmp_path, server, "lean", ["订试驾"], results=results), tmp_path)
    assert record["status"] == "error"
    assert "turn 1: tool_results: exits.py:book raised SystemExit(3)" in record["error"]
