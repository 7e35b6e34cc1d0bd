"""Every call to a provider goes through `ProviderCaller`: cache, limits, time-out, retries."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from evalspec.core.errors import ControlFlow, ProviderError
from evalspec.extend.provider import CallContext, Provider, ProviderResponse
from evalspec.extend.replies import NoReply
from evalspec.extend.transcript import ChatMessage
from evalspec.providers import reads
from evalspec.providers.cache import ResponseCache, cache_key
from evalspec.providers.limits import LIMITED, RATE_LIMITED, AdaptiveLimit, Limits, local_limits

T = TypeVar("T")


class Deadlines:
    """The per-call time-out of many concurrent calls, kept by one timer: a call still running `seconds`
    after it started is cancelled (within `tick` more) and raises TimeoutError. `asyncio.wait_for`
    (a task per call) and `asyncio.timeout` (a timer per call) cost a measurable share of a fast turn."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.tick = min(1.0, max(0.005, seconds / 20))
        self._due: dict[asyncio.Task[Any], float] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def run(self, awaitable: Awaitable[T]) -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = task.get_loop()
        self._due[task] = loop.time() + self.seconds
        if self._loop is not loop:  # the first call, or a new event loop (an old one's calls are gone)
            self._due = {t: due for t, due in self._due.items() if t.get_loop() is loop}
            self._loop, self._timer = loop, None
        if self._timer is None:
            self._timer = loop.call_later(self.tick, self._check)
        try:
            return await awaitable
        except asyncio.CancelledError:
            if task not in self._expired:
                raise
            uncancel = getattr(task, "uncancel", None)  # Python 3.11+: this cancellation is consumed
            if uncancel is not None:
                uncancel()
            raise asyncio.TimeoutError from None
        finally:
            self._due.pop(task, None)
            self._expired.discard(task)

    def _check(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        for task, due in list(self._due.items()):
            if due <= now:
                del self._due[task]
                self._expired.add(task)
                task.cancel()
        self._timer = self._loop.call_later(self.tick, self._check) if self._due else None


class CacheMiss(ControlFlow):
    """Raised by a cache-only call that finds nothing (stateful replay falls back to a live run), and by a
    call the cache cannot answer in a conversation whose cached answers came within a session the bot
    keeps for it (its cookies, `SESSION`): that session is not there to go on with, so the conversation is
    played again live from its start (docs/en/providers.md#cookies)."""


SESSION = "cache:session"  # CallContext.conversation's key: a cached answer of this conversation was within a session


class CallStats:
    """Requests made: `calls` answered, `failed` not (each attempt counts), `retries` re-attempts."""

    def __init__(self) -> None:
        self.calls = 0
        self.cached = 0
        self.failed = 0
        self.retries = 0


class ProviderCaller:
    """Wraps a provider with the cache, `max_concurrency`, `rpm`, a per-call time-out and retries.
    `limits`, when given, replaces the caller's own `max_concurrency` and `rpm` (a cluster-wide limiter).
    A 429/503 answer makes the caller adapt its in-flight limit (docs/en/rate-limits.md, `AdaptiveLimit`) up to `ceiling`
    (`max_concurrency` or `-j`; unknown: the calls in flight then)."""

    def __init__(self, provider: Provider, *, cache: ResponseCache | None, timeout: float, retries: int,
                 max_concurrency: int | None, rpm: float | None, stats: CallStats, stateful: bool = False,
                 max_retry_wait: float = 60.0, limits: Limits | None = None, ceiling: int | None = None) -> None:
        self.provider = provider
        self.id = provider.id
        self.cache = cache
        self.stateful = stateful
        self.timeout, self.retries, self.stats = timeout, retries, stats
        self.max_retry_wait = max_retry_wait
        self._limits = limits if limits is not None else local_limits(max_concurrency, rpm)
        self._identity: Mapping[str, object] | None = None
        self._deadlines = Deadlines(timeout)
        self.ceiling = max_concurrency or ceiling
        self.adaptive: AdaptiveLimit | None = None  # made at the first 429/503
        self._in_flight = 0

    def key(self, messages: list[ChatMessage], context: CallContext, extra: Any = None) -> str:
        """Everything the call depends on (docs/en/rule-self-tests.md#verdicts-that-hold): the provider's configuration, the history, the repeat,
        the test id and vars, and the request a templating provider renders from them; never the thread id."""
        if self._identity is None:
            self._identity = self.provider.cache_identity()
        request = getattr(self.provider, "cache_request", None)
        rendered = request(messages, context) if request is not None else None
        return cache_key(self._identity, messages, context.repeat, [extra, context.test_id, context.vars, rendered])

    async def call(self, messages: list[ChatMessage], context: CallContext, extra: Any = None, *,
                   read: bool = True, write: bool = True, cache_only: bool = False,
                   stats: CallStats | None = None,
                   prepare: Callable[[], Awaitable[None]] | None = None) -> ProviderResponse:
        """Answer from the cache when allowed, else call (with limits, time-out and retries).
        `stats`, when given, counts this call's requests too (one conversation's share); `prepare`, when
        given, is awaited before a live call (never before a cached answer): a conversation's setup and
        seeding (docs/en/state.md)."""
        counters = [self.stats] + ([stats] if stats is not None else [])
        key = self.key(messages, context, extra) if self.cache is not None else ""
        # local code: its entry holds the files it read, and is used only while they are unchanged
        local = bool(getattr(self.provider, "reads_files", False))
        if (read or cache_only) and self.cache is not None:
            hit = await self.cache.aget(key)
            if hit is not None and local and not reads.unchanged(hit.get("reads"), self._reads_root()):
                hit = None  # a file the provider read (a prompt) changed, or an entry from before reads were kept
            cached = ProviderResponse.from_cache(hit) if hit is not None else None
            if cached is not None:
                for c in counters:
                    c.cached += 1
                if cached.session:
                    context.conversation[SESSION] = True
                return cached
        if cache_only or context.conversation.get(SESSION):
            raise CacheMiss(self.id)  # (after a session's cached answers: played again live, from its start)
        if prepare is not None:
            await prepare()
        if not (local and write and self.cache is not None):
            response = await self._call_with_retries(messages, context, counters)
            if write and self.cache is not None:
                self.cache.put(key, response.to_cache())
            return response
        with reads.recording() as opened:
            response = await self._call_with_retries(messages, context, counters)
        where = getattr(self.cache, "path", None)  # a Ray worker's cache is the driver's, over the network
        digests = reads.digests(opened, (str(where.parent) + os.sep,) if where is not None else (), self._reads_root())
        if digests is not None:  # more files than can be checked at each hit: not cached
            self.cache.put(key, {**response.to_cache(), "reads": digests})
        return response

    def _reads_root(self) -> str | None:
        """The folder the provider's files are kept relative to in its cache entries (the suite's)."""
        root = getattr(self.provider, "base_dir", None)
        return os.path.abspath(root) if root is not None else None

    async def _call_with_retries(self, messages: list[ChatMessage], context: CallContext,
                                 counters: list[CallStats]) -> ProviderResponse:
        attempt = 0
        answers = self.adaptive.answered if self.adaptive is not None else 0  # the provider's, at this call's last try
        while True:
            gate = self.adaptive
            round_ = await gate.acquire() if gate is not None else 0
            if self._limits is not None:
                try:
                    await self._limits.acquire()
                except BaseException:
                    if gate is not None:
                        gate.release(None)
                    raise
                if gate is None and self.adaptive is not None:  # made while this call waited: it counts too
                    gate = self.adaptive
                    gate.in_flight += 1
                    round_ = gate.round
            exc: ProviderError | None = None
            answered = False
            self._in_flight += 1
            try:  # the one attempt, inline: a frame less on every call's way back
                response = await self._deadlines.run(self.provider.respond(messages, context))
            except asyncio.TimeoutError:
                exc = ProviderError(f"timed out after {self.timeout:g}s", retryable=True)
            except NoReply as silence:  # the bot answered, with nothing: not retried, the turn decides
                answered = True
                for c in counters:
                    c.calls += 1
                raise silence.prefixed(f"{self.id}: ") from silence
            except ProviderError as error:
                exc = error
            else:
                answered = True
                for c in counters:
                    c.calls += 1
                return response
            finally:
                self._in_flight -= 1
                if self._limits is not None:
                    self._limits.release()
                if self.adaptive is not None or (exc is not None and exc.rate_limited):
                    self._settle(round_ if answered or (exc is not None and exc.rate_limited) else None, exc)
            assert exc is not None
            for c in counters:
                c.failed += 1
            adaptive = self.adaptive
            if exc.rate_limited and self.retries and adaptive is not None and adaptive.answered > answers and (
                    exc.retry_after is None or exc.retry_after <= self.max_retry_wait):
                # the provider answered other calls since this one's last try: it met a full quota, not a dead
                # one, and waits its turn again without using up a retry (docs/en/rate-limits.md: no errors under a limit)
                answers = adaptive.answered
                for c in counters:
                    c.retries += 1
                await asyncio.sleep(exc.retry_after if exc.retry_after is not None else backoff(0))
                continue
            if not exc.retryable or attempt >= self.retries:
                suffix = f" (after {attempt + 1} attempts)" if attempt else ""
                raise ProviderError(f"{self.id}: {exc}{suffix}", rate_limited=exc.rate_limited) from exc
            if exc.retry_after is not None and exc.retry_after > self.max_retry_wait:
                raise ProviderError(f"{self.id}: {exc} (Retry-After {exc.retry_after:g}s is longer than "
                                    f"options.max_retry_wait {self.max_retry_wait:g}s; not retried)",
                                    rate_limited=exc.rate_limited) from exc
            delay = exc.retry_after if exc.retry_after is not None else backoff(attempt)
            answers = adaptive.answered if adaptive is not None else 0
            attempt += 1
            for c in counters:
                c.retries += 1
            await asyncio.sleep(min(delay, self.max_retry_wait))

    def _settle(self, round_: int | None, exc: ProviderError | None) -> None:
        """Tell the adaptive limit how a call ended: answered, rate limited (`exc.rate_limited`), or neither
        (`round_` None). A 429/503 counts for the conversation, and makes the limit at this provider's first."""
        limited = exc is not None and exc.rate_limited
        if limited:
            counts = RATE_LIMITED.get()
            if counts is not None:
                counts[self.id] = counts.get(self.id, 0) + 1
            if self.adaptive is None:  # the calls in flight now (this one too) release it when they end
                self.adaptive = LIMITED[self.id] = AdaptiveLimit(self.id, self.ceiling or self._in_flight + 1,
                                                                 self._in_flight + 1)
        adaptive = self.adaptive
        if adaptive is None:
            return
        after = exc.retry_after if exc is not None and exc.retry_after is not None \
            and exc.retry_after <= self.max_retry_wait else None
        adaptive.release(round_, limited=limited, retry_after=after)


def backoff(attempt: int, base: float = 0.5, cap: float = 30.0) -> float:
    """Exponential back-off with full jitter."""
    return random.uniform(0, min(cap, base * (2 ** attempt)))


EMBEDDING = CallContext(thread_id="embedder", test_id="embedder", turn=0)


def embedding_fn(caller: ProviderCaller, cache: ResponseCache | None,
                 identity: Mapping[str, object]) -> Callable[[list[str]], Awaitable[list[list[float]]]]:
    """An embedder over `caller`, whose provider answers `[{"texts": [...]}]` with the vectors in its
    response's `metadata["vectors"]`: limits, time-out and retries like any call; the vectors cached under
    `identity` and the texts (the embedders' own cache entries, `{"vectors": ...}`)."""

    async def embed(texts: list[str]) -> list[list[float]]:
        key = cache_key(identity, [{"texts": texts}], 0)
        if cache is not None and (hit := cache.get(key)) is not None and isinstance(stored := hit.get("vectors"), list):
            return list(stored)
        response = await caller.call([{"texts": texts}], EMBEDDING, read=False, write=False)
        vectors: list[list[float]] = response.metadata["vectors"]
        if cache is not None:
            cache.put(key, {"vectors": vectors})
        return vectors

    return embed
