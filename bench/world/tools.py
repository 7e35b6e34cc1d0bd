"""An invented appliance-repair service's tools: fn(args, world) -> the result; each may change world."""

from __future__ import annotations

from typing import Any


def find_customer(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    for customer in world["customers"]:
        if customer["name"] == args["name"]:
            return customer
    raise LookupError(f"没有客户 {args['name']}")


def list_slots(args: dict[str, Any], world: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"technician_id": t["id"], "slots": list(t["slots"])} for t in world["technicians"]
            if t["city"] == args["city"]]


def _technician(world: dict[str, Any], tid: str) -> dict[str, Any]:
    return next(t for t in world["technicians"] if t["id"] == tid)


def book_repair(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    technician = _technician(world, args["technician_id"])
    if args["date"] not in technician["slots"]:
        raise ValueError(f"{args['technician_id']} 在 {args['date']} 没有空档")
    technician["slots"].remove(args["date"])
    ticket = {"id": f"k{len(world['tickets']) + 1}", "customer_id": args["customer_id"],
              "technician_id": args["technician_id"], "date": args["date"], "appliance": args["appliance"],
              "parts": [], "status": "open"}
    world["tickets"].append(ticket)
    return ticket


def _ticket(world: dict[str, Any], ticket_id: str) -> dict[str, Any]:
    for ticket in world["tickets"]:
        if ticket["id"] == ticket_id:
            return ticket
    raise LookupError(f"没有工单 {ticket_id}")


def cancel_repair(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    ticket = _ticket(world, args["ticket_id"])
    ticket["status"] = "cancelled"
    _technician(world, ticket["technician_id"])["slots"].append(ticket["date"])
    return ticket


def check_part(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    return {"part": args["part"], "stock": world["parts"].get(args["part"], 0)}


def order_part(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    if world["parts"].get(args["part"], 0) < 1:
        raise ValueError(f"{args['part']} 缺货")
    world["parts"][args["part"]] -= 1
    ticket = _ticket(world, args["ticket_id"])
    ticket["parts"].append(args["part"])
    return ticket


def update_address(args: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    for customer in world["customers"]:
        if customer["id"] == args["customer_id"]:
            customer["city"] = args["city"]
            return customer
    raise LookupError(f"没有客户 {args['customer_id']}")
