"""The dealer's tools, as evalspec answers them: each is called as fn(args, world), returns the result
the agent sees, and may change `world` (the conversation's own copy of dealer.json)."""

from __future__ import annotations

from typing import Any


def _next_id(items: list[dict[str, Any]], prefix: str) -> str:
    return f"{prefix}{len(items) + 1}"


def check_stock(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    cars = [c for c in world["inventory"] if c["model"] == args["model"]]
    if not cars:
        raise ValueError(f"没有车型 {args['model']}")
    return {"model": args["model"], "colors": {c["color"]: c["stock"] for c in cars}}


def book_visit(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    visit = {"id": _next_id(world["visits"], "v"), "user_id": args["user_id"], "date": args["date"],
             "model": args.get("model"), "status": "booked"}
    world["visits"].append(visit)
    return visit


def _visit(world: dict[str, Any], visit_id: str) -> dict[str, Any]:
    for visit in world["visits"]:
        if visit["id"] == visit_id:
            return visit
    raise KeyError(f"没有预约 {visit_id}")


def reschedule_visit(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    visit = _visit(world, args["visit_id"])
    visit["date"] = args["date"]
    return visit


def cancel_visit(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    visit = _visit(world, args["visit_id"])
    visit["status"] = "cancelled"
    return visit


def place_order(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    for car in world["inventory"]:
        if car["model"] == args["model"] and car["color"] == args["color"]:
            if car["stock"] < 1:
                raise ValueError(f"{args['model']}{args['color']} 已售罄")
            car["stock"] -= 1
            order = {"id": _next_id(world["orders"], "o"), "user_id": args["user_id"], "model": args["model"],
                     "color": args["color"], "status": "placed"}
            world["orders"].append(order)
            return order
    raise ValueError(f"没有 {args['model']}{args['color']}")


def cancel_order(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    for order in world["orders"]:
        if order["id"] == args["order_id"]:
            order["status"] = "cancelled"
            for car in world["inventory"]:
                if car["model"] == order["model"] and car["color"] == order["color"]:
                    car["stock"] += 1
            return order
    raise KeyError(f"没有订单 {args['order_id']}")
