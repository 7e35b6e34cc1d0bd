"""Deterministic checks (regexes, fuzzy matching, python assertions) run off the event loop.

A transcript's checks go to a daemon worker thread as one batch (one hop, not one per check, so
throughput holds), and each check has `options.grade_timeout` seconds. A check that overruns is an
`error` naming the limit; its thread is abandoned and the checks after it continue on a fresh one.
Meanwhile the event loop keeps serving provider calls, so a slow regex never makes them time out.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

from evalspec.assertions.base import GradingContext
from evalspec.assertions.evaluate import AssertionResult, evaluate
from evalspec.assertions.patterns import regex_time_limit
from evalspec.config.model import AssertionSpec
from evalspec.usercode import WORKERS, describe, post

_local = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    """Each worker thread keeps one private event loop for the (rarely) async checks it runs."""
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop


def _blank(spec: AssertionSpec) -> AssertionResult:
    scope = dict(spec.scope) if isinstance(spec.scope, dict) else spec.scope
    return AssertionResult(spec.name, scope, None, None, weight=spec.weight, severity=spec.severity,
                           metric=spec.metric, threshold=spec.threshold, turn=spec.turn)


def evaluate_here(spec: AssertionSpec, ctx: GradingContext, limit: float) -> AssertionResult:
    """Evaluate one check on this (worker) thread; anything it raises becomes its error."""
    try:
        with regex_time_limit(limit):
            return _thread_loop().run_until_complete(evaluate(spec, ctx))
    except BaseException as exc:  # user code in a check may raise anything, SystemExit too
        _local.loop = None  # the loop it escaped from is not trusted again
        return replace(_blank(spec), error=describe(exc))


async def evaluate_off_loop(specs: list[AssertionSpec], ctx: GradingContext,
                            limit: float) -> list[AssertionResult]:
    """Evaluate `specs` in order on worker threads, each within `limit` seconds."""
    results: list[AssertionResult] = []
    loop = asyncio.get_running_loop()
    while len(results) < len(specs):
        first = len(results)
        finished: asyncio.Queue[AssertionResult] = asyncio.Queue()
        abandoned = threading.Event()

        def batch(start: int = first, out: asyncio.Queue[AssertionResult] = finished,
                  stop: threading.Event = abandoned) -> None:
            for spec in specs[start:]:
                if stop.is_set():
                    return
                post(loop, out.put_nowait, evaluate_here(spec, ctx, limit))

        WORKERS.submit(batch)
        while len(results) < len(specs):
            try:
                results.append(await asyncio.wait_for(finished.get(), limit))
            except asyncio.TimeoutError:
                abandoned.set()
                spec = specs[len(results)]
                results.append(replace(_blank(spec), error=f"timed out after {limit:g}s (options.grade_timeout)"))
                break
            except BaseException:
                abandoned.set()
                raise
    return results
