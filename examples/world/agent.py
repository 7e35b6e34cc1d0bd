"""Three scripted dealer agents, offline (no model): each reads the user's request, calls the dealer's
tools round by round within the turn, and answers from their results.

- `solve` does what it is asked and says what it did;
- `claim` says it booked / ordered / cancelled without calling the tool (the worst failure of a sales bot);
- `skip_last_write` does every write of a turn but the last, and reports only what it did.
"""

from __future__ import annotations

import json
import re
from typing import Any

MODELS = ("瑶光", "汉EV", "海豹")
COLORS = ("白色", "黑色", "蓝色")
WRITES = {"book_visit", "reschedule_visit", "cancel_visit", "place_order", "cancel_order"}


def _find(pattern: str, text: str) -> str | None:
    found = re.search(pattern, text)
    return found.group(0) if found else None


def _first(options: tuple[str, ...], text: str) -> str | None:
    return next((o for o in options if o in text), None)


def plan(text: str, results: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """The calls of the next round, given the results of this turn's earlier rounds ([] when done)."""
    user, date, model, color = _find(r"u\d+", text), _find(r"\d{4}-\d{2}-\d{2}", text), _first(MODELS, text), \
        _first(COLORS, text)
    done = [name for name, _ in results]
    calls: list[dict[str, Any]] = []
    if "改" in text and (visit := _find(r"v\d+", text)) and "reschedule_visit" not in done:
        calls.append({"name": "reschedule_visit", "arguments": {"visit_id": visit, "date": date}})
    elif "取消预约" in text and (visit := _find(r"v\d+", text)) and "cancel_visit" not in done:
        calls.append({"name": "cancel_visit", "arguments": {"visit_id": visit}})
    elif "取消订单" in text and (order := _find(r"o\d+", text)) and "cancel_order" not in done:
        calls.append({"name": "cancel_order", "arguments": {"order_id": order}})
    if "预约" in text and "取消" not in text and "改" not in text and "book_visit" not in done:
        calls.append({"name": "book_visit", "arguments": {"user_id": user, "date": date, "model": model}})
    if ("库存" in text or "下单" in text) and "check_stock" not in done:
        calls.append({"name": "check_stock", "arguments": {"model": model}})
    if "下单" in text and "check_stock" in done and "place_order" not in done:
        stock = dict(results)["check_stock"]
        if isinstance(stock, dict) and stock.get("colors", {}).get(color, 0) > 0:
            calls.append({"name": "place_order", "arguments": {"user_id": user, "model": model, "color": color}})
    if ("多少钱" in text or "价格" in text) and "get_price" not in done:
        calls.append({"name": "get_price", "arguments": {"model": model}})
    if (months := _find(r"(?<=分)\d*(?=期)", text)) is not None and "get_financing" not in done:
        calls.append({"name": "get_financing", "arguments": {"model": model, "months": int(months or 36)}})
    return calls


def say(name: str, result: Any, text: str) -> str:
    """One sentence about one tool's result."""
    if isinstance(result, dict) and "error" in result:
        return f"抱歉，没能办成：{result['error']}。"
    if name == "book_visit":
        return f"已为您预约{result['date']}到店看{result['model']}，预约号{result['id']}。"
    if name == "reschedule_visit":
        return f"已为您把预约{result['id']}改到{result['date']}。"
    if name == "cancel_visit":
        return f"已为您取消预约{result['id']}。"
    if name == "place_order":
        return f"已为您下单{result['model']}{result['color']}，订单号{result['id']}。"
    if name == "cancel_order":
        return f"已为您取消订单{result['id']}。"
    if name == "check_stock":
        colors = "，".join(f"{c}{n}台" for c, n in result["colors"].items())
        wanted = _first(COLORS, text)
        if "下单" in text and wanted and result["colors"].get(wanted, 0) < 1:
            return f"{result['model']}{wanted}目前没有库存（{colors}），暂时无法下单。"
        return "" if "下单" in text else f"{result['model']}库存：{colors}。"
    if name == "get_price":
        return f"{result['model']}指导价{result['price']}元。"
    if name == "get_financing":
        return f"{result['model']}可以分{result['months']}期，年化利率{result['rate']}。"
    return ""


def _turn(messages: list[dict[str, Any]]) -> tuple[str, list[tuple[str, Any]]]:
    """The user's last message and the results of this turn's calls so far, by tool name."""
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    results = [(m["name"], json.loads(m["content"])) for m in messages[last + 1:] if m["role"] == "tool"]
    return str(messages[last]["content"]), results


def _reply(text: str, results: list[tuple[str, Any]]) -> str:
    said = "".join(say(name, result, text) for name, result in results)
    return said or "好的，已收到您的需求，还有什么可以帮您？"


def solve(messages: list[dict[str, Any]], context: dict[str, Any]) -> dict[str, Any]:
    text, results = _turn(messages)
    calls = plan(text, results)
    return {"content": None, "tool_calls": calls} if calls else {"content": _reply(text, results)}


def claim(messages: list[dict[str, Any]], context: dict[str, Any]) -> dict[str, Any]:
    """Looks things up, but never writes: it says each write was done."""
    text, results = _turn(messages)
    calls = [c for c in plan(text, results) if c["name"] not in WRITES]
    if calls:
        return {"content": None, "tool_calls": calls}
    pretend = [(c["name"], {**c["arguments"], "id": c["arguments"].get("visit_id") or c["arguments"].get("order_id")
                            or "x9"}) for c in _write_calls(text)]
    looked_up = [r for r in results if not (r[0] == "check_stock" and "下单" in text)]
    return {"content": _reply(text, looked_up + pretend)}


def skip_last_write(messages: list[dict[str, Any]], context: dict[str, Any]) -> dict[str, Any]:
    """Does every write of the turn but the last one, and says only what it did."""
    text, results = _turn(messages)
    writes = _write_calls(text)
    last = writes[-1]["name"] if writes else None
    calls = [c for c in plan(text, results) if c["name"] != last]
    return {"content": None, "tool_calls": calls} if calls else {"content": _reply(text, results)}


def _write_calls(text: str) -> list[dict[str, Any]]:
    """The writes `solve` makes for this request, in order (every car assumed in stock)."""
    results: list[tuple[str, Any]] = []
    writes = []
    while calls := plan(text, results):
        writes += [c for c in calls if c["name"] in WRITES]
        results += [(c["name"], {"colors": {k: 1 for k in COLORS}} if c["name"] == "check_stock" else {})
                    for c in calls]
    return writes
