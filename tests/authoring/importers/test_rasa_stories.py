"""Rasa 3 test stories import (SPEC §31): one test per story, annotated entities stripped and checked, the
intent, actions in order, slots and active loop checked on the turn's state; a `rasa:` state's `active_loop`."""

from __future__ import annotations

import json
from typing import Any

import yaml

from evalspec.authoring.importers.rasa_stories import strip_entities
from evalspec.providers.rasa_provider import tracker_state
from tests.helpers import invoke
from tests.servers import LoopbackServer, Reply

STORIES = """\
version: "3.1"
stories:
  - story: 订餐 happy path
    steps:
      - user: 我想在[北京](city)订餐
        intent: request_restaurant
      - action: restaurant_form
      - active_loop: restaurant_form
      - slot_was_set:
          - city: 北京
      - action: utter_ask_cuisine
      - action: action_listen
      - user: yes
        intent: affirm
      - action: utter_done
"""


class _Rasa:
    """A loopback Rasa answering each message with the events `script` gives for it."""

    def __init__(self, script: dict[str, list[dict[str, Any]]]) -> None:
        self.script, self.events = script, {}  # type: ignore[var-annotated]

    def __call__(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
        if path.startswith("/webhooks/rest/webhook"):
            events = self.events.setdefault(body["sender"], [])
            intent = "affirm" if body["message"] == "yes" else "request_restaurant"
            events += [{"event": "user", "text": body["message"], "parse_data": {"intent": {"name": intent}}},
                       *self.script[body["message"]]]
            return Reply(body=[{"recipient_id": body["sender"], "text": "ok"}])
        events = self.events.setdefault(path.split("/")[2], [])
        user = next(e for e in reversed(events) if e["event"] == "user")
        entities = [{"entity": "city", "value": "北京"}] if "北京" in user["text"] else []
        return Reply(body={"events": events, "slots": {}, "stack": [],
                           "latest_message": {"intent": user["parse_data"]["intent"], "entities": entities}})


def _import(tmp_path, server_url: str) -> tuple[int, str]:
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test_stories.yml").write_text(STORIES, encoding="utf-8")
    return invoke("import", "rasa", str(tmp_path / "tests"), "-o", str(tmp_path / "out"),
                  "--provider", json.dumps({"rasa": {"url": server_url}}))


def test_annotated_entities_are_stripped_from_the_text_sent():
    assert strip_entities('去[北京](city)和[SF](city:San Francisco)，[Paris]{"entity": "city"}') == (
        "去北京和SF，Paris", [("city", "北京"), ("city", "San Francisco"), ("city", "Paris")])


def test_a_test_story_imports_as_one_test_with_state_checks_per_turn(tmp_path):
    code, out = _import(tmp_path, "http://127.0.0.1:9")
    assert code == 0, out
    test, = yaml.safe_load((tmp_path / "out" / "test-stories.yaml").read_text(encoding="utf-8"))["tests"]
    first, second = test["conversation"]
    assert first["user"] == "我想在北京订餐" and second["user"] == "yes"
    assert {"state": {"path": "intent", "equals": "request_restaurant"}} in first["assert"]
    assert {"state": 'contains(entities[?entity == `"city"`].value, `"北京"`)'} in first["assert"]
    assert {"state": {"path": "slots_set.city", "equals": "北京"}} in first["assert"]
    assert {"state": {"path": "active_loop", "equals": "restaurant_form"}} in first["assert"]
    assert any("matches" in str(c) and "action_listen" not in str(c) for c in first["assert"])
    assert "checks: 8 kept, 0 not converted" in out
    assert invoke("validate", str(tmp_path / "out" / "test-stories.yaml"))[0] == 0


def test_the_actions_must_come_in_the_story_order_others_between_allowed(tmp_path):
    good = {"我想在北京订餐": [{"event": "action", "name": "restaurant_form"},
                             {"event": "active_loop", "name": "restaurant_form"},
                             {"event": "slot", "name": "city", "value": "北京"},
                             {"event": "action", "name": "action_extra"},
                             {"event": "action", "name": "utter_ask_cuisine"},
                             {"event": "action", "name": "action_listen"}],
            "yes": [{"event": "action", "name": "utter_done"}, {"event": "action", "name": "action_listen"}]}
    with LoopbackServer(_Rasa(good)) as server:
        code, out = _import(tmp_path, server.url)
        assert code == 0, out
        code, out = invoke("run", str(tmp_path / "out" / "test-stories.yaml"), "-o", str(tmp_path / "run.json"))
        assert code == 0, out
    swapped = {**good, "我想在北京订餐": [good["我想在北京订餐"][i] for i in (4, 1, 2, 0, 5)]}
    with LoopbackServer(_Rasa(swapped)) as server:
        code, out = _import(tmp_path, server.url)
        code, out = invoke("run", str(tmp_path / "out" / "test-stories.yaml"), "-o", str(tmp_path / "run.json"))
        assert code == 1, out


def test_a_rasa_state_gives_the_active_loop_after_the_turn():
    events = [{"event": "user", "text": "hi"}, {"event": "active_loop", "name": "restaurant_form"}]
    assert tracker_state({"events": events})["active_loop"] == "restaurant_form"
    assert tracker_state({"events": [*events, {"event": "active_loop", "name": None}]})["active_loop"] is None
    assert tracker_state({"events": events, "active_loop": {}})["active_loop"] is None
    assert tracker_state({"active_loop": {"name": "f"}})["active_loop"] == "f"


def test_an_intent_step_without_text_is_a_turn_sending_the_intent(tmp_path):
    """financial-demo's test stories: `- intent: deny` with no `user:` is a turn of its own (Rasa sends
    `/deny`), so the actions after it are checked on it, not on the turn before."""
    (tmp_path / "test_stories.yml").write_text("""\
stories:
  - story: 转账后拒绝
    steps:
      - intent: transfer_money
        user: 转账
      - action: action_switch_forms_ask
      - intent: deny
      - action: action_switch_forms_deny
      - intent: inform
        entities:
          - account_type: 信用卡
      - action: utter_ok
""", encoding="utf-8")
    code, out = invoke("import", "rasa", str(tmp_path / "test_stories.yml"), "-o", str(tmp_path / "out"))
    assert code == 0, out
    test, = yaml.safe_load((tmp_path / "out" / "test-stories.yaml").read_text(encoding="utf-8"))["tests"]
    assert [t["user"] for t in test["conversation"]] == ["转账", "/deny", '/inform{"account_type": "信用卡"}']
    assert [t["assert"] for t in test["conversation"][1:]] == [
        [{"state": {"path": "intent", "equals": "deny"}},
         {"state": 'contains(actions, `"action_switch_forms_deny"`)'}],
        [{"state": {"path": "intent", "equals": "inform"}},
         {"state": 'contains(entities[?entity == `"account_type"`].value, `"信用卡"`)'},
         {"state": 'contains(actions, `"utter_ok"`)'}]]
    assert test["conversation"][0]["assert"][-1] == {"state": 'contains(actions, `"action_switch_forms_ask"`)'}
    assert "checks: 7 kept, 0 not converted" in out
