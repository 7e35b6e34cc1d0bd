"""Simulated users: a model plays a persona with a goal, turn by turn, until a stop condition holds.

The simulator sees the conversation with roles flipped (its own messages as `assistant`) and never
sees any assertion or rubric. `max_turns` counts user messages sent, `opening` and `fixed` included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, cast

from evalspec.assertions.graded import format_transcript
from evalspec.core.errors import EvalspecError, GradingError, ProviderError, UserCodeError
from evalspec.core.usercode import in_thread
from evalspec.extend.check import JudgeFn, JudgeRequest, JudgeVerdict
from evalspec.extend.patterns import regex_time_limit, search
from evalspec.extend.provider import CallContext
from evalspec.extend.transcript import ChatMessage, Message, replies
from evalspec.plan.build import Instance
from evalspec.play.faults import Said, SimulatorFault, simulator_fault
from evalspec.play.turns import NextMessage, TurnError, flipped, play_turns, user_message
from evalspec.providers.answers import Shown, answer_text, own_objects, plain_text, read_answer, within_turn
from evalspec.providers.factory import ProviderPool
from evalspec.providers.judge import ask
from evalspec.providers.python_user import load_scripted_user, next_message
from evalspec.providers.structured import MESSAGE_MAX_CHARS, SIMULATOR_MAX_TOKENS
from evalspec.providers.tool_rounds import SendTurn, ToolKit
from evalspec.results.transcript import Transcript

__all__ = ["MESSAGE_SCHEMA", "SimulatedUser", "flipped", "message_text", "run_simulated", "simulator_prompt"]

DEFAULT_MARKER = "###STOP###"
MESSAGE_SCHEMA = {"type": "object", "properties": {"message": {"type": "string", "maxLength": MESSAGE_MAX_CHARS}},
                  "required": ["message"], "additionalProperties": False}


def simulator_prompt(persona: str, goal: str, marker: str | None, instructions: str | None = None) -> str:
    """The simulator's system prompt: `instructions` (one text, docs/en/agents.md#instructions) in place
    of the persona and the goal, or beside the current milestone's goal."""
    lines = ["You are role-playing a human user who is chatting with an AI assistant. Stay in character."]
    if instructions:
        lines.append(f"Instructions: {instructions}")
    if persona:
        lines.append(f"Persona: {persona}")
    if goal:
        lines.append(f"Your goal: {goal}")
    lines += [
        "Write only your next message to the assistant: no role labels, no quotes, no explanations. "
        "Use the language of your persona.",
        'Answer with a JSON object with one key, "message": your next message.',
    ]
    if marker:
        lines.append(f"When your goal is achieved, or you give up, reply with exactly {marker} and nothing else.")
    return "\n".join(lines)


class SimulatedUser:
    """A model (or a python function) playing the persona: `opening` and `fixed` first, then its own
    messages, until its stop marker, a stop condition or `max_turns`."""

    stop_reason: str = "max_turns"
    who: str | None = "simulated user"

    def __init__(self, inst: Instance, pool: ProviderPool, replay: bool) -> None:
        sim = inst.test.simulate
        assert sim is not None
        suite = inst.suite
        self.inst, self.sim, self.replay = inst, sim, replay
        self.scripted_user = load_scripted_user(inst) if sim.python else None
        self.spec = sim.model or inst.simulator or suite.simulator
        if self.spec is None and self.scripted_user is None:
            raise ProviderError("a simulated user needs a model: set `simulator:` in the suite or `simulate.model`")
        self.simulator = pool.get(self.spec, suite) if self.spec is not None and self.scripted_user is None else None
        self.judge = pool.judge_fn(suite)
        marker = next((str(c["user_says"]) for c in sim.stop_when if "user_says" in c), None)
        if marker is None and self.scripted_user is not None:
            marker = DEFAULT_MARKER  # a scripted user may stop the tau-bench way too, not only by returning None
        self.marker = marker
        self.patterns = [str(c["assistant_matches"]) for c in sim.stop_when if "assistant_matches" in c]
        self.goal_met = any(c.get("goal_met") for c in sim.stop_when)
        self.system = simulator_prompt(sim.persona, sim.goal, marker, sim.instructions)
        self.scripted = [m for m in [sim.opening, *sim.fixed] if m]
        self.turn = 0  # user messages sent
        self.own: str | None = None  # the simulator's previous message of its own (fixed turns are not)
        # docs/en/agents.md#milestones: the plan's position, the current goal's number and its turns so far
        self.plan, self.step, self.used = list(sim.milestones), 0, 0
        self.numbers = _goal_numbers(self.plan)

    async def next_message(self, transcript: Transcript) -> NextMessage | None:
        turn, marker = self.turn, self.marker
        if turn >= self.sim.max_turns:
            return None
        flags: dict[str, object] = {}
        if turn < len(self.scripted):
            text = self.scripted[turn]
        elif self.plan:
            if self.step >= len(self.plan):
                self.stop_reason = "milestones_met"
                return None
            entry = self.plan[self.step]
            if "user" in entry:  # a fixed turn between milestones: never checked for faults
                self.step += 1
                self.turn += 1
                return NextMessage(user_message(str(entry["user"]), self.turn))
            if self.scripted_user is not None:  # a python user is told the current goal (docs/en/agents.md#milestones)
                if (said := await self._scripted(transcript, turn + 1, str(entry["goal"]))) is None:
                    return None
                text = said
            else:
                system = simulator_prompt(self.sim.persona, str(entry["goal"]), marker, self.sim.instructions)
                text = await self._simulated(transcript, turn + 1, system)
            self._check(text, transcript)
            flags["milestone"] = self.numbers[self.step]
        elif self.scripted_user is not None:
            if (said := await self._scripted(transcript, turn + 1)) is None:
                return None
            text = said
            self._check(text, transcript)  # a python user is a simulator too: its slips are the harness's
        else:
            text = await self._simulated(transcript, turn + 1)
            self._check(text, transcript)
        if marker and marker in text and turn >= len(self.scripted):  # done: recorded, never sent (python users too)
            return NextMessage(user_message(text, None, not_sent=True), call=False, stop="user_says")
        self.turn += 1
        if flags:
            self.used += 1
        return NextMessage(user_message(text, self.turn, **flags))

    async def _scripted(self, transcript: Transcript, turn: int, goal: str | None = None) -> str | None:
        """The python user's next message, or None when it stops (`stop_reason: user_says`)."""
        try:
            said = await next_message(self.scripted_user, self.inst, transcript.messages, turn, goal)
        except ProviderError as exc:
            raise TurnError(str(exc)) from exc
        if said is None:
            self.stop_reason = "user_says"
        return said

    def _check(self, text: str, transcript: Transcript) -> None:
        """A simulator message that is a slip (play/faults.py) is recorded, never sent, and ends the
        conversation in an error attributed to the simulator."""
        sim = self.sim
        heard = replies(transcript.messages, golden=True)
        said = Said(previous_own=self.own, previous_reply=str(heard[-1]["content"] or "") if heard else None,
                    # what it was told: the texts, each milestone's goal, and the prompt around them
                    instructions=[t for t in (sim.persona, sim.goal, sim.instructions, *_goals(self.plan), self.system) if t],
                    marker=self.marker, max_chars=sim.max_chars)
        if (fault := simulator_fault(text, said)) is not None:
            transcript.messages.append(user_message(text, None, not_sent=True))
            raise SimulatorFault(f"simulator fault at turn {self.turn + 1}: {fault}")
        self.own = text

    async def _simulated(self, transcript: Transcript, turn: int, system: str | None = None) -> str:
        inst, spec = self.inst, self.spec
        assert self.simulator is not None and spec is not None
        context = CallContext(thread_id="simulator", test_id=inst.test_id, turn=turn, vars=inst.vars,
                              repeat=inst.repeat)
        messages: list[ChatMessage] = [{"role": "system", "content": system or self.system},
                                       *flipped(transcript.messages)]
        try:
            answer = await ask(self.simulator, JudgeRequest(
                messages, schema=MESSAGE_SCHEMA,
                name="user_message", max_tokens=int(spec.config.get("max_tokens") or SIMULATOR_MAX_TOKENS),
                role="simulator", parse=False, context=context, seed=inst.suite.option("seed"), read=self.replay))
        except ProviderError as exc:
            raise TurnError(f"simulator: {exc}") from exc
        transcript.judge_usage.append(answer.usage)  # counted whether or not the answer is usable
        try:
            return message_text(answer.text, self.marker, shown=Shown(messages))
        except GradingError as exc:
            raise TurnError(str(exc)) from exc

    async def stop_after(self, transcript: Transcript, reply: Message, turn: int) -> str | None:
        try:
            if (ended := await self._milestone(transcript, reply, turn)) is not None:
                return ended
            await self._checkpoints(transcript, reply, turn)
            if self.patterns and await _matches_off_loop(self.patterns, reply["content"],
                                                         float(self.inst.suite.option("grade_timeout"))):
                return "assistant_matches"
            if self.goal_met and self.judge is not None and turn >= self.sim.min_turns:
                try:
                    verdict = await _goal_met(self.judge, self.sim.goal or self.sim.instructions or "", transcript.messages)
                except GradingError as exc:  # the unusable answer was a call made: it counts
                    transcript.judge_usage.extend(exc.usage)
                    raise
                transcript.judge_usage.append(verdict.usage)
                if verdict.answer.get("pass") is True:
                    return "goal_met"
        except (EvalspecError, UserCodeError) as exc:
            raise TurnError(f"stop condition: {exc}") from exc
        return None


    async def _milestone(self, transcript: Transcript, reply: Message, turn: int) -> str | None:
        """After a reply to the current milestone's message: met (the plan moves on; `milestones_met` when
        nothing is left), missed (`milestone_missed` once its `max_turns` are played), or neither."""
        said = next((m for m in reversed(transcript.messages) if m["role"] == "user"), None)
        if said is None or self.step >= len(self.plan) or said.get("milestone") != self.numbers[self.step]:
            return None
        entry = self.plan[self.step]
        if await self._done(dict(entry["done_when"]), transcript, reply, turn):
            reply["milestone_met"] = cast(int, self.numbers[self.step])  # a goal's entry: it has a number
            self.step, self.used = self.step + 1, 0
            return "milestones_met" if self.step >= len(self.plan) else None
        return "milestone_missed" if self.used >= int(entry["max_turns"]) else None

    async def _checkpoints(self, transcript: Transcript, reply: Message, turn: int) -> None:
        """The checkpoints due after turn `turn` (docs/en/agents.md#checkpoints): the judge's verdict on
        each criterion over the conversation so far, recorded on the reply for `trajectory:checkpoints`."""
        for point in self.sim.checkpoints:
            due = turn == point["after_turn"] if "after_turn" in point else turn % int(point["every"]) == 0
            if not due or turn < int(point.get("min_turns", self.sim.min_turns)):
                continue
            if self.judge is None:
                raise GradingError("checkpoints need a judge: set `judge:` in the suite")
            for criterion in point["criteria"]:
                try:
                    verdict = await _criterion_met(self.judge, str(criterion), transcript.messages)
                except GradingError as exc:
                    transcript.judge_usage.extend(exc.usage)
                    raise
                transcript.judge_usage.append(verdict.usage)
                reply.setdefault("checkpoints", []).append(
                    {"criterion": str(criterion), "pass": verdict.answer.get("pass") is True,
                     "reason": str(verdict.answer.get("reason") or "")})

    async def _done(self, when: Mapping[str, object], transcript: Transcript, reply: Message, turn: int) -> bool:
        """A milestone's `done_when`: a pattern over the reply, a state check (docs/en/state.md) or a judge
        criterion over the conversation so far."""
        if "assistant_matches" in when:
            return await _matches_off_loop([str(when["assistant_matches"])], str(reply["content"] or ""),
                                           float(self.inst.suite.option("grade_timeout")))
        if "state" in when:
            return state_holds(when["state"], transcript, turn, self.inst)
        if self.judge is None:
            raise GradingError("a milestone's `done_when: {judge: ...}` needs a judge: set `judge:` in the suite")
        try:
            verdict = await _criterion_met(self.judge, str(when["judge"]), transcript.messages)
        except GradingError as exc:
            transcript.judge_usage.extend(exc.usage)
            raise
        transcript.judge_usage.append(verdict.usage)
        return verdict.answer.get("pass") is True


def _goals(plan: Sequence[Mapping[str, object]]) -> list[str]:
    return [str(entry["goal"]) for entry in plan if "goal" in entry]


def _goal_numbers(plan: Sequence[Mapping[str, object]]) -> list[int | None]:
    """Each plan entry's milestone number (1-based over the goals), None for a fixed `user:` turn."""
    numbers: list[int | None] = []
    for entry in plan:
        numbers.append(sum(1 for n in numbers if n is not None) + 1 if "goal" in entry else None)
    return numbers


def state_holds(check: Any, transcript: Transcript, turn: int, inst: Instance) -> bool:
    """A `done_when: {state: ...}` holds on turn `turn`'s reply: the `state` check's own rule (one owner)."""
    from evalspec.assertions.state import state_check
    from evalspec.config.model import AssertionSpec
    from evalspec.extend.check import GradingContext, Reply

    spec = AssertionSpec(type="state", negate=False, value=check)
    ctx = GradingContext(transcript=list(transcript.messages), labels={}, vars=inst.vars, test_id=inst.test_id,
                         turn=turn, suite_dir=inst.suite.path.parent)
    return bool(state_check(Reply(text="", turn=turn), spec, ctx).passed)


async def run_simulated(inst: Instance, call: SendTurn, pool: ProviderPool, replay: bool = True,
                        kit: ToolKit | None = None) -> Transcript:
    return await play_turns(SimulatedUser(inst, pool, replay), inst, call, kit)


async def _matches_off_loop(patterns: list[str], text: str, limit: float) -> bool:
    """`assistant_matches` patterns are checked on a worker thread, within the grading time limit."""

    def matches() -> bool:
        with regex_time_limit(limit):
            return any(search(p, text) for p in patterns)

    try:
        return await asyncio.wait_for(in_thread(matches), limit + 1)
    except asyncio.TimeoutError:
        raise GradingError(f"assistant_matches timed out after {limit:g}s (options.grade_timeout)") from None


def message_text(content: str, marker: str | None, *, shown: Shown) -> str:
    """The simulated user's message (docs/en/judges.md#what-the-simulator-answers): the `message` of
    its JSON answer, read like a judge's verdict against the conversation it was `shown`; an answer that
    holds no object is plain text and is the message itself. An empty message, a format example or an
    object quoted from the conversation is an error; an answer holding the stop marker stops."""
    try:
        verdict = read_answer(content, MESSAGE_SCHEMA, shown=shown, role="simulator")
    except GradingError:
        said = plain_text(content, MESSAGE_SCHEMA, shown=shown)
        if said is None and marker and marker in answer_text(content):  # told to answer the marker alone
            said = marker
        if said is None:
            if _empty_message(content, shown):
                return ""
            raise
        verdict = {"message": said}
    message = verdict.get("message")
    if isinstance(message, str) and not message.strip():
        return ""  # an empty message: a simulator fault (play/faults.py), not a refusal
    if not isinstance(message, str) or not within_turn(message):
        raise GradingError(f"simulator answer has no message: {content.strip()[:200]!r}")
    return within_turn(message)


def _empty_message(content: str, shown: Shown) -> bool:
    """`{"message": ""}` (read as a format example): the simulator said nothing."""
    return any(isinstance(said := v.get("message"), str) and not said.strip()
               for _, _, v in own_objects(answer_text(content), shown))


async def _criterion_met(judge: JudgeFn, criterion: str, messages: list[Message]) -> JudgeVerdict:
    """The judge's verdict on whether a milestone's criterion holds by now."""
    prompt = (f"Conversation:\n{format_transcript(messages)}\n\nCriterion: {criterion}\n\n"
              "Does the conversation so far meet the criterion? Answer with a JSON object with two keys: "
              '"reason" (one sentence of your own) and "pass" (true or false).')
    return await judge(JudgeRequest([{"role": "user", "content": prompt}]))


async def _goal_met(judge: JudgeFn, goal: str, messages: list[Message]) -> JudgeVerdict:
    """The judge's verdict on whether the goal is met by now."""
    prompt = (f"The user's goal: {goal}\n\nConversation:\n{format_transcript(messages)}\n\n"
              "Has the user's goal been achieved by now? Answer with a JSON object with two keys: "
              '"reason" (one sentence of your own) and "pass" (true or false).')
    return await judge(JudgeRequest([{"role": "user", "content": prompt}]))
