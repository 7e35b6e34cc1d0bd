"""Calling the user's code (python providers, assertions, simulated users) so it cannot end or hang a run.

Sync functions run on daemon threads that are never joined: one that overruns its time limit is
abandoned where it hangs and the process still exits when the run ends. Every exception it raises,
`SystemExit` and `KeyboardInterrupt` included, comes back as a `UserCodeError` naming it.
Async functions run as their own task on the run's loop; on a time-out they are cancelled and
abandoned, never awaited (a coroutine that swallows its cancellation cannot hold the run).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from evalspec.errors import EvalspecError

T = TypeVar("T")
MESSAGE_LIMIT = 500


class UserCodeError(EvalspecError):
    """The user's code raised (anything, `SystemExit` included)."""


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
    """Daemon threads that take work from one queue; a new one starts whenever none is idle,
    so a thread stuck in user code never blocks later work or the process exit."""

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()
        self.started = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            spawn = self._idle == 0
            if spawn:
                self.started += 1
            else:
                self._idle -= 1
        self._work.put(job)
        if spawn:
            threading.Thread(target=self._loop, name=f"evalspec-user-{self.started}", daemon=True).start()

    def _loop(self) -> None:
        while True:
            job = self._work.get()
            with contextlib.suppress(BaseException):  # a job reports its own outcome; the worker lives on
                job()
            with self._lock:
                self._idle += 1


WORKERS = DaemonWorkers()


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():  # the caller gave up (time-out or cancellation)
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def post(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    """`call_soon_threadsafe` that does nothing once the run's loop is gone."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, *args)


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run `fn(*args)` on a daemon worker; anything it raises becomes a UserCodeError."""
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
    return await future


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


async def call_user(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a user's function, sync or async, off the run's critical path; raise UserCodeError on any failure."""
    import inspect

    if inspect.iscoroutinefunction(fn):
        try:
            coroutine = fn(*args)
        except BaseException as exc:
            raise UserCodeError(describe(exc)) from None
        return await detached(coroutine)
    result = await in_thread(fn, *args)
    if inspect.isawaitable(result):  # a sync function that hands back a coroutine (a partial, a lambda)
        return await detached(result)
    return result
