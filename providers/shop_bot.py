"""A small stateful car-dealer bot, the offline system under test of `suites/state.yaml` (SPEC §24).

Like a Rasa or Dialogflow bot it has slots (city, car_model, date, booking_id), a flow
(`book_test_drive`), an intent and the actions of each turn, and it offers buttons (周六 / 周日) whose
payloads a `click:` turn sends back. Every turn returns the reply, the bot's state after it and the
turn's messages as parts:

    {"content": "...", "state": {"slots": {...}, "intent": ..., "active_flow": ..., "actions": [...],
                                 "handoff": false},
     "parts": [{"text": "...", "buttons": [{"title": "周六", "payload": "/choose_date{...}"}],
                "image": null, "custom": null}]}

The state is rebuilt from the conversation on every call (and from `context["state"]`, a test's seeded
`state:`), so the cache and a resumed run see the same bot. The booking id is derived from the booking
itself: the same booking always gets the same id.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

MODELS = ("瑶光", "追风", "凌云")
CITIES = ("北京", "上海", "深圳", "广州", "杭州")
DAYS = ("周六", "周日")
FLOW = "book_test_drive"
CHOOSE = re.compile(r"^/choose_date(\{.*\})$")
TEST_DRIVE = re.compile(r"试驾|test drive", re.I)
HUMAN = re.compile(r"人工|真人|客服|human|agent", re.I)
CANCEL = re.compile(r"取消|算了|不约了|cancel", re.I)


def payload(day: str) -> str:
    return "/choose_date" + json.dumps({"date": day}, ensure_ascii=False)


def booking_id(slots: dict[str, Any]) -> str:
    key = f"{slots.get('city')}|{slots.get('car_model')}|{slots.get('date')}"
    return f"TD-{zlib.crc32(key.encode()) % 10000:04d}"


def part(text: str, buttons: list[str] | None = None) -> dict[str, Any]:
    return {"text": text, "buttons": [{"title": d, "payload": payload(d)} for d in buttons or []],
            "image": None, "custom": None}


def fresh(seed: Any) -> dict[str, Any]:
    slots: dict[str, Any] = {"city": None, "car_model": None, "date": None, "booking_id": None}
    if isinstance(seed, dict) and isinstance(seed.get("slots"), dict):
        slots.update({k: v for k, v in seed["slots"].items() if k in slots})
    return {"slots": slots, "intent": None, "active_flow": None, "actions": [], "handoff": False}


def step(state: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """One user message: change `state` in place, return the turn's parts."""
    slots = state["slots"]
    state["actions"] = actions = []
    found_city = next((c for c in CITIES if c in text), None)
    found_model = next((m for m in MODELS if m in text), None)
    chosen = CHOOSE.match(text.strip())
    day = json.loads(chosen.group(1)).get("date") if chosen else next((d for d in DAYS if d in text), None)
    if found_city:
        slots["city"] = found_city
    if found_model:
        slots["car_model"] = found_model

    if HUMAN.search(text):
        state.update(intent="human_handoff", handoff=True)
        actions.append("action_handoff")
        return [part("好的，正在为您转接人工顾问。")]
    if CANCEL.search(text) and state["active_flow"] == FLOW:
        state.update(intent="cancel", active_flow=None)
        slots.update(date=None)
        actions.append("utter_flow_cancelled")
        return [part("好的，已取消这次试驾预约。")]
    if TEST_DRIVE.search(text) and not day:
        state.update(intent="request_test_drive", active_flow=FLOW)
        slots.update(date=None, booking_id=None)
    elif found_city and state["active_flow"] == FLOW and not day:
        state["intent"] = "provide_city"
    elif day and state["active_flow"] == FLOW:
        state["intent"] = "choose_date"
        slots["date"] = day
    elif (booking := re.search(r"TD-\d{4}", text)) is not None:
        state["intent"] = "check_booking"
        actions.append("utter_booking_status")
        if booking.group(0) == slots.get("booking_id"):
            return [part(f"没错，预约号 {slots['booking_id']}：{slots['date']}在{slots['city']}门店试驾"
                         f"{slots['car_model']}，到时见！")]
        return [part("抱歉，没有查到这个预约号，请您再核对一下。")]
    elif found_city and state["active_flow"] != FLOW:
        state["intent"] = "provide_city"
        actions.append("utter_ack_city")
        return [part(f"好的，已记下您在{found_city}。")]
    else:
        state["intent"] = "nlu_fallback" if state["active_flow"] != FLOW else state["intent"]
        if state["active_flow"] != FLOW:
            actions.append("utter_default")
            return [part("您好，我可以帮您预约试驾瑶光、追风或凌云。")]

    # inside the flow: ask for what is missing, in order
    if not slots["car_model"]:
        actions.append("utter_ask_car_model")
        return [part("您想试驾哪款车？瑶光、追风还是凌云？")]
    if not slots["city"]:
        actions.append("utter_ask_city")
        return [part("请问您在哪个城市？")]
    if not slots["date"]:
        actions += ["action_check_stock", "utter_ask_date"]
        return [part(f"{slots['city']}门店有{slots['car_model']}的试驾车。"),
                part("您想哪天来试驾？", list(DAYS))]
    slots["booking_id"] = booking_id(slots)
    state["active_flow"] = None
    actions += ["action_book_test_drive", "utter_booked"]
    return [part(f"已为您预约{slots['date']}在{slots['city']}门店试驾{slots['car_model']}，"
                 f"预约号 {slots['booking_id']}。")]


def respond(messages: list[dict[str, Any]], context: dict[str, Any]) -> dict[str, Any]:
    """The reply to the last user message, the bot's state after it and the turn's parts."""
    state = fresh(context.get("state"))
    parts: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "user":
            parts = step(state, str(m.get("content") or ""))
    return {"content": "\n".join(p["text"] for p in parts), "state": state, "parts": parts}
