"""Client-side context strategies: what a `model:` or `python:` provider is sent of the conversation.

`history: {mode, turns, model}` on a provider:
- `full` (default): the whole history;
- `window`: the last `turns` complete exchanges (a user message and the replies to it) + the new message;
- `summary`: the window, and every exchange older than it folded, one exchange at a time, into a running
  summary written by `model` and appended to the system message;
- `facts`: the window, and the facts the user stated (extracted by `model` from each exchange, the newer
  replacing the older) appended to the system message as a list.

Strategy calls go through their own `ProviderCaller` (cached, limited, retried) and ask for structured
output with `max_tokens`; their usage is returned beside the built messages and recorded apart
(`strategy_tokens`, `strategy_cost`). A fold already computed for the same exchanges is reused from memory;
when another conversation made it, it is charged to this one too (as cached calls with their tokens and cost).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from evalspec.config.strategies import NEEDS_MODEL
from evalspec.core.errors import GradingError, ProviderError
from evalspec.extend.kinds import takes_history
from evalspec.extend.provider import CallContext, ProviderResponse
from evalspec.extend.transcript import ChatMessage
from evalspec.providers.answers import Shown, plain_text, read_answer

if TYPE_CHECKING:
    from evalspec.config.model import ProviderSpec, Suite
    from evalspec.providers.calls import ProviderCaller

DEFAULT_MAX_TOKENS = {"summary": 500, "facts": 400}
MEMO_SIZE = 4096

SUMMARY_SYSTEM = (
    "You keep a running summary of a conversation between a user and an assistant. You get the summary so far "
    "and one new exchange; answer with the updated summary. Keep every fact the user stated (names, places, "
    "numbers, preferences, decisions), what each request was and where it stands; when the user corrects or "
    "changes something, keep only the newest version and say it changed. Be brief. Write in the language of "
    'the conversation. Answer with a JSON object with one key, "summary": the updated summary.'
)
FACTS_SYSTEM = (
    "You keep a list of the facts a user has stated in a conversation with an assistant: who they are, their "
    "situation, preferences, constraints and requests. You get the list so far and one new exchange; answer "
    "with the updated list. Add what the user stated in the new exchange; when it replaces or contradicts an "
    "older fact, drop the older one. Never add what only the assistant said. One short fact per item, in the "
    'language of the conversation. Answer with a JSON object with one key, "facts": the list of facts.'
)
SCHEMAS = {
    "summary": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"],
                "additionalProperties": False},
    "facts": {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
              "required": ["facts"], "additionalProperties": False},
}
HEADINGS = {"summary": "Summary of the earlier conversation:", "facts": "Facts the user has stated:"}


def exchanges(messages: list[ChatMessage]) -> list[list[ChatMessage]]:
    """Complete exchanges: a user message and every message after it up to the next user message,
    when at least one of them is the assistant's. Anything else (a user message left unanswered) is dropped."""
    groups: list[list[ChatMessage]] = []
    for m in messages:
        if m.get("role") == "user" or not groups:
            groups.append([m])
        else:
            groups[-1].append(m)
    return [g for g in groups if g[0].get("role") == "user" and any(m.get("role") == "assistant" for m in g[1:])]


def split_current(messages: list[ChatMessage]) -> tuple[list[ChatMessage], list[ChatMessage]]:
    """(the exchanges before this turn, this turn: its user message and its tool rounds so far, docs/en/agents.md)."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=len(messages) - 1)
    return messages[:last_user], messages[last_user:]


def window(messages: list[ChatMessage], turns: int) -> list[ChatMessage]:
    """The last `turns` complete exchanges + the new user message (with this turn's tool rounds so far)."""
    prior, current = split_current(messages)
    kept = exchanges(prior)[-turns:] if turns > 0 else []
    return [m for group in kept for m in group] + current


@dataclass
class StrategyUsage:
    """The strategy's own calls during one turn."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    cost: float | None = None

    def add(self, response: ProviderResponse) -> None:
        if response.cached:
            self.cached_calls += 1
        else:
            self.calls += 1
        self.prompt_tokens += response.prompt_tokens or 0
        self.completion_tokens += response.completion_tokens or 0
        self.tokens += response.tokens or (response.prompt_tokens or 0) + (response.completion_tokens or 0)
        if response.cost is not None:
            self.cost = (self.cost or 0.0) + response.cost

    def add_usage(self, other: StrategyUsage) -> None:
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.tokens += other.tokens
        if other.cost is not None:
            self.cost = (self.cost or 0.0) + other.cost

    def charge(self, upto: Fold, since: Fold | None) -> None:
        """The folds after `since` up to `upto`, made for another conversation, charged to this one: counted
        as cached calls, their tokens and cost added (docs/en/rule-self-tests.md#verdicts-that-hold: a shared strategy call is charged to each)."""
        self.cached_calls += upto.steps - (since.steps if since else 0)
        self.prompt_tokens += upto.prompt_tokens - (since.prompt_tokens if since else 0)
        self.completion_tokens += upto.completion_tokens - (since.completion_tokens if since else 0)
        self.tokens += upto.tokens - (since.tokens if since else 0)
        if upto.cost is not None:
            self.cost = (self.cost or 0.0) + upto.cost - ((since.cost or 0.0) if since else 0.0)

    def to_json(self) -> dict[str, int | float | None]:
        return {"calls": self.calls, "cached_calls": self.cached_calls, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "tokens": self.tokens, "cost": self.cost}


@dataclass
class Fold:
    """A memoised running summary (or fact list) after `steps` folds, with what those folds used in all,
    and the conversations (thread ids) they have been charged to."""

    state: Any
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    cost: float | None = None
    charged: set[str] = field(default_factory=set)

    def then(self, state: Any, step: StrategyUsage, conversation: str) -> Fold:
        """The fold after one more step that used `step`, charged to `conversation`."""
        cost = self.cost if step.cost is None else (self.cost or 0.0) + step.cost
        return Fold(state, self.steps + 1, self.prompt_tokens + step.prompt_tokens,
                    self.completion_tokens + step.completion_tokens, self.tokens + step.tokens, cost, {conversation})


@dataclass
class ContextStrategy:
    mode: str = "full"
    turns: int | None = None
    max_tokens: int | None = None
    model: Any = None  # the `history.model` as written (a model string or a provider mapping)
    caller: ProviderCaller | None = None
    _memo: OrderedDict[str, Fold] = field(default_factory=OrderedDict)

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> ContextStrategy:
        """The `history:` of a provider's configuration (docs/en/memory-and-curves.md)."""
        written = config.get("history") or {}
        history: Mapping[str, object] = written if isinstance(written, Mapping) else {}
        mode = str(history.get("mode", "full"))
        raw = history.get("turns")  # the preflight also reads suites the loader found wrong: no count, no turns
        count = isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw)
        turns = int(raw) if isinstance(raw, (int, float)) and count and mode != "full" else None
        max_tokens = cast(int | None, history.get("max_tokens")) or DEFAULT_MAX_TOKENS.get(mode)
        return cls(mode=mode, turns=turns, max_tokens=max_tokens, model=history.get("model"))

    def identity(self) -> Any:
        """The strategy's part of the provider's cache identity (full: None, window: N, as before v2)."""
        if self.mode == "full":
            return None
        if self.mode == "window":
            return self.turns
        return {"mode": self.mode, "turns": self.turns, "max_tokens": self.max_tokens,
                "model": self.caller.provider.cache_identity() if self.caller else self.model}

    def describe(self) -> str:
        return "full" if self.mode == "full" else f"{self.mode} {self.turns}"

    async def build(self, system: str | None, messages: list[ChatMessage],
                    context: CallContext) -> tuple[list[ChatMessage], StrategyUsage]:
        """The messages to send (system message first, when there is one) and the strategy's own usage."""
        usage = StrategyUsage()
        if self.mode == "full":
            body = list(messages)
        else:
            body = window(messages, self.turns or 0)
        if self.mode in NEEDS_MODEL:
            prior, _ = split_current(messages)
            done = exchanges(prior)
            folded = done[: max(0, len(done) - (self.turns or 0))] if self.mode == "summary" else done
            state = await self._fold(folded, context, usage)
            note = render_state(self.mode, state)
            if note:
                system = f"{system}\n\n{note}" if system else note
        head: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
        return head + body, usage

    async def _fold(self, groups: list[list[ChatMessage]], context: CallContext, usage: StrategyUsage) -> Any:
        """The running summary (or fact list) after folding `groups` one at a time; memoised by prefix. A
        prefix another conversation folded (identical exchanges) is reused and its folds charged to this one."""
        keys = [prefix_key(self.mode, context.repeat, [])]
        for g in groups:
            keys.append(prefix_key(keys[-1], context.repeat, g))
        start = next((i for i in range(len(groups), 0, -1) if keys[i] in self._memo), 0)
        conversation = context.thread_id
        fold = self._memo[keys[start]] if start else Fold("" if self.mode == "summary" else [])
        if start:
            self._memo.move_to_end(keys[start])
        if start and conversation not in fold.charged:
            since = next((self._memo[keys[i]] for i in range(start - 1, 0, -1)
                          if keys[i] in self._memo and conversation in self._memo[keys[i]].charged), None)
            usage.charge(fold, since)
            fold.charged.add(conversation)
        for i in range(start, len(groups)):
            step = StrategyUsage()
            state = await self._step(fold.state, groups[i], context, step)
            usage.add_usage(step)
            fold = fold.then(state, step, conversation)
            if (same := self._memo.get(keys[i + 1])) is not None:  # folded meanwhile for a concurrent conversation
                fold.charged |= same.charged
            self._memo[keys[i + 1]] = fold
            self._memo.move_to_end(keys[i + 1])
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        return fold.state

    async def _step(self, state: Any, group: list[ChatMessage], context: CallContext, usage: StrategyUsage) -> Any:
        if self.caller is None:
            raise ProviderError(f"history mode '{self.mode}' has no model to write the {self.mode}")
        before = state if self.mode == "summary" else json.dumps(state, ensure_ascii=False)
        prompt = (f"{'Summary' if self.mode == 'summary' else 'Facts'} so far:\n{before or '(none)'}\n\n"
                  f"New exchange:\n{format_exchange(group)}")
        messages: list[ChatMessage] = [{"role": "system", "content": SUMMARY_SYSTEM if self.mode == "summary" else FACTS_SYSTEM},
                    {"role": "user", "content": prompt}]
        ctx = CallContext(thread_id="history", test_id=context.test_id, turn=context.turn, repeat=context.repeat)
        from evalspec.providers.structured import call_structured

        try:
            response = await call_structured(self.caller, messages, ctx, name=self.mode, schema=SCHEMAS[self.mode],
                                             max_tokens=self.max_tokens or DEFAULT_MAX_TOKENS[self.mode])
        except ProviderError as exc:
            raise ProviderError(f"history {self.mode}: {exc}") from exc
        usage.add(response)
        return parse_state(self.mode, response.content, shown=Shown(messages))


def prefix_key(previous: str, repeat: int, group: list[ChatMessage]) -> str:
    blob = json.dumps([previous, repeat, [(m.get("role"), m.get("content")) for m in group]], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def format_exchange(group: list[ChatMessage]) -> str:
    who = {"user": "User", "assistant": "Assistant", "tool": "Tool"}
    return "\n".join(f"{who.get(str(m.get('role')), m.get('role'))}: {m.get('content') or ''}" for m in group)


def parse_state(mode: str, text: str, *, shown: Shown) -> Any:
    """The strategy model's answer, read against the exchange it was `shown`: the JSON object asked for,
    else (a server without structured output) its plain text; an object quoted from the exchange, a
    format example or an object without the key asked for is an error."""
    try:
        data = read_answer(text, SCHEMAS[mode], shown=shown, role=f"history {mode}")
    except GradingError as exc:
        said = plain_text(text, SCHEMAS[mode], shown=shown)
        if said is None:
            raise ProviderError(str(exc)) from None
        data = {mode: said}
    value = data.get(mode)
    if mode == "summary":
        return str(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return [str(f).strip() for f in value if str(f).strip()]
    return [line.strip(" -*•\t") for line in str(value).splitlines() if line.strip(" -*•\t")]


def render_state(mode: str, state: Any) -> str:
    if not state:
        return ""
    if mode == "summary":
        return f"{HEADINGS['summary']}\n{state}"
    return HEADINGS["facts"] + "\n" + "\n".join(f"- {f}" for f in state)


def strategy_model_spec(spec: ProviderSpec, strategy: ContextStrategy) -> ProviderSpec:
    """The model that writes the summary or facts: `history.model`, else the provider's own model
    (its calls ask for structured output and carry `max_tokens` through `call_structured`)."""
    from evalspec.config.model import ProviderSpec
    from evalspec.config.providers import model_ref

    if strategy.model:
        base = model_ref(strategy.model)
        config = dict(base.config)
    else:
        config = {k: v for k, v in spec.config.items() if k in ("model", "api_base", "api_key", "client", "timeout")}
        base = ProviderSpec(id="", kind="model", config=config)
    config["params"] = {k: v for k, v in dict(config.get("params") or {}).items()
                        if k not in ("response_format", "max_tokens")}
    return ProviderSpec(id=f"{spec.id}:history", kind=base.kind, config=config,
                        where=(*spec.where, "history"), max_concurrency=base.max_concurrency, rpm=base.rpm)


def strategy_model(spec: ProviderSpec) -> ProviderSpec | None:
    """The model a provider's summary or facts strategy calls (for the preflight), or None — also when it
    names none and the provider has no `model` of its own (a config problem the loader reports)."""
    strategy = ContextStrategy.from_config(spec.config)
    if not takes_history(spec.kind) or strategy.mode not in NEEDS_MODEL:
        return None
    if not strategy.model and "model" not in spec.config:
        return None
    return strategy_model_spec(spec, strategy)


def attach_strategy(provider: Any, spec: ProviderSpec, suite: Suite, get_caller: Any) -> None:
    """Give a model or python provider its context strategy (and, for summary/facts, the callers it needs)."""
    if not takes_history(spec.kind):
        return
    strategy = ContextStrategy.from_config(spec.config)
    if strategy.mode in NEEDS_MODEL:
        strategy.caller = get_caller(strategy_model_spec(spec, strategy), suite)
    provider.strategy = strategy
    if spec.kind != "model" and strategy.mode != "full":  # a model provider's identity has its strategy already
        base_identity = provider.cache_identity
        provider.cache_identity = lambda: {**base_identity(), "history": strategy.identity()}


def strategy_metadata(response: ProviderResponse, usage: StrategyUsage) -> ProviderResponse:
    """Record the strategy's usage on the turn's response (it travels through the cache with it)."""
    if usage.calls or usage.cached_calls:
        response.metadata = {**response.metadata, "strategy": usage.to_json()}
    return response
