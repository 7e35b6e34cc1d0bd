"""Agents: tool calls inside one user turn (docs/en/agents.md, docs/en/world.md#the-world-and-the-tools).

A `model:` provider's tool calls are answered by evalspec from the suite's `tools:` and `tool_results`
and the model is called again, up to `max_tool_rounds` rounds, unless it sets `answer_tool_calls: false`;
a `python:` provider's calls are answered the same way when the suite has `tools:`. `http:` providers
(and python ones in a suite without tools) report their calls (optionally with a `result`), and so does a
model provider with `answer_tool_calls: false`: they are recorded, not answered. Either way the transcript gets an
assistant message per round with `tool_calls: [{id, name, arguments}]` and a `role: tool` message
per result, all with the turn's number; the turn's reply is its last assistant message.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, cast

from evalspec.config.interpolate import render_value
from evalspec.core.errors import LoadError, ProviderError, TemplateProblem
from evalspec.core.pyref import load_attribute, load_callable
from evalspec.extend.provider import ProviderResponse
from evalspec.extend.replies import NoReply
from evalspec.extend.transcript import ChatMessage, Message, RoundFigures, ToolCall

if TYPE_CHECKING:
    from evalspec.config.model import ProviderSpec, ToolSpec
    from evalspec.providers.world import ToolAnswer

DEFAULT_MAX_TOOL_ROUNDS = 20

# one conversation sends one turn: (messages, turn) -> the reply (`play.runner.TurnCaller`)
SendTurn = Callable[[list[ChatMessage], int], Awaitable[ProviderResponse]]


def parse_arguments(raw: Any) -> Any:
    """A call's arguments as an object: JSON text is parsed; text that is not JSON is kept as text."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


class ReportedCall(ToolCall, total=False):
    """A tool call as a provider reported it, read into one shape; `result`: the answer it reported too
    (an http or python provider that ran the tool itself)."""

    result: Any


def normalize_calls(raw: object, turn: int | None, round_no: int = 1) -> list[ReportedCall]:
    """OpenAI-style (`function: {name, arguments}`) or plain (`{name, arguments}`) calls -> `{id, name, arguments}`.
    A call without an id gets `call_TURN_I` (`call_TURN_ROUND_I` after the turn's first round: each result
    names the call it answers)."""
    prefix = f"call_{turn}_" if round_no == 1 else f"call_{turn}_{round_no}_"
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ProviderError(f"tool_calls must be a list of calls, got {type(raw).__name__}")
    calls: list[ReportedCall] = []
    for i, call in enumerate(raw, 1):
        if not isinstance(call, dict):
            raise ProviderError(f"tool call {i} is {type(call).__name__}; expected a mapping with 'name' and 'arguments'")
        function: Mapping[str, object] = call["function"] if isinstance(call.get("function"), dict) else call
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise ProviderError(f"tool call {i} has no name: {json.dumps(call, ensure_ascii=False, default=str)[:200]}")
        args = function.get("arguments", function.get("args"))
        out: ReportedCall = {"id": str(call.get("id") or f"{prefix}{i}"), "name": name,
                             "arguments": parse_arguments(args)}
        if "result" in call:
            out["result"] = call["result"]
        calls.append(out)
    return calls


def result_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def wire_message(m: Mapping[str, Any]) -> ChatMessage:
    """A transcript message as the OpenAI chat protocol sends it (what providers receive as history)."""
    if m["role"] == "tool":
        return {"role": "tool", "tool_call_id": m.get("tool_call_id") or "", "content": m["content"]}
    if m["role"] == "assistant" and m.get("tool_calls"):
        return {"role": "assistant", "content": m["content"],
                "tool_calls": [{"id": c["id"], "type": "function",
                                "function": {"name": c["name"], "arguments": result_text(c["arguments"])}}
                               for c in m["tool_calls"]]}
    return {"role": m["role"], "content": m["content"]}


# -- declared tools and their results ---------------------------------------------------------

class ToolDeclaration(TypedDict):
    """A declared tool as the OpenAI chat protocol takes it (a provider's `tools:`): `function` holds its
    `name`, `description` and `parameters` (a JSON Schema) as the suite wrote them."""

    type: Literal["function"]
    function: Mapping[str, object]


def load_tools(value: Any, base_dir: Path) -> list[ToolDeclaration] | None:
    """`tools:` as an OpenAI function-tool list: inline, or `FILE.py:NAME` naming a list."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = load_attribute(value, base_dir)
        except LoadError as exc:
            raise ProviderError(f"tools: {exc}") from None
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ProviderError("tools: expected a list of OpenAI function tools ({type: function, function: {name, ...}})")
    return [t if "function" in t else {"type": "function", "function": t} for t in value]


def tool_schema(tools: list[ToolDeclaration] | None, name: str) -> dict[str, Any] | None:
    """The JSON Schema of the declared tool `name` (`{}` when it declares no parameters), or None."""
    for tool in tools or []:
        function = tool.get("function") or {}
        if function.get("name") == name:
            params = function.get("parameters")
            return params if isinstance(params, dict) else {}
    return None


@dataclass
class ToolKit:
    """How one provider's tool calls are handled: answered (model providers) or only recorded. `model`:
    the provider is a model, whose API refuses a history holding a call without its result."""

    answers: bool
    model: bool = False
    tools: list[ToolDeclaration] | None = None
    results: dict[str, object] = field(default_factory=dict)
    max_rounds: int = DEFAULT_MAX_TOOL_ROUNDS
    base_dir: Path = Path(".")
    vars: dict[str, object] = field(default_factory=dict)
    timeout: float = 60.0
    suite_tools: dict[str, ToolSpec] = field(default_factory=dict)  # the suite's `tools:`, answered first
    world: dict[str, Any] | None = None  # this conversation's own world (a deep copy), changed by handlers

    async def answer(self, call: ToolCall, context: Mapping[str, Any]) -> ToolAnswer:
        """The result for one call: the suite's tool of that name (against the world), else `tool_results`
        (a fixed value, a template over `args`, or python)."""
        from evalspec.providers.world import ToolAnswer, answer_tool

        name = call["name"]
        args = call["arguments"]
        variables = {**self.vars, **context.get("vars", {})}
        if name in self.suite_tools:
            return await answer_tool(self.suite_tools[name], args, self.world, self.base_dir, variables,
                                     self.timeout)
        if name not in self.results:
            known = ", ".join(sorted(self.results)) or "none"
            if self.suite_tools:
                raise ProviderError(f"the {'model' if self.model else 'agent'} called '{name}', which is not "
                                    f"among the suite's tools ({', '.join(sorted(self.suite_tools))}) and has no "
                                    f"tool_results entry (tools with results: {known})")
            raise ProviderError(f"the model called '{name}', which has no tool_results entry "
                                f"(tools with results: {known})")
        entry = self.results[name]
        if isinstance(entry, dict) and set(entry) == {"python"}:
            return ToolAnswer(result_text(await self._python(str(entry["python"]), args,
                                                             {**context, "tool": name, "call_id": call["id"]})))
        try:
            return ToolAnswer(result_text(render_value(entry, {**variables, "args": args})))
        except TemplateProblem as exc:
            raise ProviderError(f"tool_results.{name}: {exc}") from None

    async def _python(self, ref: str, args: Any, context: Mapping[str, Any]) -> Any:
        """The user's function, off the loop and under the call time-out (it cannot end or hang the run)."""
        from evalspec.core.errors import UserCodeError
        from evalspec.core.usercode import call_user

        try:
            fn = load_callable(ref, self.base_dir)
        except LoadError as exc:
            raise ProviderError(f"tool_results: {exc}") from None
        try:
            return await asyncio.wait_for(call_user(fn, args, context), self.timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise ProviderError(f"tool_results: {ref} timed out after {self.timeout:g}s") from None
        except UserCodeError as exc:
            raise ProviderError(f"tool_results: {ref} raised {exc}") from exc


def toolkit_for(spec: ProviderSpec, base_dir: Path, variables: Mapping[str, object] | None = None,
                timeout: float = 60.0, suite_tools: Sequence[ToolSpec] = ()) -> ToolKit:
    """How `spec`'s calls are handled: a model's (and, in a suite with `tools:`, a python provider's) are
    answered; a provider's own tool of the name of a suite tool is a ProviderError."""
    from evalspec.config.world import ANSWERED_KINDS

    config = spec.config
    model = spec.kind == "model"
    answered = {t.name: t for t in suite_tools} if spec.kind in ANSWERED_KINDS else {}
    tools = load_tools(config.get("tools"), base_dir)
    if clash := sorted({str(t["function"].get("name")) for t in tools or []} & set(answered)):
        raise ProviderError(f"tools: {', '.join(clash)} is in provider '{spec.id}' `tools` and in the suite's "
                            "`tools:`: declare it once")
    answers = (model and config.get("answer_tool_calls", True) is not False) or (not model and bool(answered))
    return ToolKit(answers=answers, model=model, tools=tools, results=dict(config.get("tool_results") or {}),
                   max_rounds=int(config.get("max_tool_rounds", DEFAULT_MAX_TOOL_ROUNDS)),
                   base_dir=base_dir, vars=dict(variables or {}), timeout=timeout, suite_tools=answered)


def tool_problems(spec: ProviderSpec, base_dir: Path, suite_tools: Sequence[ToolSpec] = ()) -> list[str]:
    """What stops the declared tools, the suite's tools or their python results from loading, found before
    any call."""
    from evalspec.providers.world import handler

    problems = []
    try:
        toolkit_for(spec, base_dir, suite_tools=suite_tools)
        for tool in suite_tools:
            if tool.python is not None:
                handler(tool, base_dir)
    except (ProviderError, LoadError) as exc:
        problems.append(str(exc))
    for name, entry in (spec.config.get("tool_results") or {}).items():
        if isinstance(entry, dict) and set(entry) == {"python"}:
            try:
                load_callable(str(entry["python"]), base_dir)
            except LoadError as exc:
                problems.append(f"tool_results.{name}: {exc}")
    for hook in ("setup", "teardown"):
        ref = spec.config.get(hook)
        if isinstance(ref, str):
            try:
                load_callable(ref, base_dir)
            except LoadError as exc:
                problems.append(f"{hook}: {exc}")
    return problems


# -- the loop ----------------------------------------------------------------------------------

class ToolContext(TypedDict):
    """What a `tool_results` python function gets besides the call's arguments (with `turn`, `tool` and
    `call_id` added per call)."""

    thread_id: str | None
    test_id: str
    vars: dict[str, object]


class TurnLog(Protocol):
    """What `play_turn` writes to: the conversation's transcript."""

    messages: list[Message]
    calls: int
    cached_calls: int

    def history(self) -> list[ChatMessage]: ...


FIGURES = ("latency_ms", "tokens", "cost", "prompt_tokens", "completion_tokens",
           "strategy_tokens", "strategy_cost", "strategy_calls")
MessageFn = Callable[[ProviderResponse, int], Message]


def _total(values: list[Any]) -> Any:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


async def play_turn(call: SendTurn, log: TurnLog, turn: int, kit: ToolKit | None, context: ToolContext,
                    assistant_message: MessageFn, silent_ok: bool = False) -> Message:
    """Get the reply to user turn `turn` (already in `log`), answering tool calls round by round.

    Returns the turn's reply (its last assistant message), whose latency, tokens and cost are the
    sums over the turn's rounds (each round's own figures are kept in its `rounds` list). A provider
    error, a call with no result or one round too many raises ProviderError after the offending
    message has been recorded. No reply (`NoReply`) is such an error unless `silent_ok` (the turn says
    `no_reply: ok`): then the turn's reply is empty, flagged `no_reply`.
    """
    if kit is not None and kit.model and not kit.answers and (reported := unanswered_turn(log.messages)):
        raise ProviderError(f"the model's tool calls at turn {reported} were reported, not answered "
                            "(answer_tool_calls: false), and the conversation goes on: a model's API refuses a "
                            "history whose tool calls have no results. End the test at that turn, or answer "
                            "the calls (tool_results, without answer_tool_calls: false)")
    rounds: list[RoundFigures] = []  # each tool round's figures (a turn without tool rounds has none)
    while True:
        silent = False
        try:
            response = await call(log.history(), turn)
        except NoReply as exc:
            if not silent_ok:
                raise
            response, silent = exc.response, True
        log.calls += int(not response.cached)
        log.cached_calls += int(response.cached)
        calls = normalize_calls(response.tool_calls, turn, len(rounds) + 1)
        message = assistant_message(response, turn)
        if silent:  # silent by design: an empty reply that checks see as such
            message["no_reply"] = True
        message.pop("tool_calls", None)
        if calls:
            message["tool_calls"] = [ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in calls]
        figures = cast(dict[str, object], message)  # the FIGURES keys, each a Message key, by name
        answering = bool(calls) and kit is not None and kit.answers
        if rounds or answering:
            rounds.append(cast(RoundFigures, {k: figures[k] for k in FIGURES if k in figures}))
        if not answering:
            if len(rounds) > 1:
                keys = [k for k in FIGURES if any(k in r for r in rounds)]
                figures.update({k: _total([r.get(k) for r in rounds]) for k in keys})
                if message["latency_ms"] is not None:
                    message["latency_ms"] = round(message["latency_ms"], 3)
                figures["rounds"] = rounds
            log.messages.append(message)  # the reply the loop's `make` built
            log.messages.extend(_tool_message(c, result_text(c["result"]), turn) for c in calls if "result" in c)
            return message
        assert kit is not None
        for k in FIGURES:  # the turn's figures are summed on its reply; a round carries none of its own
            figures.pop(k, None)
        message.update({"latency_ms": None, "tokens": None, "cost": None, "intermediate": True})
        log.messages.append(message)
        if len(rounds) > kit.max_rounds:
            raise ProviderError(f"the {'model' if kit.model else 'agent'} still called tools after "
                                f"{kit.max_rounds} rounds (max_tool_rounds: {kit.max_rounds})")
        for c in calls:
            answer = await kit.answer(c, {**context, "turn": turn})
            log.messages.append(_tool_message(c, answer.content, turn, answer.error))


def unanswered_turn(messages: list[Message]) -> int | None:
    """The turn of the first sent tool call that no `role: tool` message answers, or None."""
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    for m in messages:
        if m["role"] == "assistant" and not m.get("not_sent") and any(
                c["id"] not in answered for c in m.get("tool_calls") or []):
            return cast(int, m.get("turn"))
    return None


def _tool_message(call: ToolCall, content: str, turn: int, error: str | None = None) -> Message:
    message: Message = {"role": "tool", "content": content, "turn": turn, "tool_call_id": call["id"],
                        "name": call["name"], "latency_ms": None, "tokens": None, "cost": None}
    if error is not None:  # the handler raised: the agent got {"error": ...} (docs/en/world.md#the-world-and-the-tools)
        message["error"] = error
    return message


def call_text(call: Mapping[str, Any], limit: int = 300) -> str:
    """`book_test_drive({"model": "瑶光"})` — one call on one line."""
    args = call.get("arguments")
    text = f"{call.get('name')}({result_text(args) if args not in (None, {}) else ''})"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_lines(m: Mapping[str, Any]) -> list[str]:
    """A message's tool calls or tool result as transcript lines (what judges read)."""
    if m["role"] == "assistant" and m.get("tool_calls"):
        return [f"[turn {m.get('turn')}] Assistant called tool {call_text(c)}" for c in m["tool_calls"]]
    if m["role"] == "tool":
        return [f"[turn {m.get('turn')}] Tool {m.get('name')} returned: {m['content']}"]
    return []
