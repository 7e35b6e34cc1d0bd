"""`answer_tool_calls: false` (SPEC §13): a model provider's tool calls are reported as the turn's reply,
not answered, against a loopback OpenAI-compatible server, through the lean client and litellm."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from tests.providers.helpers import CLIENTS, TOOLS, agent_suite, go, roles
from tests.servers import AgentScript, OpenAIServer

CALLS = AgentScript({"瑶光有现车吗？": [[("lookup_stock", {"model": "瑶光", "city": "上海"})]]})
REPORT = "    answer_tool_calls: false\n"
CHECKS = """\
    assert:
      - finish-reason: tool_calls
      - tool-called: {name: lookup_stock, args: {model: 瑶光}}
      - tool-args-valid: true
      - not-tool-called: book_test_drive
"""


@pytest.mark.parametrize("client", CLIENTS)
def test_a_reported_call_is_the_turns_reply_and_the_model_is_not_called_again(tmp_path: Path, client: str) -> None:
    with OpenAIServer(CALLS) as server:
        record = go(agent_suite(tmp_path, server, client, ["瑶光有现车吗？"], extra=REPORT, asserts=CHECKS,
                                results=""), tmp_path)
        assert server.calls == 1
        sent_tools = server.chats()[0]["tools"]
    assert record["status"] == "passed", (record["error"], record["assertions"])
    assert roles(record) == [("user", 1), ("assistant", 1)]
    reply = record["transcript"][-1]
    assert reply["tool_calls"] == [{"id": "call_0_0_1", "name": "lookup_stock",
                                    "arguments": {"model": "瑶光", "city": "上海"}}]
    assert reply["finish_reason"] == "tool_calls" and reply["content"] == ""
    assert "intermediate" not in reply and "rounds" not in reply and reply["tokens"] == 15
    assert [t["function"]["name"] for t in sent_tools] == ["lookup_stock", "book_test_drive"]


def test_a_reply_in_words_passes_on_and_fails_the_tool_checks(tmp_path: Path) -> None:
    with OpenAIServer(CALLS) as server:
        record = go(agent_suite(tmp_path, server, "lean", ["你好"], extra=REPORT, asserts=CHECKS, results=""),
                    tmp_path)
    assert record["status"] == "failed"
    verdicts = {a["type"]: a["pass"] for a in record["assertions"]}
    assert verdicts == {"finish-reason": False, "tool-called": False, "tool-args-valid": True,
                        "not-tool-called": True}


def test_a_conversation_that_goes_on_past_a_reported_call_is_an_error_naming_its_turn(tmp_path: Path) -> None:
    with OpenAIServer(CALLS) as server:
        record = go(agent_suite(tmp_path, server, "lean", ["你好", "瑶光有现车吗？", "谢谢"], extra=REPORT,
                                results=""), tmp_path)
        assert server.calls == 2  # turns 1 and 2; turn 3 is never sent
    assert record["status"] == "error"
    assert record["error"].startswith("turn 3: the model's tool calls at turn 2 were reported, not answered")
    assert roles(record) == [("user", 1), ("assistant", 1), ("user", 2), ("assistant", 2), ("user", 3)]


def test_the_default_still_answers_the_calls(tmp_path: Path) -> None:
    with OpenAIServer(CALLS) as server:
        record = go(agent_suite(tmp_path, server, "lean", ["瑶光有现车吗？"], extra="    answer_tool_calls: true\n"),
                    tmp_path)
        assert server.calls == 2
    assert record["status"] == "passed", record["error"]
    assert record["transcript"][-1]["content"] == "done: 瑶光有现车3台"


def test_answer_tool_calls_false_refuses_the_keys_it_would_not_read(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("def respond(m, c):\n    return 'hi'\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text(f"""\
providers:
  - id: m
    model: openai/x
    api_base: http://127.0.0.1:9/v1
{TOOLS}{REPORT}    tool_results: {{lookup_stock: 1}}
    max_tool_rounds: 2
  - id: py
    python: bot.py:respond
    answer_tool_calls: false
tests:
  - id: t
    providers: [m]
    tool_results: {{lookup_stock: 2}}
    conversation: [{{user: hi}}]
""", encoding="utf-8")
    with pytest.raises(ConfigError) as bad:
        run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False))
    text = str(bad.value)
    assert "'tool_results' is not read with answer_tool_calls: false" in text
    assert "'max_tool_rounds' is not read with answer_tool_calls: false" in text
    assert "'answer_tool_calls' is for model providers: python providers report their tool calls" in text
    assert "'tool_results' is for model providers that answer tool calls" in text
