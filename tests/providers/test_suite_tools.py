"""The suite's `tools:` are answered by evalspec against the conversation's own world (docs/en/world.md):
for a model behind a loopback OpenAI-compatible server (lean client and litellm) and for a python agent,
which gets the results as `role: tool` messages and is called again within the turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.config.loader import load_suites
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM
from tests.servers import AgentScript, OpenAIServer

CLIENTS = ["lean", pytest.param("litellm", marks=LITELLM)]

WORLD = {"visits": [{"id": "v1", "user_id": "u2", "date": "2026-12-01"}], "orders": []}

HANDLERS = """\
def book_visit(args, world):
    visit = {"id": f"v{len(world['visits']) + 1}", "user_id": args["user_id"], "date": args["date"]}
    world["visits"].append(visit)
    return visit


def cancel_visit(args, world):
    for visit in world["visits"]:
        if visit["id"] == args["visit_id"]:
            world["visits"].remove(visit)
            return {"cancelled": visit["id"]}
    raise KeyError(f"没有预约 {args['visit_id']}")
"""

TOOLS = """\
world: {file: dealer.json}
tools:
  - name: book_visit
    description: 预约到店
    parameters: {type: object, properties: {user_id: {type: string}, date: {type: string}}, required: [user_id, date]}
    python: tools.py:book_visit
  - name: cancel_visit
    description: 取消预约
    parameters: {type: object, properties: {visit_id: {type: string}}, required: [visit_id]}
    python: tools.py:cancel_visit
  - name: get_price
    description: 查询价格
    returns: {model: "{{ args.model }}", price: 129800}
"""


def write(tmp_path: Path, providers: str, tests: str, head: str = TOOLS, agent: str = "") -> Path:
    (tmp_path / "tools.py").write_text(HANDLERS, encoding="utf-8")
    (tmp_path / "agent.py").write_text(agent or AGENT, encoding="utf-8")
    (tmp_path / "dealer.json").write_text(json.dumps(WORLD, ensure_ascii=False), encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(f"{head}providers:\n{providers}\ntests:\n{tests}", encoding="utf-8")
    return path


def go(path: Path, tmp_path: Path, cache: bool = False) -> list[dict[str, Any]]:
    options = RunOptions(run_dir=tmp_path / "run", use_cache=cache, cache_dir=path.parent / "cache")
    records: list[dict[str, Any]] = run([path], options=options).data["results"]
    return records


def model(server: OpenAIServer, client: str) -> str:
    return (f"  - id: agent\n    model: openai/test-model\n    client: {client}\n    api_base: {server.base}\n"
            "    api_key: sk-test-123\n")


BOOK_TEST = """\
  - id: book
    conversation:
      - user: 我是u1，预约周六
    assert:
      - world: {path: "visits[?user_id=='u1'].date | [0]", equals: "2026-12-05"}
      - world-unchanged: [orders]
      - said-vs-did: {claims: {book_visit: "done: "}}
"""


@pytest.mark.parametrize("client", CLIENTS)
def test_a_model_gets_the_suite_tools_and_its_calls_change_the_world(tmp_path: Path, client: str) -> None:
    script = AgentScript({"我是u1，预约周六": [[("get_price", {"model": "瑶光"}),
                                          ("book_visit", {"user_id": "u1", "date": "2026-12-05"})]]})
    with OpenAIServer(script) as server:
        records = go(write(tmp_path, model(server, client), BOOK_TEST), tmp_path)
        chats = server.chats()
    record = records[0]
    assert record["status"] == "passed", (record["error"], record["assertions"])
    assert [t["function"]["name"] for t in chats[0]["tools"]] == ["book_visit", "cancel_visit", "get_price"]
    assert chats[0]["tools"][0]["function"]["description"] == "预约到店"
    price, booked = (m["content"] for m in record["transcript"] if m["role"] == "tool")
    assert json.loads(price) == {"model": "瑶光", "price": 129800}
    assert json.loads(booked) == {"id": "v2", "user_id": "u1", "date": "2026-12-05"}
    assert record["world"]["visits"][-1] == {"id": "v2", "user_id": "u1", "date": "2026-12-05"}
    assert record["world_initial"] == WORLD  # the file itself is never changed
    assert json.loads((tmp_path / "dealer.json").read_text(encoding="utf-8")) == WORLD


AGENT = """\
import json


def respond(messages, context):
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    results = [m for m in messages[last + 1:] if m["role"] == "tool"]
    text = messages[last]["content"]
    if "取消" in text and not results:
        return {"content": None, "tool_calls": [{"name": "cancel_visit", "arguments": {"visit_id": text[-2:]}}]}
    if "预约" in text and not results:
        return {"content": None, "tool_calls": [{"name": "book_visit",
                                                 "arguments": {"user_id": "u1", "date": "2026-12-05"}}]}
    if len(results) == 1 and results[0]["name"] == "book_visit":  # a second round in the same turn
        return {"content": None, "tool_calls": [{"name": "get_price", "arguments": {"model": "瑶光"}}]}
    said = [f"{m['name']}@{m['tool_call_id']}={json.loads(m['content'])}" for m in results]
    return "done: " + " | ".join(said) if said else "您好"
"""

PYTHON = "  - id: agent\n    python: agent.py:respond\n"


def test_a_python_agent_gets_role_tool_messages_and_is_called_again_within_the_turn(tmp_path: Path) -> None:
    record = go(write(tmp_path, PYTHON, BOOK_TEST), tmp_path)[0]
    assert record["status"] == "passed", (record["error"], record["assertions"])
    assert [(m["role"], m["turn"]) for m in record["transcript"]] == [
        ("user", 1), ("assistant", 1), ("tool", 1), ("assistant", 1), ("tool", 1), ("assistant", 1)]
    reply = record["transcript"][-1]["content"]
    assert reply == ("done: book_visit@call_1_1={'id': 'v2', 'user_id': 'u1', 'date': '2026-12-05'} | "
                     "get_price@call_1_2_1={'model': '瑶光', 'price': 129800}")


def test_each_conversation_starts_from_its_own_copy_of_the_world(tmp_path: Path) -> None:
    tests = BOOK_TEST + "    repeat: 3\n"
    records = go(write(tmp_path, PYTHON, tests), tmp_path)
    assert [r["status"] for r in records] == ["passed"] * 3
    assert all(len(r["world"]["visits"]) == 2 for r in records)


def test_a_handler_that_raises_answers_its_error_and_the_conversation_goes_on(tmp_path: Path) -> None:
    tests = """\
  - id: cancel
    conversation:
      - user: 取消预约v9
      - user: 预约
    assert:
      - said-vs-did: {claims: {cancel_visit: "done: cancel_visit"}}
"""
    record = go(write(tmp_path, PYTHON, tests), tmp_path)[0]
    assert record["stop_reason"] == "completed" and record["error"] is None
    tool = next(m for m in record["transcript"] if m["role"] == "tool")
    assert json.loads(tool["content"]) == {"error": "'没有预约 v9'"} and tool["error"] == "'没有预约 v9'"
    assert record["transcript"][3]["content"].startswith("done: cancel_visit@call_1_1={'error':")
    said = record["assertions"][0]
    assert said["pass"] is False and said["reason"] == "turn 1 says done: cancel_visit but every cancel_visit call errored"
    assert len(record["world"]["visits"]) == 2  # turn 2 still booked


LOOPING = """\
def respond(messages, context):
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    rounds = sum(1 for m in messages[last + 1:] if m["role"] == "assistant")
    if rounds < int(messages[last]["content"]):
        return {"content": None, "tool_calls": [{"name": "get_price", "arguments": {"model": str(rounds)}}]}
    return f"answered after {rounds} rounds"
"""


def test_twenty_rounds_are_answered_and_a_twenty_first_makes_the_conversation_an_error(tmp_path: Path) -> None:
    tests = "  - id: twenty\n    conversation:\n      - user: '20'\n  - id: twenty-one\n    conversation:\n" \
            "      - user: '21'\n"
    records = go(write(tmp_path, PYTHON.replace("respond", "respond"), tests, agent=LOOPING), tmp_path)
    twenty, twenty_one = records
    assert twenty["stop_reason"] == "completed", twenty["error"]
    assert twenty["transcript"][-1]["content"] == "answered after 20 rounds"
    assert twenty_one["status"] == "error"
    assert twenty_one["error"] == "turn 1: the agent still called tools after 20 rounds (max_tool_rounds: 20)"
    capped = go(write(tmp_path, PYTHON + "    max_tool_rounds: 2\n", "  - id: three\n    conversation:\n"
                                                                        "      - user: '3'\n", agent=LOOPING),
                tmp_path / "again")[0]
    assert capped["error"] == "turn 1: the agent still called tools after 2 rounds (max_tool_rounds: 2)"


def test_a_python_agent_calling_a_tool_outside_the_suite_is_an_error_naming_it(tmp_path: Path) -> None:
    agent = "def respond(messages, context):\n    return {'content': None, 'tool_calls': [{'name': 'fly', 'arguments': {}}]}\n"
    record = go(write(tmp_path, PYTHON, "  - id: t\n    conversation:\n      - user: hi\n", agent=agent), tmp_path)[0]
    assert record["status"] == "error"
    assert "the agent called 'fly', which is not among the suite's tools (book_visit, cancel_visit, get_price)" \
        in record["error"]


def test_a_matrix_names_the_world_file_of_each_instance(tmp_path: Path) -> None:
    (tmp_path / "busy.json").write_text(json.dumps({"visits": [{"id": "v1"}, {"id": "v2"}], "orders": []}),
                                        encoding="utf-8")
    tests = BOOK_TEST.replace("  - id: book\n", "  - id: book\n    world: {file: \"{{ w }}\"}\n"
                                                "    matrix: {w: [dealer.json, busy.json]}\n")
    tests = tests.replace("equals: \"2026-12-05\"", "exists: true")
    records = go(write(tmp_path, PYTHON, tests), tmp_path)
    assert [len(r["world_initial"]["visits"]) for r in records] == [1, 2]
    assert [r["world"]["visits"][-1]["id"] for r in records] == ["v2", "v3"]


def test_the_world_is_part_of_the_cache_key(tmp_path: Path) -> None:
    path = write(tmp_path, PYTHON, BOOK_TEST)
    first = go(path, tmp_path, cache=True)[0]
    again = go(path, tmp_path / "again", cache=True)[0]
    assert first["calls"] == 3 and again["calls"] == 0 and again["cached_calls"] == 3
    assert again["world"] == first["world"]  # the tools still ran against the world: it is the same
    (tmp_path / "dealer.json").write_text(json.dumps({**WORLD, "orders": [{"id": "o1"}]}), encoding="utf-8")
    changed = go(path, tmp_path / "changed", cache=True)[0]
    assert changed["calls"] == 3 and changed["world"]["orders"] == [{"id": "o1"}]


def test_a_recorded_conversation_replays_its_calls_against_the_world(tmp_path: Path) -> None:
    tests = """\
  - id: recorded
    transcript:
      - user: 我是u1，预约周六
      - assistant: null
        tool_calls: [{id: c1, type: function, function: {name: book_visit, arguments: '{"user_id": "u1", "date": "2026-12-05"}'}}]
      - tool: '{"id": "v2"}'
        tool_call_id: c1
      - assistant: 已为您预约周六
    assert:
      - world: {path: "visits[?user_id=='u1'].date | [0]", equals: "2026-12-05"}
      - said-vs-did: {claims: {book_visit: 已为您预约}}
"""
    record = go(write(tmp_path, "  - id: unused\n    python: agent.py:respond\n", tests), tmp_path)[0]
    assert record["status"] == "passed", record["assertions"]
    assert len(record["world"]["visits"]) == 2


# -- validation --------------------------------------------------------------------------------------

def problems(tmp_path: Path, providers: str, tests: str, head: str = TOOLS) -> str:
    with pytest.raises(ConfigError) as caught:
        load_suites([write(tmp_path, providers, tests, head=head)])
    return str(caught.value)


SIMPLE = "  - id: t\n    conversation:\n      - user: hi\n"


def test_a_tool_name_in_both_the_suite_and_a_provider_is_a_validation_error(tmp_path: Path) -> None:
    provider = ("  - id: agent\n    model: openai/x\n    api_base: http://127.0.0.1:9/v1\n    tools:\n"
                "      - {type: function, function: {name: book_visit}}\n")
    assert "tool 'book_visit' is in provider 'agent' `tools` and in the suite's `tools:`" in \
        problems(tmp_path, provider, SIMPLE)


def test_a_world_beside_an_http_provider_is_a_validation_error(tmp_path: Path) -> None:
    http = "  - id: bot\n    http: {url: 'http://127.0.0.1:9/chat', body: {q: '{{ message }}'}, response: text}\n"
    found = problems(tmp_path, http, SIMPLE)
    assert "http provider 'bot' reports its tool calls" in found and "suite.yaml:1" in found


def test_a_bad_world_file_is_a_validation_error_naming_it(tmp_path: Path) -> None:
    found = problems(tmp_path, PYTHON, SIMPLE, head=TOOLS.replace("dealer.json", "missing.json"))
    assert "world file" in found and "missing.json not found" in found
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    found = problems(tmp_path, PYTHON, SIMPLE, head=TOOLS.replace("dealer.json", "list.json"))
    assert "holds list, not a JSON object" in found


def test_world_checks_without_a_world_and_a_handler_that_is_not_there_are_validation_errors(tmp_path: Path) -> None:
    head = TOOLS.replace("world: {file: dealer.json}\n", "").replace("tools.py:book_visit", "nope.py:book_visit")
    found = problems(tmp_path, PYTHON, BOOK_TEST, head=head)
    assert "'world' reads the final world, and test 'book' has none" in found
    assert "tool 'book_visit': nope.py not found" in found
    found = problems(tmp_path, "  - id: bot\n    http: {url: 'http://127.0.0.1:9/c', body: {}, response: t}\n"
                               "    max_tool_rounds: 3\n", SIMPLE, head="")
    assert "'max_tool_rounds' is for model and python providers" in found
