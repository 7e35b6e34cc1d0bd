"""A provider's `setup:`, a test's `state:` seed and its `tool_results:` stubs (SPEC §24)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from tests.servers import AgentScript, OpenAIServer

BOT = '''
import json, pathlib

LOG = pathlib.Path(__file__).with_name("log.jsonl")

def note(**entry):
    with LOG.open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\\n")

def respond(messages, context):
    note(what="turn", thread_id=context["thread_id"], state=context.get("state"))
    city = (context.get("state") or {}).get("slots", {}).get("city")
    return {"content": f"好的（{city}）", "state": {"slots": {"city": city}, "turn": context["turn"]}}

def setup(context):
    note(what="setup", **context)

def broken(context):
    raise RuntimeError("the CRM is down")

def undo(context):
    note(what="teardown", thread_id=context["thread_id"])
'''


def go(tmp_path: Path, provider: str, test: str, cache: bool = False, run_dir: str = "run") -> dict[str, Any]:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(f"vars: {{shop: 望京店}}\nproviders:\n  - id: bot\n    python: bot.py:respond\n{provider}"
                    f"tests:\n  - id: t\n{test}", encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / run_dir, use_cache=cache,
                                          cache_dir=tmp_path / "cache")).data


def log(tmp_path: Path) -> list[dict[str, Any]]:
    file = tmp_path / "log.jsonl"
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()] if file.exists() else []


SEEDED = "    state: {slots: {city: 北京}}\n    conversation: [{user: 你好}, {user: 再见}]\n"


def test_setup_runs_once_before_the_first_turn_and_the_state_reaches_the_bot(tmp_path: Path) -> None:
    data = go(tmp_path, "    setup: bot.py:setup\n", SEEDED)
    record = data["results"][0]
    assert record["status"] == "passed", record.get("error")
    entries = log(tmp_path)
    assert [e["what"] for e in entries] == ["setup", "turn", "turn"]
    setup = entries[0]
    assert setup["test_id"] == "t" and setup["vars"] == {"shop": "望京店"} and setup["provider"] == "bot"
    assert setup["state"] == {"slots": {"city": "北京"}} and setup["thread_id"] == entries[1]["thread_id"]
    assert entries[1]["state"] == {"slots": {"city": "北京"}}
    replies = [m for m in record["transcript"] if m["role"] == "assistant"]
    assert replies[0]["content"] == "好的（北京）"
    assert [m["state"] for m in replies] == [{"slots": {"city": "北京"}, "turn": 1},
                                             {"slots": {"city": "北京"}, "turn": 2}]


def test_a_setup_that_raises_is_an_error_with_nothing_sent_and_teardown_still_runs(tmp_path: Path) -> None:
    data = go(tmp_path, "    setup: bot.py:broken\n    teardown: bot.py:undo\n", SEEDED)
    record = data["results"][0]
    assert record["status"] == "error"
    assert record["error"] == ("setup: bot.py:broken raised RuntimeError: the CRM is down (nothing was sent)")
    assert [e["what"] for e in log(tmp_path)] == ["teardown"]  # no turn reached the bot
    assert record["teardown"]["ok"] is True


def test_state_and_setup_enter_the_cache_key_and_a_cached_conversation_runs_no_setup(tmp_path: Path) -> None:
    go(tmp_path, "    setup: bot.py:setup\n", SEEDED, cache=True)
    again = go(tmp_path, "    setup: bot.py:setup\n", SEEDED, cache=True, run_dir="again")
    assert [e["what"] for e in log(tmp_path)] == ["setup", "turn", "turn"]  # the replay ran neither
    assert all(m.get("cached") for m in again["results"][0]["transcript"] if m["role"] == "assistant")
    other = go(tmp_path, "    setup: bot.py:setup\n", SEEDED.replace("北京", "上海"), cache=True, run_dir="other")
    assert [m["content"] for m in other["results"][0]["transcript"] if m["role"] == "assistant"] == \
        ["好的（上海）", "好的（上海）"]  # another state is another key
    go(tmp_path, "", SEEDED, cache=True, run_dir="no-setup")  # without the setup: another key too
    assert [e["what"] for e in log(tmp_path)][-2:] == ["turn", "turn"] and len(log(tmp_path)) == 8


def test_a_tests_tool_results_are_merged_over_its_providers(tmp_path: Path) -> None:
    script = AgentScript({"有现车吗？": [[("lookup_stock", {"model": "瑶光"}), ("lookup_price", {"model": "瑶光"})]]})
    with OpenAIServer(script) as server:
        path = tmp_path / "s.yaml"
        path.write_text(f"""\
providers:
  - id: agent
    model: openai/test-model
    api_base: {server.base}
    api_key: sk-test
    tools:
      - {{type: function, function: {{name: lookup_stock, parameters: {{type: object}}}}}}
      - {{type: function, function: {{name: lookup_price, parameters: {{type: object}}}}}}
    tool_results: {{lookup_stock: 无货, lookup_price: 20万}}
tests:
  - id: stubbed
    tool_results: {{lookup_stock: {{in_stock: true}}}}
    conversation: [{{user: 有现车吗？}}]
  - id: plain
    conversation: [{{user: 有现车吗？}}]
""", encoding="utf-8")
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=True,
                                              cache_dir=tmp_path / "cache")).data
    by_id = {r["test_id"]: r for r in data["results"]}
    assert by_id["stubbed"]["transcript"][-1]["content"] == 'done: {"in_stock": true} | 20万'
    assert by_id["plain"]["transcript"][-1]["content"] == "done: 无货 | 20万"


def test_a_tests_tool_results_naming_no_declared_tool_is_a_validation_error(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("""\
providers:
  - id: agent
    model: openai/test-model
    tools: [{type: function, function: {name: lookup_stock}}]
tests:
  - id: t
    tool_results: {lookup_stok: 有货}
    conversation: [{user: 有现车吗？}]
""", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False))
    assert any("tests[0].tool_results.lookup_stok: tool_results for 'lookup_stok', which is not in provider "
               "'agent' `tools` (did you mean 'lookup_stock'?)" in str(p) for p in err.value.problems), \
        [str(p) for p in err.value.problems]
