"""Simulated users: persona + goal, stop conditions, flipped roles, replay from the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions
from tests import ROOT
from tests.servers import OpenAIServer, Reply, chat_body

BOT = ROOT / "providers" / "demo_bot.py"
LINES = ["追风能分期吗？", "它的续航呢？", "好的，那我周六过去", "###STOP###"]


def simulator(request: dict[str, Any], n: int) -> Reply:
    system = request["messages"][0]["content"]
    if "role-playing" in system:
        said = sum(1 for m in request["messages"] if m["role"] == "assistant" and m["content"] in LINES)
        line = LINES[min(said, len(LINES) - 1)]  # the marker alone, as the prompt asks; messages as JSON
        return Reply(body=chat_body(line if line.startswith("###") else json.dumps({"message": line}, ensure_ascii=False)))
    return Reply(body=chat_body('{"pass": %s, "reason": "judge"}' % ("true" if "周六" in str(request) else "false")))


def go(tmp_path: Path, server: OpenAIServer, simulate: str, asserts: str = "", cache: bool = False) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers:
  - id: bot
    python: {BOT}:respond
simulator: {{model: openai/sim, api_base: "{server.base}"}}
judge: {{model: openai/judge, api_base: "{server.base}"}}
tests:
  - id: buyer
    simulate:
      persona: 一个想买车、关心分期的年轻人
      goal: 约好到店时间
{simulate}
    assert:
      - turn-count: {{min: 1, max: 6}}
{asserts}
""", encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=cache, cache_dir=tmp_path / "c")).data


def users(record: dict[str, Any]) -> list[str]:
    return [m["content"] for m in record["transcript"] if m["role"] == "user"]


def test_user_says_marker_is_recorded_not_sent(tmp_path: Path) -> None:
    with OpenAIServer(simulator) as server:
        data = go(tmp_path, server, "      opening: 你好\n      max_turns: 6\n      stop_when: [{user_says: '###STOP###'}]")
    record = data["results"][0]
    assert record["stop_reason"] == "user_says"
    assert users(record) == ["你好", *LINES]
    marker = record["transcript"][-1]
    assert marker["content"] == "###STOP###" and marker["turn"] is None and marker["not_sent"] is True
    assert record["assertions"][0]["pass"] is True and "4 user turns" in record["assertions"][0]["reason"]
    sim_request = server.chats()[-1]["messages"]
    assert "###STOP###" in sim_request[0]["content"] and "约好到店时间" in sim_request[0]["content"]
    assert sim_request[1] == {"role": "assistant", "content": "你好"}  # roles flipped for the simulator
    assert "turn-count" not in str(server.requests)  # never sees the assertions


def test_max_turns_counts_opening_and_fixed(tmp_path: Path) -> None:
    with OpenAIServer(simulator) as server:
        data = go(tmp_path, server, "      opening: 你好\n      fixed: [瑶光多少钱？]\n      max_turns: 3")
    record = data["results"][0]
    assert record["stop_reason"] == "max_turns" and users(record) == ["你好", "瑶光多少钱？", LINES[0]]


def test_assistant_matches_stops(tmp_path: Path) -> None:
    with OpenAIServer(simulator) as server:
        data = go(tmp_path, server, "      max_turns: 6\n      stop_when: [{assistant_matches: 已为您登记}]")
    record = data["results"][0]
    assert record["stop_reason"] == "assistant_matches" and users(record)[-1] == "好的，那我周六过去"


def test_goal_met_asks_the_judge_after_each_reply(tmp_path: Path) -> None:
    with OpenAIServer(simulator) as server:
        data = go(tmp_path, server, "      max_turns: 6\n      stop_when: [{goal_met: true}]",
                  "      - trajectory:goal-success: 用户约好了到店时间")
    record = data["results"][0]
    assert record["stop_reason"] == "goal_met" and len(users(record)) == 3
    assert record["status"] == "passed"
    judge_requests = [r for r in server.chats() if "role-playing" not in r["messages"][0]["content"]]
    assert len(judge_requests) == 4  # three goal_met checks and the assertion
    # judge figures count the simulated user's three messages too (SPEC §17)
    assert record["judge_calls"] == len(server.chats()) == 7


def test_rerun_with_cache_replays_the_same_transcript_without_calls(tmp_path: Path) -> None:
    with OpenAIServer(simulator) as server:
        sim = "      max_turns: 4\n      stop_when: [{user_says: '###STOP###'}]"
        first = go(tmp_path, server, sim, cache=True)
        calls = server.calls
        second = go(tmp_path, server, sim, cache=True)
    assert server.calls == calls
    assert users(first["results"][0]) == users(second["results"][0])
    assert second["summary"]["calls"] == 0


def test_simulator_failure_is_an_error(tmp_path: Path) -> None:
    with OpenAIServer(lambda r, n: Reply(400, {"error": {"message": "bad request"}})) as server:
        data = go(tmp_path, server, "      max_turns: 2")
    record = data["results"][0]
    assert record["status"] == "error" and record["stop_reason"] == "error" and "simulator" in record["error"]


def python_user(tmp_path: Path, body: str, asserts: str) -> dict[str, Any]:
    (tmp_path / "user.py").write_text(body, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
tests:
  - id: scripted
    simulate: {{python: "user.py:next_turn", max_turns: 4}}
    assert:
{asserts}
""", encoding="utf-8")
    data = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return dict(data["results"][0])


def test_a_python_users_stop_marker_ends_the_conversation_and_is_not_sent(tmp_path: Path) -> None:
    body = ("def next_turn(transcript, context):\n"
            "    return '追风能分期吗？' if context['turn'] == 1 else '###STOP###'\n")
    record = python_user(tmp_path, body, "      - turn-count: {max: 1}")
    assert record["stop_reason"] == "user_says" and record["status"] == "passed", record["error"]
    sent = [m for m in record["transcript"] if m["role"] == "user" and not m.get("not_sent")]
    assert [m["content"] for m in sent] == ["追风能分期吗？"]
    assert record["transcript"][-1]["content"] == "###STOP###" and record["transcript"][-1]["not_sent"] is True


def test_a_simulated_user_that_stops_at_once_is_an_error_not_a_pass(tmp_path: Path) -> None:
    checks = ("      - not-after: {pattern: 贷款, after: 1}\n      - at-most: {pattern: 贷款, count: 0}\n"
              "      - efficiency: {min: 0.8}\n      - turn-count: {max: 3}")
    for stop in ("None", "'###STOP###'"):
        record = python_user(tmp_path, f"def next_turn(transcript, context):\n    return {stop}\n", checks)
        assert record["status"] == "error" and record["stop_reason"] == "error", record
        assert "before the assistant replied" in record["error"]
        assert not any(a["pass"] for a in record["assertions"])


def test_a_model_simulator_answering_a_format_example_is_an_error_not_a_message(tmp_path: Path) -> None:
    answers = {"example": 'Answer as {"message": "<your next message>"}', "plain example": "<your next message>"}
    for what, answer in answers.items():
        with OpenAIServer(lambda request, n, answer=answer: Reply(body=chat_body(answer))) as server:
            (tmp_path / what).mkdir()
            data = go(tmp_path / what, server, "      max_turns: 3")
        record = data["results"][0]
        assert record["status"] == "error" and "simulator answer is" in record["error"] and "refusal" in record["error"]
        assert not [m for m in record["transcript"] if m["role"] == "user"]  # nothing was sent to the bot


def test_a_simulators_draft_before_its_message_is_not_sent(tmp_path: Path) -> None:
    answer = '<think>{"message": "draft"}</think>{"message": "追风能分期吗？"}'
    with OpenAIServer(lambda request, n: Reply(body=chat_body(answer))) as server:
        data = go(tmp_path, server, "      max_turns: 1")
    assert users(data["results"][0]) == ["追风能分期吗？"]
