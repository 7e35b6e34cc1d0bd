"""Calling the user's code (python providers, assertions, simulated users) so it cannot end or hang a run.

Sync functions run on daemon threads that are never joined: one that overruns its time limit is
abandoned where it hangs and the process still exits when the run ends. Every exception it raises,
`SystemExit` and `KeyboardInterrupt` included, comes back as a `UserCodeError` naming it.
Async functions run as their own task on the run's loop; on a time-out they are cancelled and
abandoned, never awaited (a coroutine that swallows its cancellation cannot hold the run).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import json
import os
import queue
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from evalspec.core.errors import ProviderError, UserCodeError

T = TypeVar("T")
MESSAGE_LIMIT = 500


def describe(exc: BaseException) -> str:
    """`TypeName: message`, safe when the exception's own `__str__` raises or is huge."""
    try:
        text = str(exc)
    except BaseException:  # a user's exception may fail to print itself
        text = "<the exception could not be printed>"
    if len(text) > MESSAGE_LIMIT:
        text = text[:MESSAGE_LIMIT] + "…"
    name = type(exc).__name__
    if isinstance(exc, SystemExit):
        return f"SystemExit({text})" if text else "SystemExit"
    return f"{name}: {text}" if text else name


class DaemonWorkers:
    """Daemon threads that take work from one queue, never joined.

    Few threads serve many short calls (each hand-over of the GIL between threads costs more than a
    short call): `FLOOR` threads start with the first jobs. More start only when work is held up by
    jobs that block: a job has waited `WAIT` seconds in the queue, no worker is free, and either the
    jobs finished since the last look took `SLOW` seconds on average (calls waiting on I/O) or some
    worker's job has run `BLOCKED` seconds (stuck in user code). Then the count doubles, up to the jobs
    waiting, so a hung job never blocks later work or the process exit. Jobs that wait only because the
    machine is busy (short jobs, a worker now and then kept from the GIL for a switch interval) start
    no thread: more threads would only contend for the GIL (a large run on a loaded machine grew thirty
    of them)."""

    FLOOR = 2
    WAIT = 0.01  # seconds a job may wait in the queue
    SLOW = 0.002  # seconds: finished jobs this long on average were waiting on something
    BLOCKED = 0.012  # seconds a running job takes before it counts as stuck (above a GIL switch or two)

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start afresh (a forked child: the parent's threads, queue and lock state did not come along)."""
        self._work: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._queued: collections.deque[float] = collections.deque()  # when each waiting job was submitted
        self._running: dict[int, float] = {}  # worker thread -> when its job started
        self._finished, self._busy = 0, 0.0  # jobs finished since the watcher's last look, and their time
        self._watching = False
        self.started = 0

    def submit(self, job: Callable[[], None]) -> None:
        self._queued.append(time.monotonic())  # deque appends are atomic; the worker pops after `get`
        self._work.put(job)
        if self.started < self.FLOOR or not self._watching:
            self._grow()

    def _grow(self) -> None:
        """The first jobs: start the floor's threads and the watcher."""
        with self._lock:
            spawn = self._idle < len(self._queued) and self.started < self.FLOOR
            watch = not self._watching
            self._watching = True
        if spawn:
            self._spawn(1)
        if watch:
            threading.Thread(target=self._watch, name="evalspec-user-watch", daemon=True).start()

    def _spawn(self, count: int) -> None:
        for _ in range(count):
            with self._lock:
                self.started += 1
            threading.Thread(target=self._loop, name=f"evalspec-user-{self.started}", daemon=True).start()

    def _watch(self) -> None:
        while True:
            time.sleep(self.WAIT / 2)
            with self._lock:
                missing = self.to_start(time.monotonic(), self._queued[0] if self._queued else None,
                                        len(self._queued), self._idle, list(self._running.values()),
                                        self._finished, self._busy)
                self._finished, self._busy = 0, 0.0
            if missing > 0:
                self._spawn(missing)

    @classmethod
    def to_start(cls, now: float, oldest: float | None, waiting: int, idle: int, running: list[float],
                 finished: int = 0, busy: float = 0.0) -> int:
        """How many threads to start: `oldest` is when the longest-waiting job was submitted, `running`
        when each busy worker's job started, `finished` jobs took `busy` seconds since the last look."""
        if oldest is None or now - oldest < cls.WAIT or idle > 0:
            return 0
        waiting_on_io = finished >= max(len(running), 1) and busy / finished >= cls.SLOW
        stuck = not running or now - min(running) >= cls.BLOCKED
        if not (waiting_on_io or stuck):
            return 0  # short jobs (a worker kept from the GIL for a moment is not blocked)
        return min(waiting, max(len(running), 1))  # double at most per look

    def _loop(self) -> None:
        me = threading.get_ident()
        with self._lock:
            self._idle += 1
        while True:
            job = self._work.get()
            with self._lock:
                self._idle -= 1
                self._queued.popleft()
                self._running[me] = time.monotonic()
            with contextlib.suppress(BaseException):  # a job reports its own outcome; the worker lives on
                job()
            with self._lock:
                self._finished += 1
                self._busy += time.monotonic() - self._running.pop(me)
                self._idle += 1


WORKERS = DaemonWorkers()


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():  # the caller gave up (time-out or cancellation)
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class _Inbox:
    """Callbacks from worker threads to one event loop: one wake-up of the loop for a burst of them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: collections.deque[tuple[Callable[..., None], tuple[Any, ...]]] = collections.deque()
        self.lock = threading.Lock()
        self.armed = False

    def post(self, callback: Callable[..., None], args: tuple[Any, ...]) -> None:
        self.items.append((callback, args))
        with self.lock:
            if self.armed:
                return
            self.armed = True
        self.loop.call_soon_threadsafe(self.drain)

    def drain(self) -> None:
        with self.lock:
            self.armed = False
        while self.items:
            callback, args = self.items.popleft()
            callback(*args)


_inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Inbox] = weakref.WeakKeyDictionary()


def post(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    """`call_soon_threadsafe` (batched) that does nothing once the run's loop is gone."""
    inbox = _inboxes.get(loop)
    if inbox is None:
        inbox = _inboxes.setdefault(loop, _Inbox(loop))
    with contextlib.suppress(RuntimeError):
        inbox.post(callback, args)


def in_thread(fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """Run `fn(*args)` on a daemon worker; await the future it returns. Anything `fn` raises becomes
    a UserCodeError. (A plain function, not a coroutine: one frame less on every call's way back.)"""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def job() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: it is the user's
            post(loop, _settle, future, False, UserCodeError(describe(exc)))
            return
        post(loop, _settle, future, True, result)

    WORKERS.submit(job)
    return future


async def _guarded(awaitable: Awaitable[T]) -> tuple[bool, Any]:
    """Catch what the user's coroutine raises inside its own task: asyncio would let `SystemExit`
    and `KeyboardInterrupt` escape the event loop and end the process."""
    try:
        return True, await awaitable
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, GeneratorExit: the user's
        return False, exc


async def detached(awaitable: Awaitable[T]) -> T:
    """Await a user's coroutine as its own task; if we are cancelled, cancel it but never wait for it."""
    try:
        task = asyncio.ensure_future(_guarded(awaitable))
    except BaseException as exc:
        raise UserCodeError(describe(exc)) from None
    task.add_done_callback(_forget)
    try:
        ok, value = await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.done() and task.cancelled() and not _being_cancelled():
            raise UserCodeError("CancelledError: the function cancelled itself") from None
        task.cancel()
        raise
    if not ok:
        raise UserCodeError(describe(value))
    return cast(T, value)


def _being_cancelled() -> bool:
    """True when the current task (ours, not the user's) is the one being cancelled."""
    current = asyncio.current_task()
    cancelling = getattr(current, "cancelling", None)
    return bool(cancelling()) if cancelling is not None else False


def _forget(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned task's outcome so asyncio does not log 'exception never retrieved'."""
    if not task.cancelled():
        task.exception()


def _is_async(fn: Callable[..., Any]) -> bool:
    try:
        return _async_seen[fn]
    except KeyError:
        found = _async_seen[fn] = inspect.iscoroutinefunction(fn)
        return found
    except TypeError:  # an unhashable callable
        return inspect.iscoroutinefunction(fn)


_async_seen: weakref.WeakKeyDictionary[Callable[..., Any], bool] = weakref.WeakKeyDictionary()


async def call_user(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a user's function, sync or async, off the run's critical path; raise UserCodeError on any failure."""
    if _is_async(fn):
        try:
            coroutine = fn(*args)
        except BaseException as exc:
            raise UserCodeError(describe(exc)) from None
        return await detached(coroutine)
    result = await in_thread(fn, *args)
    if not isinstance(result, (str, dict)) and inspect.isawaitable(result):  # a sync function that hands back a coroutine (a partial, a lambda)
        return await detached(result)
    return result


async def call_user_within(who: str, timeout: float, fn: Callable[..., Any], *args: Any) -> Any:
    """`call_user` with a time limit, for user code that plays a part in a conversation (a python
    simulated user, a python attacker): an overrun or a failure is a ProviderError naming `who`."""
    try:
        return await asyncio.wait_for(call_user(fn, *args), timeout)
    except asyncio.TimeoutError:
        raise ProviderError(f"{who} did not answer within {timeout:g}s") from None
    except UserCodeError as exc:
        raise ProviderError(f"{who} raised {exc}") from None


def note_running(note: Path, where: Sequence[Any]) -> None:
    """Write in `note` that the user code at `where` (a check's place in its suite) is about to run in this
    process: should it end the process, whoever takes over reads it (`read_note`) and knows what ended it.
    The caller clears it (`clear_note`) once that code has returned."""
    with contextlib.suppress(OSError):
        note.write_text(json.dumps({"where": list(where), "pid": os.getpid()}, ensure_ascii=False), encoding="utf-8")


def clear_note(note: Path) -> None:
    with contextlib.suppress(OSError):
        note.unlink(missing_ok=True)


def read_note(note: Path) -> tuple[tuple[Any, ...], int] | None:
    """The `where` and the process of the user code `note` says was running, or None (no such note)."""
    try:
        said = json.loads(note.read_text(encoding="utf-8"))
        return tuple(said["where"]), int(said["pid"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
