"""A small rule-based car-dealer agent with two tools, the offline system under test of suites/agent.yaml.

It looks up stock (`lookup_stock`) and books test drives (`book_test_drive`) in an in-memory
showroom, and reports each call with its result (`tool_calls: [{name, arguments, result}]`), as a
python provider does (SPEC §13). It answers in the user's language and has one realistic flaw on
purpose: asked for a test drive without a time, it books one right away ("as soon as possible")
instead of asking when the customer wants to come. `cancel_bookings` is its teardown.
"""

from __future__ import annotations

import re
import threading
from typing import Any

TOOLS = [
    {"type": "function", "function": {
        "name": "lookup_stock", "description": "Cars of a model in stock at a showroom",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["model"],
                       "properties": {"model": {"enum": ["瑶光", "追风", "凌云"]}, "city": {"type": "string"}}}}},
    {"type": "function", "function": {
        "name": "book_test_drive", "description": "Book a test drive of a model at a time the customer chose",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["model", "time"],
                       "properties": {"model": {"enum": ["瑶光", "追风", "凌云"]}, "time": {"type": "string", "minLength": 2},
                                      "name": {"type": "string"}}}}},
]

MODELS = {"瑶光": "Yaoguang", "追风": "Zhuifeng", "凌云": "Lingyun"}
STOCK = {("瑶光", "北京"): 3, ("瑶光", "上海"): 0, ("追风", "北京"): 5, ("追风", "上海"): 2, ("凌云", "北京"): 1}
STOCK_ASK = re.compile(r"现车|库存|有货|有车|有吗|in stock|available", re.I)
DRIVE_ASK = re.compile(r"试驾|test drive", re.I)
TIME = re.compile(r"(周[一二三四五六日天]|星期[一二三四五六日天]|明天|后天|今天)(上午|下午|晚上)?(\d{1,2}点|[一二三四五六七八九十]+点)?(半)?"
                  r"|\d{1,2}[:：]\d{2}|(?:mon|tues|wednes|thurs|fri|satur|sun)day(?: at \d{1,2}(?::\d{2})?\s*[ap]m)?"
                  r"|tomorrow(?: at \d{1,2}(?::\d{2})?\s*[ap]m)?", re.I)
CITY = re.compile(r"北京|上海|Beijing|Shanghai", re.I)
CITY_ZH = {"beijing": "北京", "shanghai": "上海"}
CITY_EN = {"北京": "Beijing", "上海": "Shanghai"}
CJK = re.compile(r"[\u4e00-\u9fff]")

_lock = threading.Lock()
BOOKINGS: dict[str, list[dict[str, Any]]] = {}  # thread id -> bookings made in that conversation


def _model(users: list[str]) -> str | None:
    for text in reversed(users):
        for model, english in MODELS.items():
            if model in text or english.lower() in text.lower():
                return model
    return None


def _city(users: list[str]) -> str:
    for text in reversed(users):
        found = CITY.search(text)
        if found:
            return CITY_ZH.get(found.group(0).lower(), found.group(0))
    return "北京"


def lookup_stock(model: str, city: str = "北京") -> dict[str, Any]:
    return {"model": model, "city": city, "in_stock": STOCK.get((model, city), 0)}


def book_test_drive(thread_id: str, model: str, time: str) -> dict[str, Any]:
    with _lock:
        booking = {"booking_id": f"TD-{len(BOOKINGS.get(thread_id, [])) + 1:03d}", "model": model, "time": time}
        BOOKINGS.setdefault(thread_id, []).append(booking)
    return {"booked": True, **booking}


def respond(messages: list[dict[str, Any]], context: dict[str, Any]) -> dict[str, Any]:
    users = [m["content"] for m in messages if m.get("role") == "user"]
    text = users[-1]
    zh = bool(CJK.search(text))
    model = _model(users)
    calls: list[dict[str, Any]] = []
    if DRIVE_ASK.search(text) or (TIME.search(text) and _asked_for_time(messages)):
        # a time after a booking re-books without cancelling the first one (a consequence of the flaw)
        if model is None:
            return {"content": "请问您想试驾哪款车型？" if zh else "Which model would you like to test drive?"}
        found = TIME.search(text)
        time = found.group(0) if found else ("尽快" if zh else "as soon as possible")  # the flaw: no time asked
        result = book_test_drive(str(context.get("thread_id")), model, time)
        calls.append({"name": "book_test_drive", "arguments": {"model": model, "time": time}, "result": result})
        reply = (f"已为您预约{time}试驾{model}，预约号 {result['booking_id']}。" if zh else
                 f"Your {MODELS[model]} test drive is booked for {time} (booking {result['booking_id']}).")
        return {"content": reply, "tool_calls": calls}
    if STOCK_ASK.search(text):
        if model is None:
            return {"content": "请问您想看哪款车型？瑶光、追风还是凌云？" if zh else
                    "Which model: Yaoguang, Zhuifeng or Lingyun?"}
        city = _city(users)
        result = lookup_stock(model, city)
        calls.append({"name": "lookup_stock", "arguments": {"model": model, "city": city}, "result": result})
        n = result["in_stock"]
        if zh:
            reply = f"{city}店{model}有现车{n}台，欢迎预约试驾。" if n else f"{city}店{model}暂时没有现车，可以为您调车。"
        else:
            where = CITY_EN.get(city, city)
            reply = (f"The {where} showroom has {n} {MODELS[model]} in stock." if n
                     else f"No {MODELS[model]} in stock in {where} right now; we can transfer one.")
        return {"content": reply, "tool_calls": calls}
    return {"content": "您好，我可以帮您查库存、预约试驾。" if zh else "Hi! I can check stock and book test drives."}


def _asked_for_time(messages: list[dict[str, Any]]) -> bool:
    """The last reply asked when, or booked a test drive (a time given now is meant for it)."""
    last = next((m["content"] for m in reversed(messages[:-1]) if m.get("role") == "assistant"), "")
    return bool(re.search(r"什么时候|哪天|when|预约|booked", last or "", re.I))


def cancel_bookings(context: dict[str, Any]) -> None:
    """Teardown: cancel the test drives booked during this conversation."""
    with _lock:
        BOOKINGS.pop(str(context.get("thread_id")), None)


# -- the same showroom as tool results for a model agent (examples/agent_model.yaml) ---------------

def stock_result(args: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    """`tool_results: {lookup_stock: {python: ...}}`: called as fn(args, context)."""
    return lookup_stock(str(args.get("model")), str(args.get("city") or "北京"))


def booking_result(args: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    """`tool_results: {book_test_drive: {python: ...}}`: books in this conversation's thread."""
    return book_test_drive(str(context.get("thread_id")), str(args.get("model")), str(args.get("time")))
