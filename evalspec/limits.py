"""How many calls to one provider may be in flight (`max_concurrency`) and start per minute (`rpm`).

A local run gives each provider a `LocalLimits`; a Ray run gives every worker a client of one
limiter for the whole cluster (`evalspec.executors.cluster`), so the limits hold across workers.
"""

from __future__ import annotations

import asyncio
import time
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
