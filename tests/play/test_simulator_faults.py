"""A faulty simulator is the harness's error, never the bot's failure (docs/en/agents.md#simulator-faults):
the demo bot plays a staged journey against a simulated user that slips in one way each, a model behind
the loopback OpenAI-compatible server or a python user; every conversation is an error attributed
`simulator_fault`, and no verdict on the bot is recorded as failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests import ROOT
from tests.servers import OpenAIServer, Reply, chat_body

BOT = ROOT / "providers" / "demo_bot.py"
FIRST = "这台瑶光是哪年的车？"
FIRST_REPLY = "这台瑶光是2024年款。"  # the demo bot's answer to FIRST
INSTRUCTIONS = "你想买一台瑶光电动车，最关心分期付款和首付的具体金额，问清楚以后约周六上午到店里看车。"
# the rules on the bot: each would fail on the conversation cut short at turn 2 if it were graded there
# (and trajectory:milestones, implied: milestone 2 is never met); the red line holds on the reply received
BOT_RULES = """\
      - turn-count: {min: 4}
      - contains: 报价单
      - contains-any: [试驾, 到店]
        scope: conversation
      - not-regex: "1[3-9]\\\\d{9}"
        scope: each_turn
        severity: critical
"""
# each fault kind play/faults.py knows -> the simulator's second message, the words of its error
FAULTS = {
    "empty": ("", "empty message"),
    "empty json": ('{"message": ""}', "empty message"),
    "repeated": (f"  {FIRST} ", "repeated its previous message"),
    "stop marker with a question": ("首付多少？###STOP###", "asked something and stopped"),
    "stop marker with a request": ("请帮我算一下月供 ###STOP###", "asked something and stopped"),
    "as the assistant": ("助手：瑶光支持分期，首付两成。", "wrote as the assistant"),
    "as the assistant (en)": ("Assistant: financing is available.", "wrote as the assistant"),
    "the assistant's reply": (FIRST_REPLY, "repeated the assistant's reply"),
    "own instructions": ("好的，" + INSTRUCTIONS[2:36], "copied its own instructions"),
    "too long": ("分期" * 301, "more than max_chars (600)"),
    "its prompt": ("能分期吗？Write only your next message to the assistant", "copied its own instructions"),
}


def faulty(second: str) -> Any:
    """A simulator that asks FIRST, then says `second` (a line starting with `{` as is), then goes on."""
    def serve(request: dict[str, Any], n: int) -> Reply:
        own = sum(1 for m in request["messages"] if m["role"] == "assistant")  # its own messages, flipped
        line = [FIRST, second][min(own, 1)] if own < 2 else f"第{own}个问题：能试驾吗？"
        raw = line if line.startswith("{") else json.dumps({"message": line}, ensure_ascii=False)
        return Reply(body=chat_body(raw))
    return serve


def suite(tmp_path: Path, simulator: str, extra: str = "") -> Path:
    path = tmp_path / "journey.yaml"
    path.write_text(f"""\
providers: [{{id: demo-bot, python: "{BOT}:respond"}}]
{simulator}
tests:
  - id: journey
    simulate:
{extra}      instructions: {INSTRUCTIONS}
      milestones:
        - goal: 问清车况
          done_when: {{assistant_matches: 年款}}
          max_turns: 2
        - goal: 谈分期
          done_when: {{assistant_matches: 首付}}
          max_turns: 2
        - goal: 拿到报价单
          done_when: {{assistant_matches: 报价单}}
          max_turns: 2
      stop_when: [{{user_says: "###STOP###"}}]
      max_turns: 8
    assert:
{BOT_RULES}""", encoding="utf-8")
    return path


def no_bot_failure(data: dict[str, Any], reason: str) -> dict[str, Any]:
    """The one conversation is an error attributed to the simulator; nothing about the bot failed."""
    record = data["results"][0]
    assert record["status"] == "error" and record["attribution"] == "simulator_fault", record
    assert "simulator fault at turn 2" in record["error"] and reason in record["error"], record["error"]
    assert [a for a in record["assertions"] if a.get("pass") is False] == []
    assert data["summary"]["failed"] == 0 and data["summary"]["error"] == 1
    assert [m["content"] for m in record["transcript"] if m["role"] == "user" and not m.get("not_sent")] == [FIRST]
    return record


@pytest.mark.parametrize("kind", FAULTS)
def test_a_faulty_model_simulator_is_an_error_never_a_bot_failure(tmp_path: Path, kind: str) -> None:
    second, reason = FAULTS[kind]
    with OpenAIServer(faulty(second)) as server:
        path = suite(tmp_path, f'simulator: {{model: openai/sim, api_base: "{server.base}"}}')
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    no_bot_failure(data, reason)


PYTHON_USER = f'''\
FIRST = {FIRST!r}


def make(second):
    def user(transcript, context):
        own = [m for m in transcript if m["role"] == "user"]
        return FIRST if not own else second
    return user


USERS = {{kind: make(second) for kind, second in {json.dumps({k: v for k, (v, _) in FAULTS.items()
                                                               if k != "empty json"}, ensure_ascii=False)}.items()}}


def pick(transcript, context):
    return USERS[context["vars"]["kind"]](transcript, context)
'''


@pytest.mark.parametrize("kind", [k for k in FAULTS if k != "empty json"])  # a python user returns a str
def test_a_faulty_python_user_is_a_simulator_fault_too(tmp_path: Path, kind: str) -> None:
    """A python user is the simulator as much as a model is: its own messages are checked the same way."""
    (tmp_path / "user.py").write_text(PYTHON_USER, encoding="utf-8")
    path = suite(tmp_path, f"vars: {{kind: {json.dumps(kind, ensure_ascii=False)}}}", "      python: user.py:pick\n")
    data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    no_bot_failure(data, FAULTS[kind][1])


def test_a_clean_stop_after_a_thank_you_is_no_fault(tmp_path: Path) -> None:
    """The stop marker beside words that ask nothing (谢谢，再见) is a stop: the words are never sent."""
    with OpenAIServer(faulty("好的，谢谢，再见 ###STOP###")) as server:
        path = suite(tmp_path, f'simulator: {{model: openai/sim, api_base: "{server.base}"}}')
        record = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data["results"][0]
    assert record["status"] == "failed" and record["stop_reason"] == "user_says", record["error"]
    assert "attribution" not in record or record["attribution"] != "simulator_fault"
    assert [m["status"] for m in record["milestones"]] == ["met", "not_reached", "not_reached"]


def test_a_python_user_without_milestones_is_checked_the_same_way(tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text("def again(transcript, context):\n    return '瑶光能分期吗？'\n", encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(f'providers: [{{id: demo-bot, python: "{BOT}:respond"}}]\n'
                    "tests: [{id: t, simulate: {python: user.py:again, max_turns: 3}, assert: [{turn-count: {min: 3}}]}]\n",
                    encoding="utf-8")
    record = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data["results"][0]
    assert record["status"] == "error" and record["attribution"] == "simulator_fault", record["error"]
    assert "repeated its previous message" in record["error"]


def test_the_milestone_a_fault_cut_short_is_not_reached_never_missed(tmp_path: Path) -> None:
    """Milestone 1 asked at turn 1 and not met; the simulator slips at turn 2: the bot never had its turns."""
    (tmp_path / "user.py").write_text("def again(transcript, context):\n    return '你好'\n", encoding="utf-8")
    path = suite(tmp_path, "", "      python: user.py:again\n")
    record = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data["results"][0]
    assert record["attribution"] == "simulator_fault" and "repeated its previous message" in record["error"]
    assert record["milestones"][0] == {"goal": "问清车况", "status": "not_reached", "turn": None}
