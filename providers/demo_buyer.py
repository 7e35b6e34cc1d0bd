"""A scripted buyer for the demo's staged journey (suites/journey.yaml): a simulated user written in Python.

evalspec calls `buyer(transcript, context)` before each of its turns; with `milestones:`, `context["goal"]`
is the current milestone's goal (docs/en/agents.md#simulated-journeys). The buyer says the next line it has
not said yet for that goal (never the same line twice: a repeated message is a simulator fault), in
the language of the goal, so the journey runs offline, the same every time.
"""

from __future__ import annotations

from typing import Any

LINES = {  # a word of the goal -> what the buyer says for it, in order
    "车况": ["这台瑶光是哪年的车？", "瑶光的续航是多少？"],
    "分期": ["能分期吗？首付多少？", "月供大概多少？"],
    "报价单": ["能出一份正式的报价单吗？", "报价单今天能给我吗？"],
    "condition": ["What year is the Yaoguang?", "What is its range?"],
    "financ": ["Can I pay in instalments? How much is the down payment?", "What would the monthly payment be?"],
    "quote": ["Could you send me a written quote?", "When can I get the written quote?"],
}


def buyer(transcript: list[dict[str, Any]], context: dict[str, Any]) -> str | None:
    goal = str(context.get("goal") or "")
    lines = next((said for word, said in LINES.items() if word in goal), None)
    if lines is None:
        return None  # a goal it has no lines for: it stops
    asked = {str(m.get("content")) for m in transcript if m.get("role") == "user"}
    return next((line for line in lines if line not in asked), None)
