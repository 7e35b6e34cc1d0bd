"""Play one scripted conversation turn by turn: the system's own replies become the next turn's context."""

from __future__ import annotations

import itertools
from typing import Any

from evalspec.core.errors import EvalspecError, ProviderError
from evalspec.extend.provider import ProviderResponse, clean_text
from evalspec.plan.build import Instance, has_captures, with_captures
from evalspec.providers.tool_rounds import CallFn, ToolKit, play_turn
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


def captured_values(messages: list[dict[str, Any]]) -> tuple[dict[str, str], str | None]:
    """What each `capture: NAME` user turn stored (its turn's reply, SPEC §19), and the first capture that
    found nothing (an empty reply), as an error line. A turn not reached captures nothing and is no error."""
    values: dict[str, str] = {}
    for i, message in enumerate(messages):
        name = message.get("capture") if message.get("role") == "user" else None
        if not name:
            continue
        replies = [m for m in itertools.takewhile(lambda m: m.get("role") != "user", messages[i + 1:])
                   if m.get("role") == "assistant" and not m.get("intermediate")]
        if not replies:
            continue
        text = replies[-1].get("content")
        if not isinstance(text, str) or not text.strip():
            return values, (f"turn {message.get('turn')}: capture '{name}' found nothing: the reply is empty, "
                            f"so the later turns and checks that use {{{{ {name} }}}} cannot be rendered")
        values[name] = text
    return values, None


async def run_scripted(instance: Instance, call: CallFn, kit: ToolKit | None = None) -> Transcript:
    """Send each user turn and record the reply (after its tool rounds); the first provider failure
    ends the conversation. With `capture:` turns, each later turn is rendered again with the replies
    captured so far (SPEC §19); a capture that finds nothing ends the conversation at its turn."""
    transcript = Transcript()
    context = tool_context(instance, call)
    captures = has_captures(instance)
    rendered, known = instance, 0
    for index, planned in enumerate(instance.turns):
        if captures:
            values, problem = captured_values(transcript.messages)
            if problem:
                transcript.stop_reason, transcript.error = "error", problem
                return transcript
            if len(values) != known:
                try:
                    rendered, known = with_captures(instance, values), len(values)
                except EvalspecError as exc:  # a template the captures so far do not render
                    transcript.stop_reason, transcript.error = "error", f"turn {planned.turn}: {exc}"
                    return transcript
            planned = rendered.turns[index]
        if planned.role == "assistant":
            transcript.messages.append({"role": "assistant", "content": planned.text, "turn": planned.turn,
                                        "latency_ms": None, "tokens": None, "cost": None, "injected": True})
            continue
        transcript.messages.append(user_message(planned.text, planned.turn, filler=planned.filler,
                                                label=planned.label, history=not planned.call,
                                                capture=planned.capture))
        if not planned.call:
            continue
        try:
            await play_turn(call, transcript, planned.turn, kit, context, assistant_message)
        except ProviderError as exc:
            transcript.stop_reason, transcript.error = "error", f"turn {planned.turn}: {exc}"
            break
    else:
        if captures and (problem := captured_values(transcript.messages)[1]):
            transcript.stop_reason, transcript.error = "error", problem
    return transcript
