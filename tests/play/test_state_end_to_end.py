"""The bot's own state end to end (SPEC §24): one suite of slot, flow, action and button checks, a button
pressed, a booking id captured into a later turn and a seeded slot — played against a loopback Rasa
server, an HTTP bot that returns its state and parts, and a python bot — each test with the verdict its
author meant."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.servers import LoopbackServer, RasaBot, RasaServer, Reply

TESTS = """\
tests:
  - id: book-and-confirm
    conversation:
      - user: 我想试驾瑶光
        assert:
          - state: "slots.car_model == '瑶光'"
          - state: {path: active_flow, equals: book_test_drive}
          - state: "contains(actions, 'utter_ask_day')"
          - buttons: [周六, 周日]
      - click: 周六
        capture: {booking: {state: slots.booking_id}}
        assert:
          - state: {path: flows_completed, equals: [book_test_drive]}
          - state: "contains(actions, 'action_book_test_drive')"
          - not-state: "active_flow"
      - user: 预约号 {{ booking }} 没错吧？
    assert:
      - {contains: "预约号 {{ booking }}", scope: conversation}   # the captured id renders in the test's checks
  - id: seeded-city
    state: {slots: {city: 北京}}
    conversation:
      - user: 我想试驾瑶光
      - click: 周日
        assert:
          - state: {path: slots.city, equals: 北京}
          - contains: 北京店见
  - id: wrong-slot
    conversation:
      - user: 我想试驾瑶光
      - click: 周六
        assert:
          - state: {path: slots.day, equals: 周日}
  - id: no-such-button
    conversation:
      - user: 你好
      - click: 周六
"""
MEANT = {"book-and-confirm": "passed", "seeded-city": "passed", "wrong-slot": "failed", "no-such-button": "error"}


def play(tmp_path: Path, providers: str) -> dict[str, dict[str, Any]]:
    path = tmp_path / "s.yaml"
    path.write_text(providers + TESTS, encoding="utf-8")
    data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return {r["test_id"]: r for r in data["results"]}


def assert_meant(records: dict[str, dict[str, Any]]) -> None:
    assert {t: r["status"] for t, r in records.items()} == MEANT, {t: r.get("error") for t, r in records.items()}
    booking = records["book-and-confirm"]["transcript"]
    assert booking[2]["click"] == "周六" and booking[2]["content"] == '/choose_day{"day": "周六"}'
    said = booking[4]["content"]
    assert said.startswith("预约号 B-") and said.endswith(" 没错吧？")  # the captured booking id, sent on turn 3
    assert "周六" in records["no-such-button"]["error"] and "turn 2" in records["no-such-button"]["error"]
    failed = [a for a in records["wrong-slot"]["assertions"] if not a["pass"]]
    assert failed and "周六" in failed[0]["reason"]  # the evidence names the value found


def test_a_rasa_bot_is_checked_on_its_slots_flows_actions_and_buttons(tmp_path: Path) -> None:
    with RasaServer() as server:
        records = play(tmp_path, f"providers:\n  - id: rasa-bot\n    rasa: {{url: {server.url}}}\n")
        assert_meant(records)
        seeded = [json.loads(b) if isinstance(b, str) else b for b, p in zip(server.requests, server.paths)
                  if p.endswith("/tracker/events")]
        assert {"event": "slot", "name": "city", "value": "北京"} in [e for b in seeded for e in (b if isinstance(b, list) else [b])]


class HttpBot:
    """A home-made state machine behind HTTP, Dialogflow-style: `{messages: [...], session_info: {...}}`,
    played on the loopback Rasa server's bot (`RasaBot`) so the three bots answer alike."""

    def __init__(self) -> None:
        self.rasa = RasaBot()

    def handle(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
        session = str(body["session"])
        tracker = self.rasa.tracker(session)
        seed = body.get("state") or {}
        assert isinstance(seed, dict), seed  # `{{ state }}` alone in a body value stays a mapping
        if isinstance(seed, dict) and not any(e.get("event") == "user" for e in tracker["events"]):
            tracker["slots"].update(seed.get("slots") or {})
        replies = self.rasa.turn(session, str(body["text"]), None)
        from evalspec.providers.rasa_provider import tracker_state

        state = tracker_state(tracker)
        return Reply(body={"messages": [{"text": r["text"], "buttons": r.get("buttons")} for r in replies],
                           "session_info": state})


def test_an_http_bot_with_state_and_parts_paths_gets_the_same_verdicts(tmp_path: Path) -> None:
    bot = HttpBot()
    with LoopbackServer(bot.handle) as server:
        providers = (f"providers:\n  - id: shop\n    http:\n      url: {server.url}/chat\n"
                     "      body: {session: '{{ thread_id }}', text: '{{ message }}', state: '{{ state }}'}\n"
                     "      response: messages[].text\n      parts: messages\n      state: session_info\n"
                     "      stateful: true\n")
        assert_meant(play(tmp_path, providers))


PYTHON_BOT = '''
import json
from tests.servers import RasaBot
from evalspec.providers.rasa_provider import tracker_state

_rasa = RasaBot()


def respond(messages, context):
    tracker = _rasa.tracker(context["thread_id"])
    if context.get("state") and not tracker["events"]:
        tracker["slots"].update(context["state"].get("slots") or {})
    replies = _rasa.turn(context["thread_id"], messages[-1]["content"], None)
    return {"content": "\\n".join(r["text"] for r in replies), "state": tracker_state(tracker),
            "parts": [{"text": r["text"], "buttons": r.get("buttons")} for r in replies]}
'''


def test_a_python_bot_that_returns_its_state_gets_the_same_verdicts(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(PYTHON_BOT, encoding="utf-8")
    assert_meant(play(tmp_path, "providers:\n  - id: py\n    python: bot.py:respond\n"))


@pytest.mark.parametrize("providers, problem", [
    ("providers:\n  - id: py\n    python: bot.py:respond\n", "has no state"),
])
def test_a_state_check_on_a_bot_that_reports_no_state_is_an_error_naming_the_turn(
        tmp_path: Path, providers: str, problem: str) -> None:
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '好的'\n", encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(providers + "tests:\n  - id: t\n    conversation:\n      - user: 你好\n        assert:\n"
                    "          - not-state: \"handoff\"\n", encoding="utf-8")
    record = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data["results"][0]
    assert record["status"] == "error" and problem in str(record["assertions"]) + str(record.get("error"))
    assert "turn 1" in str(record["assertions"]) + str(record.get("error"))
