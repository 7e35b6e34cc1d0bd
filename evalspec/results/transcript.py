"""A played conversation as the run hands it to results: its messages, why it stopped, and its call counts.

The conversation loops (scripted, simulated, attack, replay) fill it; `results.record` turns it into
run.json's record. It lives in `results` so the record reads it without importing the run layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from evalspec.extend.transcript import ChatMessage, Message
from evalspec.providers.tool_rounds import wire_message

if TYPE_CHECKING:
    from evalspec.results.rundata import AttributionName

__all__ = ["StopReason", "Transcript"]

StopReason = Literal["completed", "max_turns", "user_says", "assistant_matches", "goal_met", "breached", "error",
                     "milestones_met", "milestone_missed"]


@dataclass
class Transcript:
    messages: list[Message] = field(default_factory=list)
    stop_reason: StopReason = "completed"
    error: str | None = None
    calls: int = 0
    cached_calls: int = 0
    attack: dict[str, Any] | None = None  # an attack attempt's strategy, red lines and breach (docs/en/attacks.md)
    failed_calls: int = 0
    retries: int = 0
    # one `{tokens, cost, cached}` per model call made while playing on evalspec's behalf (simulated user,
    # attacker, a `goal_met` judge), its answer usable or not: counted as judge calls (docs/en/rule-self-tests.md#verdicts-that-hold)
    judge_usage: list[dict[str, Any]] = field(default_factory=list)
    attribution: AttributionName | None = None  # an error the harness caused: `simulator_fault` (docs/en/agents.md)
    world: dict[str, Any] | None = None  # the world as the conversation left it (docs/en/world.md)

    def history(self) -> list[ChatMessage]:
        """The OpenAI-style history the system under test sees (tool calls and results included)."""
        return [wire_message(m) for m in self.messages if not m.get("not_sent")]
