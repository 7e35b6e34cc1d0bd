"""Every call to a provider goes through `ProviderCaller`: cache, limits, time-out, retries."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from evalspec.cache import ResponseCache, cache_key
from evalspec.errors import ProviderError
from evalspec.limits import Limits, local_limits
from evalspec.providers.base import CallContext, Provider, ProviderResponse

WITHIN = getattr(asyncio, "timeout", None)  # Python 3.11+


class CacheMiss(Exception):
    """Raised by a cache-only call that finds nothing (stateful replay falls back to a live run)."""


class CallStats:
    """Requests made: `calls` answered, `failed` not (each attempt counts), `retries` re-attempts."""

    def __init__(self) -> None:
        self.calls = 0
        self.cached = 0
        self.failed = 0
        self.retries = 0


class ProviderCaller:
    """Wraps a provider with the cache, `max_concurrency`, `rpm`, a per-call time-out and retries.
    `limits`, when given, replaces the caller's own `max_concurrency` and `rpm` (a cluster-wide limiter)."""

    def __init__(self, provider: Provider, *, cache: ResponseCache | None, timeout: float, retries: int,
                 max_concurrency: int | None, rpm: float | None, stats: CallStats, stateful: bool = False,
                 max_retry_wait: float = 60.0, limits: Limits | None = None) -> None:
        self.provider = provider
        self.id = provider.id
        self.cache = cache
        self.stateful = stateful
        self.timeout, self.retries, self.stats = timeout, retries, stats
        self.max_retry_wait = max_retry_wait
        self._limits = limits if limits is not None else local_limits(max_concurrency, rpm)
        self._identity: dict[str, Any] | None = None

    def key(self, messages: list[dict[str, Any]], context: CallContext, extra: Any = None) -> str:
        if self._identity is None:
            self._identity = self.provider.cache_identity()
        return cache_key(self._identity, messages, context.repeat, extra)

    async def call(self, messages: list[dict[str, Any]], context: CallContext, extra: Any = None, *,
                   read: bool = True, write: bool = True, cache_only: bool = False,
                   stats: CallStats | None = None) -> ProviderResponse:
        """Answer from the cache when allowed, else call (with limits, time-out and retries).
        `stats`, when given, counts this call's requests too (one conversation's share)."""
        counters = [self.stats] + ([stats] if stats is not None else [])
        key = self.key(messages, context, extra) if self.cache is not None else ""
        if (read or cache_only) and self.cache is not None:
            hit = await self.cache.aget(key)
            cached = ProviderResponse.from_cache(hit) if hit is not None else None
            if cached is not None:
                for c in counters:
                    c.cached += 1
                return cached
        if cache_only:
            raise CacheMiss(self.id)
        response = await self._call_with_retries(messages, context, counters)
        if write and self.cache is not None:
            self.cache.put(key, response.to_cache())
        return response

    async def _call_with_retries(self, messages: list[dict[str, Any]], context: CallContext,
                                 counters: list[CallStats]) -> ProviderResponse:
        attempt = 0
        while True:
            try:
                response = await self._call_once(messages, context)
            except ProviderError as exc:
                for c in counters:
                    c.failed += 1
                if not exc.retryable or attempt >= self.retries:
                    suffix = f" (after {attempt + 1} attempts)" if attempt else ""
                    raise ProviderError(f"{self.id}: {exc}{suffix}") from exc
                if exc.retry_after is not None and exc.retry_after > self.max_retry_wait:
                    raise ProviderError(f"{self.id}: {exc} (Retry-After {exc.retry_after:g}s is longer than "
                                        f"options.max_retry_wait {self.max_retry_wait:g}s; not retried)") from exc
                delay = exc.retry_after if exc.retry_after is not None else backoff(attempt)
                attempt += 1
                for c in counters:
                    c.retries += 1
                await asyncio.sleep(min(delay, self.max_retry_wait))
                continue
            for c in counters:
                c.calls += 1
            return response

    async def _call_once(self, messages: list[dict[str, Any]], context: CallContext) -> ProviderResponse:
        if self._limits is not None:
            await self._limits.acquire()
        try:
            if WITHIN is not None:  # a deadline on this task: no task of its own per call (wait_for's)
                async with WITHIN(self.timeout):
                    return await self.provider.respond(messages, context)
            return await asyncio.wait_for(self.provider.respond(messages, context), self.timeout)
        except asyncio.TimeoutError:
            raise ProviderError(f"timed out after {self.timeout:g}s", retryable=True) from None
        finally:
            if self._limits is not None:
                self._limits.release()


def backoff(attempt: int, base: float = 0.5, cap: float = 30.0) -> float:
    """Exponential back-off with full jitter."""
    return random.uniform(0, min(cap, base * (2 ** attempt)))
