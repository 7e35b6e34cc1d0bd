"""`evalspec rerun RUN.json --at-turn` (docs/en/statistics.md#replay-at-the-failing-turn-rerun-at-turn): each failed
conversation's history frozen up to the turn its first failing check first failed, that one turn asked
again N times, its reply graded with the checks that failed.

The asks are real calls: the provider pool has no cache (neither read nor written), so N asks are N
calls. Each ask is a conversation of its own (a new thread id; the provider's `setup:` and the test's
`state:` seed run before its one live call, as in a played conversation); the turns before are the
recorded messages (user and assistant messages, tool calls and their results), sent as history and never
asked again. A provider that keeps the conversation itself (`stateful`) cannot be given a history, so its
conversations are left out with a warning."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from evalspec.assertions.evaluate import AssertionResult
from evalspec.assertions.grade import grade
from evalspec.config.model import AssertionSpec
from evalspec.core.errors import EvalspecError
from evalspec.extend.transcript import Message
from evalspec.plan.build import Instance, grading_input, has_captures, with_captures
from evalspec.plan.needs import check_plan
from evalspec.play.runner import TurnCaller
from evalspec.play.scripted import captured_values
from evalspec.play.turns import NextMessage, play_turns
from evalspec.providers.calls import CallStats
from evalspec.providers.factory import ProviderPool
from evalspec.results.errorbars import interval
from evalspec.results.rundata import AtTurn, Record
from evalspec.results.transcript import Transcript

__all__ = ["FrozenHistory", "failing_turn", "rerun_at_turn"]


def _failed_turn(a: Mapping[str, object]) -> int | None:
    """The first turn a failed check names: its own turn, else the first turn of its evidence."""
    if isinstance(own := a.get("turn"), int):
        return own
    evidence = a.get("evidence")
    turns = [t for e in evidence if isinstance(e, dict) and isinstance(t := e.get("turn"), int)] \
        if isinstance(evidence, list) else []
    return min(turns) if turns else None


def _last_user_turn(messages: Sequence[Message]) -> int | None:
    turns = [t for m in messages if m.get("role") == "user" and isinstance(t := m.get("turn"), int)
             and not m.get("not_sent") and not m.get("history")]
    return max(turns) if turns else None


def failing_turn(record: Record) -> tuple[int, list[int]] | None:
    """The turn where the record's first failing check first failed, and the indexes (in its
    `assertions`) of the checks that failed there; None when no check failed (an error, a skipped test).
    A check that names no turn (a whole-conversation check without evidence) failed at the last turn."""
    failed = [(i, a) for i, a in enumerate(record.get("assertions") or [])
              if a.get("pass") is False and not a.get("skipped")]
    if not failed:
        return None
    last = _last_user_turn(record.get("transcript") or [])
    turn = _failed_turn(failed[0][1]) or last
    if turn is None:
        return None
    return turn, [i for i, a in failed if (_failed_turn(a) or last) == turn]


def _history(record: Record, turn: int) -> tuple[list[Message], Message] | None:
    """The recorded messages before `turn` (user, assistant, tool calls and results) and turn `turn`'s
    user message; None when the transcript has no such user message."""
    messages = record.get("transcript") or []
    before = [m for m in messages if isinstance(t := m.get("turn"), int) and t < turn]
    asked = next((m for m in messages if m.get("role") == "user" and m.get("turn") == turn), None)
    return (before, asked) if asked is not None else None


class FrozenHistory:
    """A source of the next message that says the recorded history (never sent on its own) and then the
    failing turn's user message (sent once); the loop in play/turns.py plays it like any other source."""

    stop_reason: str = "completed"
    who: str | None = None

    def __init__(self, history: list[Message], asked: Message) -> None:
        self.queue = [NextMessage(dict(m), call=False) for m in history]  # type: ignore[arg-type]
        self.queue.append(NextMessage(dict(asked), call=True))  # type: ignore[arg-type]

    async def next_message(self, transcript: Transcript) -> NextMessage | None:
        return self.queue.pop(0) if self.queue else None

    async def stop_after(self, transcript: Transcript, reply: Message, turn: int) -> str | None:
        return None


def _specs(inst: Instance, record: Record, indexes: list[int]) -> list[AssertionSpec]:
    """The suite's checks that failed in the record: by position when the record was graded with the
    suite's checks as they are now, else by name and turn."""
    specs = grading_input(inst).specs
    recorded = record.get("assertions") or []
    if len(specs) == len(recorded) and all(specs[i].name == recorded[i].get("type") for i in indexes):
        return [specs[i] for i in indexes]
    wanted = {(recorded[i].get("type"), recorded[i].get("turn")) for i in indexes}
    return [s for s in specs if (s.name, s.turn) in wanted]


async def _ask(inst: Instance, pool: ProviderPool, source: FrozenHistory,
               specs: list[AssertionSpec]) -> str:
    """One ask of the turn: `failed`, `passed`, or `error` (the call or a check could not be decided)."""
    provider = pool.get(inst.provider, inst.suite)
    kit = pool.toolkit(inst.provider, inst.suite)
    if inst.test.tool_results:
        kit = dataclasses.replace(kit, results={**kit.results, **inst.test.tool_results})
    try:
        transcript = await play_turns(source, inst, TurnCaller(inst, provider, {}, CallStats()), kit)
        if transcript.error:
            return "error"
        if has_captures(inst):
            inst = with_captures(inst, captured_values(transcript.messages, inst)[0])
        given = dataclasses.replace(grading_input(inst), specs=specs)
        results: list[AssertionResult] = await grade(
            given, transcript.messages, judge=pool.judge_fn(inst.suite), embed=pool.embed_fn(inst.suite),
            judge_for=lambda raw: pool.judge_for(inst.suite, raw))
    except EvalspecError:
        return "error"
    if any(r.passed is False for r in results):
        return "failed"
    return "passed" if any(r.passed for r in results) else "error"


def named(record: Record, ids: Sequence[str]) -> bool:
    """Whether `--ids` names the record: its instance id, or its id without the repeat (`#k`)."""
    return record["test_id"] in ids or record.get("base_id") in ids


def at_turn_figures(turn: int, outcomes: list[str]) -> AtTurn:
    """The record's `at_turn`: the turn, the asks that reached a verdict (`times`), those that failed,
    the Wilson interval of the failed share, the asks that errored, and `derailed_earlier` when the turn
    never failed again given its history."""
    times = sum(1 for o in outcomes if o != "error")
    failed = outcomes.count("failed")
    out: AtTurn = {"turn": turn, "times": times, "failed": failed, "ci": interval(failed, times)}
    if errors := outcomes.count("error"):
        out["errors"] = errors
    if times and not failed:
        out["derailed_earlier"] = True
    return out


async def rerun_at_turn(run: dict[str, Any], times: int, ids: Sequence[str],
                        concurrency: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Ask each failed record's failing turn `times` times (or the records whose test id is in `ids`)
    and write `at_turn` on each record of `run`; returns one row per record replayed and warnings."""
    from evalspec.play.replay import instances_of

    instances, warnings = instances_of(run)
    chosen = [r for r in run["results"] if named(r, ids)] if ids else \
        [r for r in run["results"] if r["status"] == "failed" and not r.get("curve")]
    suites = list({id(i.suite): i.suite for i in instances.values()}.values())
    pool = ProviderPool(suites, cache_dir=None)  # every ask is a call: nothing read from or written to the cache
    slots = asyncio.Semaphore(max(1, concurrency))
    rows: list[dict[str, Any]] = []

    async def ask(inst: Instance, source: FrozenHistory, specs: list[AssertionSpec]) -> str:
        async with slots:
            return await _ask(inst, pool, source, specs)

    try:
        targets = []
        for r in chosen:
            inst = instances.get(r["key"])
            where = failing_turn(r)
            history = _history(r, where[0]) if where is not None else None
            why = ("no longer in the suite" if inst is None else "a recorded conversation has no system to ask"
                   if inst.test.recorded else "its provider keeps the conversation itself (stateful): no history "
                   "can be given to it" if pool.get(inst.provider, inst.suite).stateful else
                   "no check failed on a turn" if where is None or history is None else None)
            if why is not None or inst is None or where is None or history is None:
                warnings.append(f"{r['test_id']} @ {r['provider']}: {why}; not replayed")
                continue
            specs = _specs(inst, r, where[1])
            if not specs:
                warnings.append(f"{r['test_id']} @ {r['provider']}: its failed checks are no longer in the suite; "
                                "not replayed")
                continue
            targets.append((r, inst, where[0], history, specs))
        check_plan([inst for _, inst, *_ in targets])
        for r, inst, turn, (before, asked), specs in targets:
            outcomes = await asyncio.gather(*(ask(inst, FrozenHistory(before, asked), specs) for _ in range(times)))
            r["at_turn"] = at_turn_figures(turn, list(outcomes))
            rows.append({"test_id": r["test_id"], "provider": r["provider"], "suite": r["suite"], **r["at_turn"]})
    finally:
        await pool.aclose()
    return rows, warnings
