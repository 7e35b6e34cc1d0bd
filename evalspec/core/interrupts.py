"""Run the event loop so that Ctrl-C and SIGTERM (how CI cancels a job) end a run the same way.

The first signal cancels the run (its journal is kept, `--resume` completes it); a second one stops
waiting for clean-up. Tasks still alive when the run ends (a user's coroutine that ignores its
cancellation) get a short grace period and are then left behind: they cannot hold the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

from evalspec.core.errors import EvalspecError

T = TypeVar("T")
GRACE_S = 1.0


class Interrupted(EvalspecError):
    """The run was stopped by a signal; `exit_code` is 128 + its number (130 for Ctrl-C, 143 for SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def run_interruptible(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, with SIGINT and SIGTERM turned into `Interrupted`."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    task = loop.create_task(main)
    received: list[int] = []

    def on_signal(signum: int) -> None:
        if received:  # a second signal: stop waiting for a clean shutdown
            raise KeyboardInterrupt
        received.append(signum)
        task.cancel()

    installed = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, on_signal, int(signum))
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or Windows
            pass
    try:
        return loop.run_until_complete(task)
    except (asyncio.CancelledError, KeyboardInterrupt):
        if received:
            raise Interrupted(received[0]) from None
        raise
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
        _close(loop)
        asyncio.set_event_loop(None)


def _close(loop: asyncio.AbstractEventLoop) -> None:
    leftovers = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in leftovers:
        t.cancel()
    with contextlib.suppress(BaseException):
        if leftovers:
            loop.run_until_complete(asyncio.wait(leftovers, timeout=GRACE_S))
        loop.run_until_complete(loop.shutdown_asyncgens())
    loop.set_exception_handler(lambda _loop, _context: None)  # abandoned tasks are expected, not news
    loop.close()
