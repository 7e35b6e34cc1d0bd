"""How many calls to one provider may be in flight (`max_concurrency`) and start per minute (`rpm`).

A local run gives each provider a `LocalLimits`; a Ray run gives every worker a client of one
limiter for the whole cluster (`evalspec.play.cluster`), so the limits hold across workers.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from contextvars import ContextVar
from typing import Protocol


class Limits(Protocol):
    """Asked before each call starts (`acquire`) and told when it ends (`release`)."""

    async def acquire(self) -> None: ...

    def release(self) -> None: ...


class RateLimiter:
    """At most `rpm` calls started per minute, evenly spaced."""

    def __init__(self, rpm: float) -> None:
        self.interval = 60.0 / rpm
        self._next = 0.0

    def delay(self) -> float:
        """Seconds to wait before the next call may start (that start is booked now)."""
        now = time.monotonic()
        start = max(now, self._next)
        self._next = start + self.interval
        return start - now

    async def wait(self) -> None:
        delay = self.delay()
        if delay > 0:
            await asyncio.sleep(delay)


class LocalLimits:
    """`max_concurrency` and `rpm` for the callers of one process."""

    def __init__(self, max_concurrency: int | None, rpm: float | None) -> None:
        self._slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._rate = RateLimiter(rpm) if rpm else None

    async def acquire(self) -> None:
        if self._slots is not None:
            await self._slots.acquire()
        if self._rate is not None:
            try:
                await self._rate.wait()
            except BaseException:
                self.release()
                raise

    def release(self) -> None:
        if self._slots is not None:
            self._slots.release()


def local_limits(max_concurrency: int | None, rpm: float | None) -> LocalLimits | None:
    return LocalLimits(max_concurrency, rpm) if max_concurrency or rpm else None


# the 429/503 answers of the conversation being played, by provider id (set per conversation by the runner)
RATE_LIMITED: ContextVar[dict[str, int] | None] = ContextVar("evalspec_rate_limited", default=None)
# every provider that was answered 429/503 in this process, for the progress line
LIMITED: dict[str, AdaptiveLimit] = {}


class AdaptiveLimit:
    """A provider's in-flight limit, adapted to its answers (docs/en/rate-limits.md, AIMD): a 429/503 halves it (not below
    1; once per round: answers to calls started before the last cut do not cut again), as many successes in a
    row as the limit grows it by one, up to `ceiling`. A `Retry-After` pauses every call of the provider.

    Made at a provider's first 429/503: a provider that never sees one pays nothing for it."""

    def __init__(self, name: str, ceiling: int, in_flight: int) -> None:
        self.name, self.ceiling = name, max(1, ceiling)
        self.limit = self.ceiling
        self.in_flight = in_flight  # calls started before this limit existed release it too
        self.limited = 0  # 429/503 answers
        self.answered = 0  # answers (not 429/503) since it was made
        self.round = 0  # cuts so far
        self._streak = 0
        self._paused_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> int:
        """Wait for a slot (handed over in order of asking) and for the end of a pause; the round the call
        starts in."""
        loop = asyncio.get_running_loop()
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
        else:
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter  # `_wake` counted this call in flight
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self.release(None)  # handed a slot it will not use
                elif waiter in self._waiters:
                    self._waiters.remove(waiter)
                raise
        try:
            while (wait := self._paused_until - loop.time()) > 0:
                await asyncio.sleep(wait)
        except BaseException:
            self.release(None)
            raise
        return self.round

    def release(self, round_: int | None, *, limited: bool = False, retry_after: float | None = None) -> None:
        """A call ended: answered (`limited`: with 429/503, `retry_after` seconds asked), or failed otherwise
        (`round_` None: neither a success nor a rate limit)."""
        self.in_flight -= 1
        if limited:
            self.limited += 1
            self._streak = 0
            if round_ is not None and round_ >= self.round:  # the first answer of this round to cut
                self.limit = max(1, self.limit // 2)
                self.round += 1
            if retry_after:
                self._paused_until = max(self._paused_until, asyncio.get_running_loop().time() + retry_after)
        elif round_ is not None:
            self.answered += 1
            self._streak += 1
            if self._streak >= self.limit and self.limit < self.ceiling:
                self.limit += 1
                self._streak = 0
        self._wake()

    def _wake(self) -> None:
        while self.in_flight < self.limit and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)

    def shown(self) -> str:
        """For the progress line: "shop-bot: 6 in flight, 429s"."""
        return f"{self.name}: {self.limit} in flight, 429s"
