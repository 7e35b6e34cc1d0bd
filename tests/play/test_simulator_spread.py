"""Comparing two simulators (docs/en/agents.md#comparing-two-simulators): every simulated test played with
each simulator of `simulators:` (or `run --simulator A,B`), against the loopback OpenAI-compatible server
playing two simulators that behave differently; the spread checked against the rates counted by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.reporters.html import render_html
from evalspec.reporters.markdown import render_markdown
from tests import ROOT
from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body

RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))
# the bot refuses a refund and welcomes a visit; the checks fail on a refusal
BOT = """\
def respond(messages, context):
    return "抱歉，不行。" if "退款" in messages[-1]["content"] else "好的，周六见。"
"""


def two_simulators(request: dict[str, Any], n: int) -> Reply:
    """`calm` always asks for a visit; `pushy` asks for a refund when its persona is in a hurry (急)."""
    system = str(request["messages"][0]["content"])
    pushy = str(request["model"]).endswith("pushy") and "急" in system
    return Reply(body=chat_body(json.dumps({"message": "我要退款" if pushy else "我想周六看车"}, ensure_ascii=False)))


@pytest.fixture(scope="module")
def server() -> Any:
    with OpenAIServer(two_simulators) as s:
        yield s


TESTS = """\
tests:
  - id: hurry
    simulate: {persona: 性子急的顾客, goal: 约看车, max_turns: 1}
    assert: [{not-contains: 不行}]
  - id: rush
    simulate: {persona: 着急的顾客, goal: 约看车, max_turns: 1}
    assert: [{not-contains: 不行}]
  - id: calm
    simulate: {persona: 平和的顾客, goal: 约看车, max_turns: 1}
    assert: [{not-contains: 不行}]
  - id: scripted
    conversation: [{user: 你好}]
    assert: [{not-contains: 不行}]
"""


def suite(tmp_path: Path, head: str, tests: str = TESTS) -> Path:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text('providers: [{id: bot, python: "bot.py:respond"}]\n' + head + tests, encoding="utf-8")
    return path


def listed(server: OpenAIServer) -> str:
    return (f'simulators:\n  - {{model: openai/calm, api_base: "{server.base}", api_key: x, id: calm}}\n'
            f'  - {{model: openai/pushy, api_base: "{server.base}", api_key: x}}\n')


def statuses(data: dict[str, Any]) -> dict[str, tuple[str | None, str]]:
    return {v["test_id"]: (v.get("simulator"), v["status"]) for v in data["verdicts"]}


def test_every_simulated_test_is_played_by_each_simulator_and_the_spread_is_their_pass_rates(
        tmp_path: Path, server: OpenAIServer) -> None:
    data = run([suite(tmp_path, listed(server))], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    jsonschema.validate(data, RUN_SCHEMA)
    assert statuses(data) == {
        "hurry[simulator=calm]": ("calm", "passed"), "hurry[simulator=openai/pushy]": ("openai/pushy", "failed"),
        "rush[simulator=calm]": ("calm", "passed"), "rush[simulator=openai/pushy]": ("openai/pushy", "failed"),
        "calm[simulator=calm]": ("calm", "passed"), "calm[simulator=openai/pushy]": ("openai/pushy", "passed"),
        "scripted": (None, "passed"),  # a scripted test is played once, by nobody's simulator
    }
    # by hand: calm passes 3 of 3, pushy 1 of 3
    assert data["summary"]["simulator_spread"] == {"rates": {"calm": 1.0, "openai/pushy": 0.333333},
                                                   "max_difference": 0.666667}
    records = {r["test_id"]: r for r in data["results"]}
    assert records["hurry[simulator=openai/pushy]"]["simulator"] == "openai/pushy"
    assert len({r["key"] for r in data["results"]}) == len(data["results"]) == 7  # the journal's keys differ
    assert [m["content"] for m in records["hurry[simulator=openai/pushy]"]["transcript"]
            if m["role"] == "user"] == ["我要退款"]
    assert [c["model"] for c in server.chats()].count("pushy") == 3


def test_the_reports_show_the_simulators_side_by_side(tmp_path: Path, server: OpenAIServer) -> None:
    path = suite(tmp_path, listed(server))
    code, out = invoke("run", str(path), "-o", str(tmp_path / "run.json"), "--no-cache", "--lang", "en")
    assert code == 1
    assert "simulator calm: pass rate 100% (3/3)" in out
    assert "simulator openai/pushy: pass rate 33% (1/3)" in out
    assert "largest difference between simulators: 67%" in out
    data = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    md = render_markdown(data, lang="zh")
    assert "### 模拟用户对比" in md and "| calm | 100% | 3/3 |" in md and "| openai/pushy | 33% | 1/3 |" in md
    assert "模拟用户之间的最大差距：67%" in md
    html = render_html(data, lang="en")
    assert "<section id='simulator-spread'>" in html and "largest difference between simulators: 67%" in html


def test_run_simulator_replaces_the_suites_simulator_with_each_model(tmp_path: Path, server: OpenAIServer) -> None:
    head = f'simulator: {{model: openai/unused, api_base: "{server.base}", api_key: x}}\n'
    path = suite(tmp_path, head)
    code, _ = invoke("run", str(path), "-o", str(tmp_path / "run.json"), "--no-cache", "-q",
                     "--simulator", "openai/calm, openai/pushy")
    assert code == 1
    data = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert data["summary"]["simulator_spread"] == {"rates": {"openai/calm": 1.0, "openai/pushy": 0.333333},
                                                   "max_difference": 0.666667}
    assert "unused" not in {c["model"] for c in server.chats()}  # each played with the suite's api_base


def test_run_simulator_picks_listed_simulators_by_id(tmp_path: Path, server: OpenAIServer) -> None:
    code, _ = invoke("run", str(suite(tmp_path, listed(server))), "-o", str(tmp_path / "run.json"), "--no-cache",
                     "-q", "--simulator", "calm")
    assert code == 0
    data = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert data["summary"]["simulator_spread"] == {"rates": {"calm": 1.0}, "max_difference": 0.0}
    assert len(data["verdicts"]) == 4


def test_a_test_with_its_own_simulator_model_is_played_once(tmp_path: Path, server: OpenAIServer) -> None:
    own = f"""\
tests:
  - id: pinned
    simulate: {{persona: 着急的顾客, goal: 约看车, max_turns: 1,
               model: {{model: openai/pushy, api_base: "{server.base}", api_key: x}}}}
    assert: [{{not-contains: 不行}}]
"""
    data = run([suite(tmp_path, listed(server), own)],
               options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert statuses(data) == {"pinned": (None, "failed")}
    assert "simulator_spread" not in data["summary"]


def test_the_spread_is_the_same_from_the_cache_and_a_resumed_run(tmp_path: Path, server: OpenAIServer) -> None:
    """Distinct keys per simulator: a second run answered from the cache, and a run resumed from its
    journal, give each simulator its own conversations back (merged keys would give one both)."""
    path = suite(tmp_path, listed(server))
    first = run([path], options=RunOptions(run_dir=tmp_path / "a", cache_dir=tmp_path / "cache")).data
    server.reset()
    again = run([path], options=RunOptions(run_dir=tmp_path / "b", cache_dir=tmp_path / "cache")).data
    assert server.chats() == []  # every call answered from the cache
    resumed = run([path], options=RunOptions(run_dir=tmp_path / "a", resume=True, use_cache=False)).data
    for data in (again, resumed):
        assert data["summary"]["simulator_spread"] == first["summary"]["simulator_spread"]
        assert statuses(data) == statuses(first)


def test_simulators_and_simulator_together_or_twice_are_config_errors(tmp_path: Path, server: OpenAIServer) -> None:
    head = listed(server) + f'  - {{model: openai/pushy, api_base: "{server.base}", api_key: x}}\n' \
        + "simulator: openai/x\n"
    code, out = invoke("validate", str(suite(tmp_path, head)))
    assert code == 2
    assert "s.yaml:2: simulators: give 'simulator:' or 'simulators:', not both" in out
    assert "simulators[2]: simulator 'openai/pushy' is listed twice: give one an 'id'" in out
    code, out = invoke("run", str(suite(tmp_path, listed(server))), "--simulator", "a,,b")
    assert code == 2 and "--simulator" in out


def test_rerun_replays_each_failure_with_the_simulator_that_played_it(tmp_path: Path, server: OpenAIServer) -> None:
    head = f'simulator: {{model: openai/unused, api_base: "{server.base}", api_key: x}}\n'
    path = suite(tmp_path, head)
    invoke("run", str(path), "-o", str(tmp_path / "run.json"), "--no-cache", "-q",
           "--simulator", "openai/calm,openai/pushy")
    server.reset()
    code, out = invoke("rerun", str(tmp_path / "run.json"), "--failed", "--times", "1")
    assert code == 1, out  # both failures reproduce: the replays are the pushy simulator's again
    assert [c["model"] for c in server.chats()] == ["pushy", "pushy"]
