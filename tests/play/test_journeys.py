"""Simulated journeys you can trust (docs/en/agents.md): simulator faults, `instructions:`, milestones and
checkpoints, each played against the loopback OpenAI-compatible server scripting the simulator's answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.reporters.html import render_html
from tests import ROOT
from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body

RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))
BOT_REPLY = "您好，瑶光售价15.8万，支持分期，首付3万，月供2800元。"
BOT = f"""\
def respond(messages, context):
    return {BOT_REPLY!r}
"""
PERSONA = "你是一个想买二手瑶光的年轻人，预算十五万左右，非常关心分期付款和首付的具体金额，说话简短直接。"


def scripted(lines: list[str], verdict: Any = True) -> Any:
    """The simulator says `lines` in order (as JSON messages; a line starting with `{` or `###` as is); the
    judge answers `verdict` (a bool, or a function of the prompt)."""

    asked = [0]

    def serve(request: dict[str, Any], n: int) -> Reply:
        system = str(request["messages"][0]["content"])
        if "role-playing" in system:
            line, asked[0] = lines[min(asked[0], len(lines) - 1)], asked[0] + 1
            raw = line if line.startswith(("{", "###")) else json.dumps({"message": line}, ensure_ascii=False)
            return Reply(body=chat_body(raw))
        prompt = str(request["messages"])
        ok = verdict(prompt) if callable(verdict) else verdict
        return Reply(body=chat_body(json.dumps({"reason": "判断", "pass": ok}, ensure_ascii=False)))

    return serve


def play(tmp_path: Path, server: OpenAIServer, simulate: str, asserts: str = "      - turn-count: {min: 1}",
         run_dir: str = "run", bot: str = BOT) -> dict[str, Any]:
    (tmp_path / "bot.py").write_text(bot, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: "bot.py:respond"}}]
simulator: {{model: openai/sim, api_base: "{server.base}"}}
judge: {{model: openai/judge, api_base: "{server.base}"}}
tests:
  - id: buyer
    simulate:
{simulate}
    assert:
{asserts}
""", encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / run_dir, use_cache=False)).data


def persona(extra: str = "") -> str:
    return f"      persona: {PERSONA}\n      goal: 问清分期\n      opening: 你好\n{extra}"


def sent(record: dict[str, Any]) -> list[str]:
    return [m["content"] for m in record["transcript"] if m["role"] == "user" and not m.get("not_sent")]


FAULTS = {
    "empty": (["能分期吗？", ""], "empty message"),
    "empty json": (["能分期吗？", '{"message": ""}'], "empty message"),
    "repeated": (["能分期吗？", "  能分期吗？ "], "repeated its previous message"),
    "stop too early": (["能分期吗？", "那月供多少？###STOP###"], "asked something and stopped"),
    "as the assistant": (["能分期吗？", "助手：您好，支持分期。"], "wrote as the assistant"),
    "as the assistant (en)": (["能分期吗？", "Assistant: sure, financing is available."], "wrote as the assistant"),
    "the assistant's reply": (["能分期吗？", BOT_REPLY], "repeated the assistant's reply"),
    "own instructions": (["能分期吗？", "我" + PERSONA[2:40]], "copied its own instructions"),
    "too long": (["能分期吗？", "我想问" * 201], "more than max_chars (600)"),
}


@pytest.mark.parametrize("what", FAULTS)
def test_a_simulator_fault_is_an_error_attributed_to_the_simulator(tmp_path: Path, what: str) -> None:
    lines, reason = FAULTS[what]
    with OpenAIServer(scripted(lines)) as server:
        data = play(tmp_path, server, persona("      max_turns: 4\n      stop_when: [{user_says: '###STOP###'}]"))
    record = data["results"][0]
    assert record["status"] == "error" and record["stop_reason"] == "error", record["error"]
    assert record["attribution"] == "simulator_fault" and record["attribution_by"] == "run"
    assert "simulator fault at turn 3" in record["error"] and reason in record["error"]
    assert sent(record) == ["你好", "能分期吗？"]  # the faulty message is recorded, never sent
    assert record["transcript"][-1]["not_sent"] is True


def test_fixed_turns_a_clean_stop_and_good_messages_are_no_fault(tmp_path: Path) -> None:
    lines = ["能分期吗？", "首付多少？", "好的谢谢 ###STOP###"]
    with OpenAIServer(scripted(lines)) as server:
        simulate = (f"      persona: {PERSONA}\n      goal: 问清分期\n      opening: 能分期吗？\n"
                    "      max_turns: 5\n      stop_when: [{user_says: '###STOP###'}]")
        data = play(tmp_path, server, simulate)
    record = data["results"][0]
    assert record["status"] == "passed" and record["stop_reason"] == "user_says", record["error"]
    assert "attribution" not in record
    assert sent(record) == ["能分期吗？", "能分期吗？", "首付多少？"]  # the opening repeated is not its own


def test_max_chars_bounds_a_simulator_message(tmp_path: Path) -> None:
    with OpenAIServer(scripted(["请问这台车能分期吗"])) as server:
        data = play(tmp_path, server, persona("      max_turns: 3\n      max_chars: 5"))
    record = data["results"][0]
    assert record["attribution"] == "simulator_fault" and "more than max_chars (5)" in record["error"]


def test_rerun_replays_a_simulator_fault_and_keeps_it_apart_from_the_bots_failures(in_tmp: Path) -> None:
    with OpenAIServer(scripted(["能分期吗？", ""])) as server:
        play(in_tmp, server, persona("      max_turns: 4"))  # writes s.yaml and bot.py
        code, out = invoke("run", "s.yaml", "-o", "run.json", "--no-cache", "--lang", "en")
        assert code == 3, out
        assert "simulator fault" in out  # named in the report apart from the bot's failures
        record = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))["results"][0]
        jsonschema.validate(json.loads((in_tmp / "run.json").read_text(encoding="utf-8")), RUN_SCHEMA)
        assert record["attribution"] == "simulator_fault"
        before = len([c for c in server.chats() if "role-playing" in str(c["messages"][0]["content"])])
        invoke("rerun", "run.json", "--failed", "--times", "2")
        replayed = len([c for c in server.chats() if "role-playing" in str(c["messages"][0]["content"])])
    assert replayed > before  # replayed, live
    rerun = json.loads((in_tmp / "rerun.json").read_text(encoding="utf-8"))["results"][0]
    assert rerun["label"] == "error" and rerun["attributions"] == ["simulator_fault", "simulator_fault"]
    record = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))["results"][0]
    assert (record["attribution"], record["attribution_by"]) == ("simulator_fault", "rerun")


def test_instructions_replace_persona_and_goal(tmp_path: Path) -> None:
    instructions = "你想买一台二手瑶光，预算15万，关心分期；问清楚后约周六到店。"
    with OpenAIServer(scripted(["能分期吗？", "###STOP###"])) as server:
        data = play(tmp_path, server, f"      instructions: {instructions}\n      max_turns: 3\n"
                                      "      stop_when: [{user_says: '###STOP###'}, {goal_met: true}]",
                    "      - trajectory:goal-success: 用户问清了分期")
        system = next(str(c["messages"][0]["content"]) for c in server.chats()
                      if "role-playing" in str(c["messages"][0]["content"]))
        goal_asks = [str(c["messages"]) for c in server.chats() if "goal been achieved" in str(c["messages"])]
    record = data["results"][0]
    assert record["status"] == "passed", record["error"]
    assert f"Instructions: {instructions}" in system and "Persona:" not in system and "Your goal:" not in system
    assert goal_asks and instructions in goal_asks[0]  # goal_met asks about the instructions


def test_a_simulated_user_without_persona_goal_or_instructions_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("providers: [{id: bot, python: 'bot.py:respond'}]\n"
                                     "simulator: openai/sim\n"
                                     "tests: [{id: t, simulate: {persona: 买车的人, max_turns: 2}}]\n", encoding="utf-8")
    code, out = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 2 and "needs 'goal' (or 'instructions:'" in out


JOURNEY = """\
      instructions: 你想买一台二手瑶光，预算15万，关心分期；问清楚后约周六到店。
      milestones:
        - goal: 问清车况和价格
          done_when: {{assistant_matches: "\\\\d+(\\\\.\\\\d+)?万"}}
          max_turns: 3
        - goal: 谈分期
          done_when: {{judge: 助手说明了首付和月供}}
          max_turns: 3
        - user: 好的，那我周六上午过去看看
{more}      max_turns: 10
"""
ASKS = ["这台瑶光车况怎么样，多少钱？", "能分期吗？", "首付最少多少？", "月供呢？", "利率多少？", "还有别的方案吗？"]


def milestone_judge(met: bool) -> Any:
    return lambda prompt: met if "助手说明了首付和月供" in prompt else True


def test_milestones_are_played_in_order_and_recorded(tmp_path: Path) -> None:
    with OpenAIServer(scripted(ASKS, milestone_judge(True))) as server:
        data = play(tmp_path, server, JOURNEY.format(more=""), "      - turn-count: {max: 10}")
        systems = [str(c["messages"][0]["content"]) for c in server.chats()
                   if "role-playing" in str(c["messages"][0]["content"])]
    record = data["results"][0]
    assert record["status"] == "passed" and record["stop_reason"] == "milestones_met", record["error"]
    assert sent(record) == [ASKS[0], ASKS[1], "好的，那我周六上午过去看看"]
    assert record["milestones"] == [{"goal": "问清车况和价格", "status": "met", "turn": 1},
                                    {"goal": "谈分期", "status": "met", "turn": 2}]
    assert "Your goal: 问清车况和价格" in systems[0] and "谈分期" not in systems[0]  # the current goal only
    assert "Your goal: 谈分期" in systems[1]
    assert any(a["type"] == "trajectory:milestones" and a["pass"] for a in record["assertions"])  # implied


def test_a_missed_milestone_fails_the_test_and_says_which_and_where(tmp_path: Path) -> None:
    more = "        - goal: 约好到店\n          done_when: {assistant_matches: 周六}\n          max_turns: 2\n"
    with OpenAIServer(scripted(ASKS, milestone_judge(False))) as server:
        data = play(tmp_path, server, JOURNEY.format(more=more), "      - trajectory:milestones: true\n        severity: critical")
    record = data["results"][0]
    assert record["status"] == "failed" and record["stop_reason"] == "milestone_missed", record["error"]
    assert record["milestones"] == [{"goal": "问清车况和价格", "status": "met", "turn": 1},
                                    {"goal": "谈分期", "status": "missed", "turn": 4},
                                    {"goal": "约好到店", "status": "not_reached", "turn": None}]
    check = next(a for a in record["assertions"] if a["type"] == "trajectory:milestones")
    assert check["pass"] is False and check["severity"] == "critical"
    assert "milestone 2 (谈分期) not met within 3 turns" in check["reason"]
    assert [e["turn"] for e in check["evidence"]] == [2, 3, 4]
    assert len(sent(record)) == 4  # the fixed turn after the missed milestone is never sent
    assert data["gate"]["exit_code"] == 1
    html = render_html(data, lang="en")
    assert "milestones: 1 问清车况和价格: met at turn 1 · 2 谈分期: missed (turn 4) · 3 约好到店: not reached" in html
    assert "里程碑：" not in html and "里程碑: 1 问清车况和价格: 第 1 轮达成" in render_html(data, lang="zh")


def test_checkpoints_ask_the_judge_at_their_turns_and_fail_at_that_turn(tmp_path: Path) -> None:
    def judge(prompt: str) -> bool:
        return "没有在用户表达购买意向前邀约" not in prompt  # the after_turn criterion fails; the rest hold

    simulate = (f"      persona: {PERSONA}\n      goal: 问清分期\n      max_turns: 4\n      min_turns: 2\n"
                "      stop_when: [{goal_met: true}]\n"
                "      checkpoints:\n"
                "        - after_turn: 2\n          criteria: [助手没有在用户表达购买意向前邀约]\n"
                "        - every: 1\n          criteria: [助手语气礼貌]\n          min_turns: 3\n")
    lines = ["能分期吗？", "首付多少？", "月供多少？", "利率呢？"]
    with OpenAIServer(scripted(lines, lambda p: judge(p) and "goal been achieved" not in p)) as server:
        data = play(tmp_path, server, simulate)
        asked = [str(c["messages"]) for c in server.chats() if "role-playing" not in str(c["messages"][0]["content"])]
    record = data["results"][0]
    assert record["status"] == "failed" and record["stop_reason"] == "max_turns", record["error"]
    by_turn = {m["turn"]: [c["criterion"] for c in m.get("checkpoints", [])]
               for m in record["transcript"] if m["role"] == "assistant"}
    assert by_turn == {1: [], 2: ["助手没有在用户表达购买意向前邀约"], 3: ["助手语气礼貌"], 4: ["助手语气礼貌"]}
    check = next(a for a in record["assertions"] if a["type"] == "trajectory:checkpoints")
    assert check["pass"] is False and "turn 2: checkpoint '助手没有在用户表达购买意向前邀约' failed: 判断" in check["reason"]
    assert [e["turn"] for e in check["evidence"]] == [2]
    goal_asks = [a for a in asked if "goal been achieved" in a]
    assert len(goal_asks) == 3  # goal_met is asked after turns 2, 3, 4: never before min_turns


def test_a_milestone_done_when_a_state_check_holds(tmp_path: Path) -> None:
    simulate = ("      persona: 买车的人\n      milestones:\n"
                "        - goal: 把预约登记下来\n          done_when: {state: {path: slots.booked, equals: true}}\n"
                "          max_turns: 3\n      max_turns: 5")
    bot = ("def respond(messages, context):\n"
           "    n = sum(1 for m in messages if m['role'] == 'user')\n"
           "    return {'content': f'第{n}次回复', 'state': {'slots': {'booked': n >= 2}}}\n")
    with OpenAIServer(scripted(ASKS)) as server:
        data = play(tmp_path, server, simulate, bot=bot)
    record = data["results"][0]
    assert record["status"] == "passed" and record["stop_reason"] == "milestones_met", record["error"]
    assert record["milestones"] == [{"goal": "把预约登记下来", "status": "met", "turn": 2}]


@pytest.mark.parametrize(("simulate", "message"), [
    ("{persona: p, max_turns: 2, milestones: [{goal: 问价, done_when: {state: {path: 'a[', equals: 1}}, max_turns: 1}]}",
     "done_when.state: 'state':"),
])
def test_milestones_that_cannot_be_played_are_refused(tmp_path: Path, simulate: str, message: str) -> None:
    (tmp_path / "s.yaml").write_text("providers: [{id: bot, python: 'bot.py:respond'}]\nsimulator: openai/sim\n"
                                     f"tests: [{{id: t, simulate: {simulate}}}]\n", encoding="utf-8")
    code, out = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 2 and message in out, out
