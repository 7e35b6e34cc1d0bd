"""Deterministic checks (regexes, fuzzy matching, python assertions) run off the event loop.

A conversation's checks form one batch, and the batches of every conversation of an event loop wait in
one lane, which a worker job takes in turn: a burst of conversations costs one hop to a worker thread
and one back (results come back through `usercode.post`, one wake-up of the loop for many), not one
per conversation or per check, so throughput holds. Each check has `options.grade_timeout` seconds:
one timer on the loop watches the check in progress of every job. A check that overruns is abandoned:
the reply it was checking is an error naming the limit, and a failure on a reply it had already checked
stands beside it (`evaluate.abandoned`); its thread is left to it and the checks after it continue on a
fresh job. A check that
merely takes a while (`_Lane.SLOW`) keeps its job, and the batches behind it get a job of their own,
so one slow conversation never holds up the others' grading. Meanwhile the event loop keeps serving
provider calls, so a slow regex never makes them time out.

A short conversation's leading built-in text and session checks (`_ON_LOOP`: they read the replies' text
in time linear in it) run on the loop itself, with no hop at all: their regexes may hold the loop
`patterns.HOLD_GIL_S` at most, and a check whose match needs longer goes to a worker with the checks
after it, where it has its whole time limit (docs/en/scale-and-ray.md#throughput).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import threading
import time
import weakref
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from evalspec.assertions.evaluate import AssertionResult, abandoned, evaluate, no_verdict
from evalspec.config.model import AssertionSpec
from evalspec.core.usercode import WORKERS, clear_note, describe, note_running, post
from evalspec.extend.check import Check, GradingContext, Undecided
from evalspec.extend.patterns import on_the_loop, regex_time_limit
from evalspec.extend.registry import resolve_type

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


def runs_user_code(spec: AssertionSpec) -> bool:
    """A `python` check or a plugin's: code that could end the process while it runs."""
    resolved = resolve_type(spec.type)
    return spec.type == "python" or resolved is not None and \
        not getattr(resolved[0].fn, "__module__", "").startswith("evalspec.")


def note_check(note: Path, spec: AssertionSpec) -> None:
    """Name the check about to run in `note` (`usercode.note_running`): if its user code ends the process,
    the run that takes over grades the conversation again with that check as its error
    (docs/en/reports-and-gate.md#errors-and-failures)."""
    note_running(note, spec.where)


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


def evaluate_here(spec: AssertionSpec, ctx: GradingContext,
                  parts: list[Check | Undecided] | None = None) -> AssertionResult:
    """Evaluate one check on this (worker) thread, within the regex time limit the caller set; anything
    it raises becomes its error. `parts` receives each reply's check as it is reached (`evaluate`)."""
    try:
        done = _finish(evaluate(spec, ctx, parts)) if _plain(spec) else None
        return done if done is not None else _thread_loop().run_until_complete(evaluate(spec, ctx, parts))
    except BaseException as exc:  # user code in a check may raise anything, SystemExit too
        _local.loop = None  # the loop it escaped from is not trusted again
        return no_verdict(spec, describe(exc))


class _Batch:
    """One conversation's checks, evaluated in order by a job of the lane; the loop reads `results`."""

    def __init__(self, specs: list[AssertionSpec], ctx: GradingContext, limit: float,
                 loop: asyncio.AbstractEventLoop, note: Path | None = None) -> None:
        self.specs, self.ctx, self.limit, self.loop, self.note = specs, ctx, limit, loop, note
        self.results: list[AssertionResult] = []
        self.dropped = False  # its conversation was cancelled: the checks left are skipped
        self.finished: asyncio.Future[bool] = loop.create_future()  # True: all done; False: one overran
        self.reached: list[Check | Undecided] = []  # what the check that overran had checked, reply by reply

    def settle(self, complete: bool) -> None:
        if not self.finished.done():
            self.finished.set_result(complete)


class _Job:
    """A worker job: it evaluates the lane's waiting batches in turn while it is the lane's `active`
    job. `progress` (the batch, when its check in progress started, the replies that check has reached)
    is what the loop's timer reads."""

    def __init__(self, lane: _Lane, first: _Batch) -> None:
        self.lane = lane
        self.progress: tuple[_Batch, float, list[Check | Undecided]] = (first, time.monotonic(), [])
        # (time spent waiting for a thread counts)
        self.abandoned = False  # its check overran: the thread is left to it, its results are not taken

    def run(self) -> None:
        while (batch := self.lane.take(self)) is not None:
            with regex_time_limit(batch.limit):
                for spec in batch.specs:
                    if batch.dropped:
                        break
                    reached: list[Check | Undecided] = []
                    self.progress = (batch, time.monotonic(), reached)
                    noted = batch.note if batch.note is not None and runs_user_code(spec) else None
                    if noted is not None:
                        note_check(noted, spec)
                    result = evaluate_here(spec, batch.ctx, reached)
                    with self.lane.lock:  # an overrun is decided under the lock: its result stays out
                        if self.abandoned:
                            return
                        batch.results.append(result)
                    if noted is not None:  # (an abandoned check's note is the loop's to clear)
                        clear_note(noted)
            if not batch.dropped:
                post(batch.loop, batch.settle, True)


class _Lane:
    """The batches of one event loop waiting for a worker, and the jobs evaluating them."""

    SLOW = 0.05  # seconds: a check running longer than this leaves the waiting batches to a new job

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiting: collections.deque[_Batch] = collections.deque()
        self.active: _Job | None = None  # the job that takes the waiting batches
        self.jobs: list[_Job] = []  # every job still at work (the active one and those left to a slow check)
        self.watching = False  # the timer is set (the loop alone reads and writes it)

    def add(self, batch: _Batch) -> None:
        """Queue a batch (on the loop); a job starts if none takes the waiting batches."""
        with self.lock:
            self.waiting.append(batch)
            job = self._new_job() if self.active is None else None
        if job is not None:
            WORKERS.submit(job.run)
        if not self.watching:
            self.watching = True
            batch.loop.call_later(min(self.SLOW, batch.limit), self.watch)

    def _new_job(self) -> _Job:  # with the lock held, batches waiting
        job = self.active = _Job(self, self.waiting[0])
        self.jobs.append(job)
        return job

    def take(self, job: _Job) -> _Batch | None:
        """The next batch for `job` (on its worker thread), or None: the job ends."""
        with self.lock:
            if job is self.active and self.waiting:
                return self.waiting.popleft()
            if job is self.active:
                self.active = None
            if job in self.jobs:
                self.jobs.remove(job)
            return None

    def watch(self) -> None:
        """The timer (on the loop): a check over its limit abandons its job; a slow one leaves the waiting
        batches to a new job. It looks again when the next check is due, at most `SLOW` later."""
        now, wait, overran, start = time.monotonic(), self.SLOW, [], None
        with self.lock:
            for job in list(self.jobs):
                batch, started, reached = job.progress
                due = started + batch.limit - now
                if due <= 0:
                    job.abandoned = batch.dropped = True  # (a batch still waiting is not taken later)
                    batch.reached = list(reached)
                    self.jobs.remove(job)
                    overran.append(batch)
                    if job is self.active:
                        self.active = None
                    continue
                wait = min(wait, due)
                if job is self.active and now - started >= self.SLOW:
                    self.active = None  # it finishes the batch in hand, then ends
            if self.active is None and self.waiting:
                start = self._new_job()
            self.watching = bool(self.jobs)
        if start is not None:
            WORKERS.submit(start.run)
        for batch in overran:
            batch.settle(False)
        if self.watching:
            asyncio.get_running_loop().call_later(wait, self.watch)


_lanes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Lane] = weakref.WeakKeyDictionary()


# built-in checks that read only the replies' text, in time linear in it; their regexes go through
# extend/patterns (on the loop: `HOLD_GIL_S` at most). Not here: user code, node, files, JSON scans,
# levenshtein (quadratic), judges and embedders.
_ON_LOOP = frozenset({"contains", "icontains", "contains-any", "contains-all", "equals", "starts-with", "regex",
                      "word-count", "latency", "cost", "tokens", "finish-reason", "not-before", "not-after",
                      "at-most", "within", "turn-count"})
ON_LOOP_CHARS = 8_000  # a conversation whose messages hold more text is checked on a worker


def _checked_here(specs: list[AssertionSpec], ctx: GradingContext, limit: float) -> list[AssertionResult]:
    """The results of the leading checks of `specs` that run on the loop (`_ON_LOOP`, a short conversation),
    up to the first that cannot (another kind, or a regex that needs longer than `HOLD_GIL_S`)."""
    size = 0
    for message in ctx.transcript:
        content = message.get("content")
        if content is not None and not isinstance(content, str) or message.get("tool_calls"):
            return []
        size += len(content or "")
    if size > ON_LOOP_CHARS:
        return []
    done: list[AssertionResult] = []
    with regex_time_limit(limit), on_the_loop() as slow:
        for spec in specs:
            if spec.type not in _ON_LOOP or not _plain(spec):
                break
            result = _finish(evaluate(spec, ctx))
            if result is None or slow:  # a regex that needs longer: this check and the rest go to a worker
                break
            done.append(result)
    return done


async def evaluate_off_loop(specs: list[AssertionSpec], ctx: GradingContext,
                            limit: float, note: Path | None = None) -> list[AssertionResult]:
    """Evaluate `specs` in order on worker threads, each within `limit` seconds (a short conversation's
    leading text checks on the loop: `_checked_here`); `note` names the user-code check in progress
    (`note_check`)."""
    results: list[AssertionResult] = _checked_here(specs, ctx, limit)
    if len(results) == len(specs):
        return results
    loop = asyncio.get_running_loop()
    lane = _lanes.get(loop)
    if lane is None:
        lane = _lanes[loop] = _Lane()
    while len(results) < len(specs):
        batch = _Batch(specs[len(results):], ctx, limit, loop, note)
        lane.add(batch)
        try:
            complete = await batch.finished
        except BaseException:
            batch.dropped = True
            raise
        results.extend(batch.results[:len(specs) - len(results)])  # what finished in time
        if not complete and len(results) < len(specs):
            spec = specs[len(results)]
            if note is not None and runs_user_code(spec):
                clear_note(note)  # it did not end the process: a time-out is its own error
            results.append(abandoned(spec, ctx, batch.reached, f"timed out after {limit:g}s (options.grade_timeout)"))
    return results
