"""Play one scripted conversation turn by turn: the system's own replies become the next turn's context."""

from __future__ import annotations

from typing import Any

from evalspec.agent import CallFn, ToolKit, play_turn
from evalspec.errors import ProviderError
from evalspec.plan import Instance
from evalspec.providers.base import ProviderResponse, clean_text
from evalspec.results.transcript import Transcript  # re-exported: the loops build it

__all__ = ["CallFn", "Transcript", "assistant_message", "run_scripted", "user_message"]


def user_message(text: str, turn: int | None, **flags: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, "turn": turn, "latency_ms": None, "tokens": None, "cost": None,
            **{k: v for k, v in flags.items() if v}}


def assistant_message(response: ProviderResponse, turn: int) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": clean_text(response.content), "turn": turn,
                           "latency_ms": round(response.latency_ms, 3) if response.latency_ms is not None else None,
                           "tokens": response.tokens, "cost": response.cost}
    if response.prompt_tokens is not None:
        msg["prompt_tokens"], msg["completion_tokens"] = response.prompt_tokens, response.completion_tokens
    if response.cached_tokens is not None:
        msg["cached_tokens"] = response.cached_tokens
    strategy = response.metadata.get("strategy")
    if isinstance(strategy, dict):  # the context strategy's own calls (history: summary | facts)
        msg["strategy_tokens"], msg["strategy_cost"] = strategy.get("tokens"), strategy.get("cost")
        msg["strategy_calls"] = 0 if response.cached else strategy.get("calls", 0)
    if response.cached:
        msg["cached"] = True
    if response.tool_calls:
        msg["tool_calls"] = response.tool_calls
    if isinstance(path := response.metadata.get("tool_calls_path"), dict):  # was the http tool_calls key there
        msg["tool_calls_path"] = path
    return msg


def tool_context(instance: Instance, call: CallFn) -> dict[str, Any]:
    """What a `tool_results` python function gets besides the call's arguments."""
    return {"thread_id": getattr(call, "thread_id", None), "test_id": instance.test_id, "vars": dict(instance.vars)}


async def run_scripted(instance: Instance, call: CallFn, kit: ToolKit | None = None) -> Transcript:
    """Send each user turn and record the reply (after its tool rounds); the first provider failure
    ends the conversation."""
    transcript = Transcript()
    context = tool_context(instance, call)
    for planned in instance.turns:
        if planned.role == "assistant":
            transcript.messages.append({"role": "assistant", "content": planned.text, "turn": planned.turn,
                                        "latency_ms": None, "tokens": None, "cost": None, "injected": True})
            continue
        transcript.messages.append(user_message(planned.text, planned.turn, filler=planned.filler,
                                                label=planned.label, history=not planned.call))
        if not planned.call:
            continue
        try:
            await play_turn(call, transcript, planned.turn, kit, context, assistant_message)
        except ProviderError as exc:
            transcript.stop_reason, transcript.error = "error", f"turn {planned.turn}: {exc}"
            break
    return transcript
