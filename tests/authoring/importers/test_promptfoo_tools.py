"""A promptfoo model provider's `config.tools` imported as evalspec's `tools:` with `answer_tool_calls: false`
(promptfoo gives the model its tools and records the calls as the output, never answering them): OpenAI
function tools as written, Anthropic tools as OpenAI functions, `file://` tool files read; run against
loopback models (OpenAI's chat API and Anthropic's messages API), the call is the reply and its checks pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.authoring.importers.helpers import import_config
from tests.helpers import LITELLM
from tests.servers import LoopbackServer, OpenAIServer, Reply, tool_call_body

WEATHER_SCHEMA = {"type": "object", "properties": {"location": {"type": "string"},
                                                   "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                  "required": ["location"]}
OPENAI_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                                "parameters": WEATHER_SCHEMA}}
ANTHROPIC_TOOL = {"name": "get_weather", "description": "Weather in a city", "input_schema": WEATHER_SCHEMA}
STOCK_TOOL = {"type": "function", "function": {"name": "lookup_stock", "parameters": {
    "type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}}}
CHECKS = [{"type": "finish-reason", "value": "tool_calls"}, {"type": "is-valid-openai-tools-call"}]


def weather_call(request: dict[str, Any], n: int) -> Reply:
    city = request["messages"][-1]["content"].rsplit(" ", 1)[-1].rstrip("?")
    return Reply(body=tool_call_body([("get_weather", {"location": city})]))


def config(base: str, tools: Any, provider: str = "openai:chat:test-model", **extra: Any) -> dict[str, Any]:
    return {"prompts": ["What is the weather in {{ city }}?"],
            "providers": [{"id": provider, "config": {"apiBaseUrl": base, "apiKey": "sk-test", "tools": tools,
                                                      **extra}}],
            "tests": [{"description": "boston", "vars": {"city": "Boston"}, "assert": CHECKS}]}


def imported(tmp_path: Path, source: dict[str, Any]) -> tuple[dict[str, Any], str]:
    code, _, err = import_config(tmp_path, source)
    assert code == 0, err
    text = (tmp_path / "out" / "promptfooconfig.yaml").read_text(encoding="utf-8")
    notes = "\n".join(line for line in text.splitlines() if line.startswith("#"))  # what was not converted
    return yaml.safe_load(text), notes


def play(tmp_path: Path) -> dict[str, Any]:
    options = RunOptions(run_dir=tmp_path / "run", use_cache=False)
    record: dict[str, Any] = run([tmp_path / "out" / "promptfooconfig.yaml"], options=options).data["results"][0]
    return record


def test_openai_tools_from_a_file_are_given_the_model_and_its_call_is_the_reply(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "tools.yaml").write_text(yaml.safe_dump([OPENAI_TOOL, STOCK_TOOL]), encoding="utf-8")
    with OpenAIServer(weather_call) as server:
        suite, err = imported(tmp_path, config(server.base, "file://tools.yaml", tool_choice="required"))
        provider = suite["providers"][0]
        assert provider["tools"] == [OPENAI_TOOL, STOCK_TOOL] and provider["answer_tool_calls"] is False
        assert provider["params"] == {"tool_choice": "required"}
        assert suite["tests"][0]["conversation"][0]["assert"] == [{"finish-reason": "tool_calls"},
                                                                  {"tool-args-valid": True}]
        record = play(tmp_path)
        assert server.calls == 1  # the call is reported, never answered
        sent = server.chats()[0]
    assert record["status"] == "passed", (record["error"], record["assertions"])
    assert record["transcript"][-1]["tool_calls"][0]["arguments"] == {"location": "Boston"}
    assert sent["tools"] == [OPENAI_TOOL, STOCK_TOOL] and sent["tool_choice"] == "required"
    assert "config keys" not in err


def test_tools_listed_one_file_each_are_read(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "weather.json").write_text(json.dumps(OPENAI_TOOL), encoding="utf-8")
    suite, _ = imported(tmp_path, config("http://127.0.0.1:9/v1", ["file://weather.json", STOCK_TOOL]))
    assert suite["providers"][0]["tools"] == [OPENAI_TOOL, STOCK_TOOL]


def anthropic_messages(seen: list[dict[str, Any]]) -> LoopbackServer:
    """A loopback Anthropic messages API whose model calls `get_weather`."""
    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        seen.append({"path": path, **body})
        return Reply(body={"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
                           "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                        "input": {"location": "Boston"}}],
                           "stop_reason": "tool_use", "stop_sequence": None,
                           "usage": {"input_tokens": 10, "output_tokens": 5}})
    return LoopbackServer(handle)


@LITELLM
def test_anthropic_tools_become_openai_functions_that_litellm_sends_back_as_anthropics(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    with anthropic_messages(seen) as server:
        suite, _ = imported(tmp_path, config(server.url, [ANTHROPIC_TOOL], provider="anthropic:messages:claude-x",
                                             tool_choice={"type": "tool", "name": "get_weather"}))
        provider = suite["providers"][0]
        assert provider["tools"] == [OPENAI_TOOL] and provider["answer_tool_calls"] is False
        assert provider["params"]["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
        record = play(tmp_path)
    assert record["status"] == "passed", (record["error"], record["assertions"])
    assert len(seen) == 1 and seen[0]["path"].endswith("/v1/messages")
    sent = seen[0]["tools"][0]
    assert (sent["name"], sent["description"], sent["input_schema"]) == ("get_weather", "Weather in a city",
                                                                         WEATHER_SCHEMA)
    assert seen[0]["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert record["transcript"][-1]["finish_reason"] == "tool_calls"


def test_tools_the_model_would_not_get_alike_leave_their_provider_out(tmp_path: Path) -> None:
    misplaced = {"type": "function", "function": {"name": "get_weather", "input_schema": WEATHER_SCHEMA}}
    source = config("http://127.0.0.1:9/v1", [misplaced])
    source["providers"] += [
        {"id": "anthropic:messages:claude-x", "label": "strict", "config": {"tools": [{**ANTHROPIC_TOOL, "strict": True}]}},
        {"id": "google:gemini-x", "config": {"tools": [{"functionDeclarations": [{"name": "get_weather"}]}]}},
        {"id": "anthropic:messages:claude-y", "config": {"tools": [ANTHROPIC_TOOL],
                                                         "tool_choice": {"type": "any",
                                                                         "disable_parallel_tool_use": True}}},
        {"id": "openai:chat:test-model", "label": "plain"}]
    suite, err = imported(tmp_path, source)
    assert [p["id"] for p in suite["providers"]] == ["plain"]
    assert "tool get_weather: function key input_schema, which OpenAI function tools do not have" in err
    assert "tool get_weather: strict (litellm does not send it to Anthropic)" in err
    assert "tools in a form (functionDeclarations) that is not converted for gemini/ models" in err
    assert "claude-y: tool_choice {'disable_parallel_tool_use': True, 'type': 'any'} on anthropic/ models" in err


def test_server_tools_and_tools_answered_by_callbacks_stay_as_before(tmp_path: Path) -> None:
    source = config("http://127.0.0.1:9/v1", [OPENAI_TOOL], functionToolCallbacks={"get_weather": "() => 1"})
    source["providers"].append({"id": "anthropic:messages:claude-x",
                                "config": {"tools": [{"type": "web_search_20250305", "name": "web_search"}]}})
    suite, err = imported(tmp_path, source)
    assert all("tools" not in p for p in suite["providers"]) and len(suite["providers"]) == 2
    assert "config keys functionToolCallbacks, tools" in err and "provider anthropic:messages:claude-x: config keys tools" in err


def test_text_checks_beside_reported_calls_read_them_as_promptfoo_does(tmp_path: Path) -> None:
    """promptfoo's `contains` on a tool-call output reads the calls' JSON: written as promptfoo's check in
    JavaScript, it passes on the call as promptfoo's does (and a one-line `output.includes` stays JavaScript:
    on the calls' array it is false, as in promptfoo); a check evalspec says only on words is noted."""
    source = config("", [OPENAI_TOOL])
    source["tests"] = [{"description": "boston", "vars": {"city": "Boston"},
                        "assert": [{"type": "contains", "value": "get_weather"},
                                   {"type": "not-icontains", "value": "SUNNY"},
                                   {"type": "javascript", "value": "output.includes('Boston')"},
                                   {"type": "word-count", "value": {"min": 1}}]}]
    with OpenAIServer(weather_call) as server:
        source["providers"][0]["config"]["apiBaseUrl"] = server.base
        suite, notes = imported(tmp_path, source)
        checks = suite["tests"][0]["conversation"][0]["assert"]
        assert [next(iter(c)) for c in checks] == ["javascript", "javascript", "javascript"]
        assert "assert[3]: assertion 'word-count' beside a model whose tool calls are the reply" in notes
        record = play(tmp_path)
    assert [a["pass"] for a in record["assertions"]] == [True, True, False], record["assertions"]


def test_a_grader_with_tools_is_given_none_and_leaves_the_text_checks_evalspec_s(tmp_path: Path) -> None:
    source = {"prompts": ["Say hello"],
              "providers": [{"id": "openai:chat:test-model", "config": {"apiKey": "sk-test"}}],
              "defaultTest": {"options": {"provider": {"id": "openai:chat:gpt-4o", "config": {
                  "apiKey": "sk-test", "tools": [OPENAI_TOOL, {"type": "function", "function": {
                      "name": "odd", "input_schema": {}}}]}}}},
              "tests": [{"assert": [{"type": "contains", "value": "hello"},
                                    {"type": "llm-rubric", "value": "is friendly"}]}]}
    suite, notes = imported(tmp_path, source)
    assert suite["tests"][0]["conversation"][0]["assert"][0] == {"contains": "hello"}  # the model under test has no tools
    assert suite["judge"] == {"model": "openai/gpt-4o", "api_key": "sk-test"}  # kept, without the tools
    assert "judge: config.tools (a grader is not given tools)" in notes
