"""`rasa:` providers against a loopback Rasa server speaking the REST channel and the tracker API (SPEC §24)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from evalspec.providers.rasa_provider import STATE_KEYS, tracker_state
from tests.servers import RasaServer


def go(tmp_path: Path, text: str, cache: bool = False, run_dir: str = "run") -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / run_dir, use_cache=cache,
                                          cache_dir=tmp_path / "cache")).data


def suite(server: RasaServer, tests: str, token: str | None = None) -> str:
    rasa = f"{{url: {server.url}" + (f", token: {token}" if token else "") + "}"
    return f"providers:\n  - id: rasa-bot\n    rasa: {rasa}\ntests:\n{tests}"


BOOKING = """\
  - id: book
    conversation:
      - user: 我想试驾瑶光
        metadata: {channel: app, user_id: u-7}
      - user: '/choose_day{"day": "周六"}'
    assert:
      - contains: 预约号
"""


def replies(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in record["transcript"] if m["role"] == "assistant"]


def test_a_booking_turn_gives_the_reply_its_buttons_and_the_tracker_state(tmp_path: Path) -> None:
    with RasaServer() as server:
        data = go(tmp_path, suite(server, BOOKING))
        sent = [r for r, p in zip(server.requests, server.paths) if p.startswith("/webhooks/rest/webhook")]
        record = data["results"][0]
        assert record["status"] == "passed", record.get("error")
        first, second = replies(record)
        assert first["content"] == "您想哪天来试驾？"
        assert first["parts"] == [{"text": "您想哪天来试驾？", "image": None, "custom": None, "buttons": [
            {"title": "周六", "payload": '/choose_day{"day": "周六"}'},
            {"title": "周日", "payload": '/choose_day{"day": "周日"}'}]}]
        assert first["state"] == {
            "slots": {"car_model": "瑶光", "day": None, "booking_id": None, "city": None},
            "slots_set": {"car_model": "瑶光"}, "intent": "book_test_drive",
            "entities": [{"entity": "car_model", "value": "瑶光"}],
            "actions": ["utter_ask_day", "action_listen"], "utterances": ["utter_ask_day"],
            "flows_started": ["book_test_drive"], "flows_completed": [], "flows_cancelled": [],
            "active_flow": "book_test_drive", "active_loop": None}
        # the second turn's state holds only its own events; the flow ended, so no flow is active
        state = second["state"]
        assert list(state) == list(STATE_KEYS)
        assert state["slots_set"] == {"day": "周六", "booking_id": "B-0001"} and state["intent"] == "choose_day"
        assert state["actions"] == ["action_book_test_drive", "utter_booked", "action_listen"]
        assert state["flows_started"] == [] and state["flows_completed"] == ["book_test_drive"]
        assert state["active_flow"] is None
        assert second["parts"][0]["image"] == "https://example.invalid/map.png"
        # the REST channel got the thread id as sender, the turn's metadata with its own message only
        assert sent[0]["message"] == "我想试驾瑶光" and sent[0]["metadata"] == {"channel": "app", "user_id": "u-7"}
        assert sent[1]["metadata"] == {} and sent[0]["sender"] == sent[1]["sender"]
        stored = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
        assert replies(stored["results"][0])[0]["state"] == first["state"]


def test_several_messages_in_one_answer_are_joined_and_kept_as_parts(tmp_path: Path) -> None:
    with RasaServer() as server:
        original = server.bot.turn

        def twice(sender: str, text: str, metadata: Any) -> list[dict[str, Any]]:
            return original(sender, text, metadata) + [{"recipient_id": sender, "text": "还有别的吗？"}]

        server.bot.turn = twice  # type: ignore[method-assign]
        data = go(tmp_path, suite(server, "  - id: t\n    conversation: [{user: 你好}]\n"))
    reply = replies(data["results"][0])[0]
    assert reply["content"] == "您好！有什么可以帮您？\n还有别的吗？"
    assert [p["text"] for p in reply["parts"]] == ["您好！有什么可以帮您？", "还有别的吗？"]
    assert reply["parts"][0]["custom"] == {"handoff": False} and reply["parts"][1]["buttons"] is None


def test_the_token_goes_as_a_query_parameter_and_a_wrong_one_is_an_error(tmp_path: Path) -> None:
    with RasaServer(token="s3cret") as server:
        data = go(tmp_path, suite(server, "  - id: t\n    conversation: [{user: 你好}]\n", token="s3cret"))
        assert data["results"][0]["status"] == "passed"
        assert all("token=s3cret" in p for p in server.paths)
        bad = go(tmp_path, suite(server, "  - id: t\n    conversation: [{user: 你好}]\n", token="nope"),
                 run_dir="bad")
    record = bad["results"][0]
    assert record["status"] == "error" and record["error"].startswith("turn 1: rasa-bot")
    assert "401" in record["error"]


def test_golden_assistant_history_is_refused_for_a_rasa_provider(tmp_path: Path) -> None:
    with RasaServer() as server, pytest.raises(ConfigError, match="'assistant:' history cannot be sent to "
                                                                   "stateful rasa provider 'rasa-bot'"):
        go(tmp_path, suite(server, "  - id: t\n    conversation: [{user: 你好}, {assistant: 好}, {user: 再见}]\n"))


def test_seeded_slots_are_sent_as_slot_events_before_turn_one(tmp_path: Path) -> None:
    with RasaServer() as server:
        data = go(tmp_path, suite(server, """\
  - id: seeded
    state: {slots: {city: 北京}}
    conversation: [{user: 我想试驾瑶光}, {user: 周六}]
    assert: [{contains: 北京店见}]
"""))
        assert data["results"][0]["status"] == "passed", data["results"][0].get("error")
        assert server.paths[0].endswith("/tracker/events") and server.requests[0] == [
            {"event": "slot", "name": "city", "value": "北京"}]
        assert server.paths[1] == "/webhooks/rest/webhook"
    state = replies(data["results"][0])[0]["state"]
    assert state["slots"]["city"] == "北京" and "city" not in state["slots_set"]  # set before the turn


def test_a_rasa_state_takes_only_slots(tmp_path: Path) -> None:
    with RasaServer() as server, pytest.raises(ConfigError) as err:
        go(tmp_path, suite(server, "  - id: t\n    state: {slots: {city: 北京}, active_flow: x}\n"
                                   "    conversation: [{user: 你好}]\n"))
    assert any("tests[0].state.active_flow: 'active_flow' cannot be seeded into rasa provider 'rasa-bot'" in str(p)
               for p in err.value.problems)


def test_a_conversation_replayed_from_the_cache_neither_seeds_nor_calls(tmp_path: Path) -> None:
    tests = "  - id: t\n    state: {slots: {city: 上海}}\n    conversation: [{user: 我想试驾瑶光}, {user: 周日}]\n"
    with RasaServer() as server:
        first = go(tmp_path, suite(server, tests), cache=True)
        calls = len(server.requests)
        again = go(tmp_path, suite(server, tests), cache=True, run_dir="again")
        assert len(server.requests) == calls  # nothing sent: not the seed, not a turn
    assert [m["state"] for m in replies(again["results"][0])] == [m["state"] for m in replies(first["results"][0])]
    assert all(m.get("cached") for m in replies(again["results"][0]))


def test_every_state_key_is_there_when_nothing_happened() -> None:
    assert tracker_state({}) == {"slots": {}, "slots_set": {}, "intent": None, "entities": [], "actions": [],
                                 "utterances": [], "flows_started": [], "flows_completed": [],
                                 "flows_cancelled": [], "active_flow": None, "active_loop": None}
    # a tracker that carries its stack is read from it; the topmost flow frame wins over other frames
    stack = [{"type": "flow", "flow_id": "outer"}, {"type": "flow", "flow_id": "inner"},
             {"type": "pattern_collect_information", "flow_id": "pattern_collect_information"}]
    assert tracker_state({"stack": stack})["active_flow"] == "inner"
