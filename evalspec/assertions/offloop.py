"""Deterministic checks (regexes, fuzzy matching, python assertions) run off the event loop.

A transcript's checks go to a daemon worker thread as one batch and come back as one batch (one hop
each way, not one per check, so throughput holds), and each check has `options.grade_timeout` seconds:
a timer on the loop watches the check in progress. A check that overruns is an `error` naming the
limit; its thread is abandoned and the checks after it continue on a fresh one. Meanwhile the event
loop keeps serving provider calls, so a slow regex never makes them time out.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import time
from collections.abc import Coroutine
from typing import Any

from evalspec.assertions.base import GradingContext
from evalspec.assertions.evaluate import AssertionResult, evaluate, no_verdict
from evalspec.assertions.patterns import regex_time_limit
from evalspec.assertions.registry import resolve_type
from evalspec.config.model import AssertionSpec
from evalspec.usercode import WORKERS, describe, post

_local = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    """Each worker thread keeps one private event loop for the (rarely) async checks it runs."""
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop


def _plain(spec: AssertionSpec) -> bool:
    """A built-in check written as a plain function: its coroutine finishes without ever waiting
    (a plugin's plain function may hand back an awaitable: it gets the thread's loop)."""
    resolved = resolve_type(spec.type)
    return resolved is not None and spec.type != "python" and _plain_builtin(resolved[0].fn)


@functools.lru_cache(maxsize=1024)
def _plain_builtin(fn: Any) -> bool:
    return getattr(fn, "__module__", "").startswith("evalspec.assertions.") and not inspect.iscoroutinefunction(fn)


def _finish(coroutine: Coroutine[Any, Any, AssertionResult]) -> AssertionResult | None:
    """Step a coroutine that never waits to its result without an event loop; None if it did wait."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        result: AssertionResult = stop.value
        return result
    coroutine.close()
    return None


def evaluate_here(spec: AssertionSpec, ctx: GradingContext) -> AssertionResult:
    """Evaluate one check on this (worker) thread, within the regex time limit the caller set; anything
    it raises becomes its error."""
    try:
        done = _finish(evaluate(spec, ctx)) if _plain(spec) else None
        return done if done is not None else _thread_loop().run_until_complete(evaluate(spec, ctx))
    except BaseException as exc:  # user code in a check may raise anything, SystemExit too
        _local.loop = None  # the loop it escaped from is not trusted again
        return no_verdict(spec, describe(exc))


class _Batch:
    """Checks evaluated in order on one worker thread; the loop reads `results` and `started`."""

    def __init__(self, specs: list[AssertionSpec], ctx: GradingContext, limit: float,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.specs, self.ctx, self.limit, self.loop = specs, ctx, limit, loop
        self.results: list[AssertionResult] = []
        self.started = time.monotonic()  # when the check in progress started (queueing counts)
        self.abandoned = False
        self.finished: asyncio.Future[bool] = loop.create_future()  # True: all done; False: one overran

    def run(self) -> None:
        with regex_time_limit(self.limit):
            for spec in self.specs:
                if self.abandoned:
                    return
                self.started = time.monotonic()
                self.results.append(evaluate_here(spec, self.ctx))
        post(self.loop, self._settle, True)

    def _settle(self, complete: bool) -> None:
        if not self.finished.done():
            self.finished.set_result(complete)

    def watch(self) -> None:
        """The timer: settle as overrun once the check in progress has had its `limit`, else look again then."""
        if self.finished.done():
            return
        due = self.started + self.limit - time.monotonic()
        if due <= 0:
            self._settle(False)
        else:
            self.loop.call_later(due, self.watch)


async def evaluate_off_loop(specs: list[AssertionSpec], ctx: GradingContext,
                            limit: float) -> list[AssertionResult]:
    """Evaluate `specs` in order on worker threads, each within `limit` seconds."""
    results: list[AssertionResult] = []
    loop = asyncio.get_running_loop()
    while len(results) < len(specs):
        batch = _Batch(specs[len(results):], ctx, limit, loop)
        WORKERS.submit(batch.run)
        timer = loop.call_later(limit, batch.watch)
        try:
            complete = await batch.finished
        except BaseException:
            batch.abandoned = True
            raise
        finally:
            timer.cancel()
        batch.abandoned = True
        got = list(batch.results)  # what finished in time; the thread may still append the overrun one
        results.extend(got)
        if not complete and len(results) < len(specs):
            spec = specs[len(results)]
            results.append(no_verdict(spec, f"timed out after {limit:g}s (options.grade_timeout)"))
    return results
