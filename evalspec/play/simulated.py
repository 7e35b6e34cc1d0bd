"""Simulated users: a model plays a persona with a goal, turn by turn, until a stop condition holds.

The simulator sees the conversation with roles flipped (its own messages as `assistant`) and never
sees any assertion or rubric. `max_turns` counts user messages sent, `opening` and `fixed` included.
"""

from __future__ import annotations

import asyncio
from typing import Any

from evalspec.assertions.graded import format_transcript
from evalspec.core.errors import EvalspecError, GradingError, ProviderError
from evalspec.core.usercode import UserCodeError, in_thread
from evalspec.extend.patterns import regex_time_limit, search
from evalspec.extend.provider import CallContext
from evalspec.plan.build import Instance
from evalspec.play.scripted import CallFn, Transcript, assistant_message, tool_context, user_message
from evalspec.providers.factory import ProviderPool
from evalspec.providers.python_user import load_scripted_user, next_message
from evalspec.providers.structured import SIMULATOR_MAX_TOKENS, call_structured, call_usage
from evalspec.providers.tool_rounds import ToolKit, play_turn

DEFAULT_MARKER = "###STOP###"
MESSAGE_SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"],
                  "additionalProperties": False}


def simulator_prompt(persona: str, goal: str, marker: str | None) -> str:
    lines = [
        "You are role-playing a human user who is chatting with an AI assistant. Stay in character.",
        f"Persona: {persona}",
        f"Your goal: {goal}",
        "Write only your next message to the assistant: no role labels, no quotes, no explanations. "
        "Use the language of your persona.",
        'Answer with a JSON object with one key, "message": your next message.',
    ]
    if marker:
        lines.append(f"When your goal is achieved, or you give up, reply with exactly {marker} and nothing else.")
    return "\n".join(lines)


def flipped(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The conversation from the simulated user's side: tool calls and results are not shown (a real
    user does not see them), nor the rounds before a turn's reply."""
    flip = {"user": "assistant", "assistant": "user"}
    return [{"role": flip[m["role"]], "content": m["content"]} for m in messages
            if m["role"] in flip and not m.get("intermediate")]


async def run_simulated(inst: Instance, call: CallFn, pool: ProviderPool, replay: bool = True,
                        kit: ToolKit | None = None) -> Transcript:
    return replied(await _simulate(inst, call, pool, replay, kit), "simulated user")


def replied(transcript: Transcript, who: str) -> Transcript:
    """A simulated conversation that ended before any assistant reply is an error, never a run of checks
    over zero replies (`not-after`, `at-most`, `turn-count` would all pass on nothing)."""
    if transcript.error is None and not any(m["role"] == "assistant" for m in transcript.messages):
        transcript.error = (f"the {who} stopped ({transcript.stop_reason}) before the assistant replied: "
                            "a simulated conversation needs at least one reply")
        transcript.stop_reason = "error"
    return transcript


async def _simulate(inst: Instance, call: CallFn, pool: ProviderPool, replay: bool,
                    kit: ToolKit | None) -> Transcript:
    sim = inst.test.simulate
    assert sim is not None
    suite = inst.suite
    scripted_user = load_scripted_user(inst) if sim.python else None
    spec = sim.model or suite.simulator
    if spec is None and scripted_user is None:
        raise ProviderError("a simulated user needs a model: set `simulator:` in the suite or `simulate.model`")
    simulator = pool.get(spec, suite) if spec is not None and scripted_user is None else None
    judge = pool.judge_fn(suite)
    marker = next((str(c["user_says"]) for c in sim.stop_when if "user_says" in c), None)
    if marker is None and scripted_user is not None:
        marker = DEFAULT_MARKER  # a scripted user may stop the tau-bench way too, not only by returning None
    patterns = [str(c["assistant_matches"]) for c in sim.stop_when if "assistant_matches" in c]
    goal_met = any(c.get("goal_met") for c in sim.stop_when)
    system = simulator_prompt(sim.persona, sim.goal, marker)
    scripted = [m for m in [sim.opening, *sim.fixed] if m]
    transcript = Transcript(stop_reason="max_turns")
    turn = 0
    while turn < sim.max_turns:
        if turn < len(scripted):
            text = scripted[turn]
        elif scripted_user is not None:
            try:
                said = await next_message(scripted_user, inst, transcript.messages, turn + 1)
            except ProviderError as exc:
                transcript.stop_reason, transcript.error = "error", str(exc)
                return transcript
            if said is None:
                transcript.stop_reason = "user_says"
                return transcript
            text = said
        else:
            assert simulator is not None and spec is not None
            context = CallContext(thread_id="simulator", test_id=inst.test_id, turn=turn + 1, vars=inst.vars,
                                  repeat=inst.repeat)
            try:
                answer = await call_structured(
                    simulator, [{"role": "system", "content": system}, *flipped(transcript.messages)], context,
                    name="user_message", schema=MESSAGE_SCHEMA, seed=suite.option("seed"), read=replay,
                    max_tokens=int(spec.config.get("max_tokens") or SIMULATOR_MAX_TOKENS))
            except ProviderError as exc:
                transcript.stop_reason, transcript.error = "error", f"simulator: {exc}"
                return transcript
            transcript.judge_usage.append(call_usage(answer))  # counted whether or not the answer is usable
            try:
                text = message_text(answer.content, marker)
            except GradingError as exc:
                transcript.stop_reason, transcript.error = "error", str(exc)
                return transcript
        if marker and marker in text and turn >= len(scripted):  # done: recorded, never sent (python users too)
            transcript.messages.append(user_message(text, None, not_sent=True))
            transcript.stop_reason = "user_says"
            return transcript
        turn += 1
        transcript.messages.append(user_message(text, turn))
        try:
            reply = await play_turn(call, transcript, turn, kit, tool_context(inst, call), assistant_message)
        except ProviderError as exc:
            transcript.stop_reason, transcript.error = "error", f"turn {turn}: {exc}"
            return transcript
        try:
            if patterns and await _matches_off_loop(patterns, reply["content"], float(suite.option("grade_timeout"))):
                transcript.stop_reason = "assistant_matches"
                return transcript
            if goal_met and judge is not None:
                try:
                    verdict = await _goal_met(judge, sim.goal, transcript.messages)
                except GradingError as exc:  # the unusable answer was a call made: it counts
                    transcript.judge_usage.extend(exc.usage)
                    raise
                transcript.judge_usage.append(verdict.get("_judge") or {})
                if verdict.get("pass") is True:
                    transcript.stop_reason = "goal_met"
                    return transcript
        except (EvalspecError, UserCodeError) as exc:
            transcript.stop_reason, transcript.error = "error", f"stop condition: {exc}"
            return transcript
    return transcript


async def _matches_off_loop(patterns: list[str], text: str, limit: float) -> bool:
    """`assistant_matches` patterns are checked on a worker thread, within the grading time limit."""

    def matches() -> bool:
        with regex_time_limit(limit):
            return any(search(p, text) for p in patterns)

    try:
        return await asyncio.wait_for(in_thread(matches), limit + 1)
    except asyncio.TimeoutError:
        raise GradingError(f"assistant_matches timed out after {limit:g}s (options.grade_timeout)") from None


def message_text(content: str, marker: str | None = None) -> str:
    """The simulated user's message: the `message` of its JSON answer, read like a judge's verdict (the
    last complete answer; a format example, prose only or an empty message is an error), or the stop
    marker when the answer is only that."""
    from evalspec.providers.judge import answer_text, parse_verdict

    try:
        verdict = parse_verdict(content, MESSAGE_SCHEMA, role="simulator")
    except GradingError:
        said = answer_text(content).strip()
        if marker and marker in said:  # told to answer the marker "and nothing else"
            return said
        raise
    message = verdict.get("message")
    if not isinstance(message, str) or not message.strip():
        raise GradingError(f"simulator answer has no message: {content.strip()[:200]!r}")
    return message.strip()


async def _goal_met(judge: Any, goal: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The judge's verdict on whether the goal is met by now (its usage in `_judge`)."""
    prompt = (f"The user's goal: {goal}\n\nConversation:\n{format_transcript(messages)}\n\n"
              "Has the user's goal been achieved by now? Answer with a JSON object with two keys: "
              '"reason" (one sentence of your own) and "pass" (true or false).')
    verdict: dict[str, Any] = await judge([{"role": "user", "content": prompt}], {"sample": 0})
    return verdict
