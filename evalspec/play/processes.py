"""A large local run on every core: conversations played by forked child processes.

One Python process plays conversations on one core at most (the GIL), so a run of thousands of
conversations forks `n` children once the plan is checked and preflighted. The children take the plan
in chunks of `Claims.CHUNK` positions, in plan order, each the next chunk when it has played its last
(`-j / n` conversations at a time): a faster child plays more, and none idles at the end while another
still has a share to play. Each sends every finished record, already
redacted, through a pipe as its journal line; the parent decodes it once (orjson reads a line faster
than pickle would) and keeps the only journal, the plan order, the light records and the progress
callback, exactly as a one-process run does. A position no child
delivered (a child that died) is played by the parent afterwards; when a check's user code ended the
child while it graded that conversation, the parent grades its kept replies again instead, with that
check as its error (`play.watch`).

Used only where it cannot change what a run does: a POSIX system with more than one core, no
`--executor ray`, and no provider, judge, simulator or embedder with `rpm` or `max_concurrency`
(each process would apply those limits on its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import struct
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from evalspec.config.model import ProviderSpec, Suite
from evalspec.plan.build import Instance
from evalspec.results.journal import decode, encode_line
from evalspec.results.record import Record

HEADER = struct.Struct("<II")  # plan position, length of the journal line that follows
PIPE_READ = 1 << 16  # bytes per read: a Linux pipe holds 64 KiB (a larger request only costs a larger allocation)
SMALLEST = 2000  # conversations: below this, forking costs more than it saves
Play = Callable[[Instance], Awaitable[Record]]
Player = Callable[[], tuple[Play, Callable[[], Awaitable[None]]]]  # made in the child: (play, close)
Receive = Callable[[int, bytearray, dict[str, Any]], None]


def process_count(suites: list[Suite], conversations: int, concurrency: int, requested: int | None = None) -> int:
    """How many processes to play `conversations` on (1: this process alone)."""
    if not hasattr(os, "fork"):
        return 1  # Windows: one process, whatever was asked
    if requested is not None:
        return max(1, min(requested, conversations))
    # only Linux by default: on macOS a fork after threads have started is unsafe (CPython spawns there)
    if sys.platform != "linux" or conversations < SMALLEST or concurrency < 2:
        return 1
    if any(_limited(spec) for suite in suites for spec in _specs(suite)):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, concurrency // 2, conversations // (SMALLEST // 2)))


class Claims:
    """Which child plays which positions: chunks of `CHUNK` positions handed out in plan order to whichever
    child walks past the end of its last one (a counter in memory the children share), and who took each
    chunk, to name the child a position was lost with. Made before the children are forked."""

    CHUNK = 64

    def __init__(self, size: int) -> None:
        import multiprocessing
        import tempfile

        shared = multiprocessing.get_context("fork")
        self.next = shared.Value("q", 0, lock=False)  # the next chunk to hand out
        self.owners = shared.Array("i", max(1, -(-size // self.CHUNK)), lock=False)  # 0: none; else child + 1
        # taken under a POSIX record lock on this file: the kernel lets it go with a child that dies holding it
        self._lock = tempfile.TemporaryFile()  # noqa: SIM115  (open as long as the claims are)

    def keep(self, index: int, open_: Callable[[int], bool]) -> Callable[[int, str], bool]:
        """Child `index`'s test for the positions of a walk through the plan in order: those of the chunks
        it took (a new one each time the walk passes the end of its last), if still to be played."""
        import fcntl  # (POSIX, as forked children are)

        first, last = -1, -1

        def keep(position: int, _key: str) -> bool:
            nonlocal first, last
            if position > last:
                fcntl.lockf(self._lock, fcntl.LOCK_EX)
                try:
                    chunk = self.next.value
                    self.next.value = chunk + 1
                finally:
                    fcntl.lockf(self._lock, fcntl.LOCK_UN)
                if chunk < len(self.owners):
                    self.owners[chunk] = index + 1
                first, last = chunk * self.CHUNK, (chunk + 1) * self.CHUNK - 1
            return position >= first and open_(position)
        return keep

    def owner(self, position: int) -> int | None:
        """The child that took `position`'s chunk (None: no child did)."""
        taken = int(self.owners[position // self.CHUNK]) if position // self.CHUNK < len(self.owners) else 0
        return taken - 1 if taken else None


def _specs(suite: Suite) -> Iterator[ProviderSpec]:
    yield from suite.providers
    yield from (spec for spec in (suite.judge, suite.simulator, suite.embedder) if spec is not None)
    yield from suite.simulators


def _limited(spec: ProviderSpec) -> bool:
    return spec.rpm is not None or spec.max_concurrency is not None


class Children:
    """The forked players of one run and the pipes their records come back on."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self._open: set[int] = set()

    def start(self, n: int, pending: Callable[[int], Iterator[tuple[int, Instance]]],
              play: Player, concurrency: int) -> list[int]:
        """Fork `n` children; child `i` plays `pending(i)` with `play()`'s player (made in the child)."""
        fds: list[int] = []
        for index in range(n):
            read_fd, write_fd = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the child: never returns
                os.close(read_fd)
                for other in fds:
                    os.close(other)
                _child(write_fd, pending(index), play, concurrency)
            os.close(write_fd)
            self.pids.append(pid)
            fds.append(read_fd)
        self._open = set(fds)
        return fds

    async def collect(self, fds: list[int], receive: Receive) -> None:
        """Hand every (position, journal line, record) the children send to `receive`, until every pipe closes."""
        loop = asyncio.get_running_loop()
        finished = loop.create_future()
        buffers = {fd: bytearray() for fd in fds}

        def readable(fd: int) -> None:
            try:
                data = os.read(fd, PIPE_READ)
            except BlockingIOError:
                return
            if not data:  # the child is done (or dead): a cut-off last frame is dropped, its test replayed
                loop.remove_reader(fd)
                os.close(fd)
                self._open.discard(fd)
                if not self._open and not finished.done():
                    finished.set_result(None)
                return
            buffer = buffers[fd]
            buffer += data
            start = 0
            while len(buffer) - start >= HEADER.size:
                position, length = HEADER.unpack_from(buffer, start)
                end = start + HEADER.size + length
                if end > len(buffer):
                    break
                line = buffer[start + HEADER.size:end]
                receive(position, line, decode(line))
                start = end
            del buffer[:start]

        for fd in fds:
            os.set_blocking(fd, False)
            loop.add_reader(fd, readable, fd)
        try:
            await finished
        finally:
            for fd in list(self._open):
                loop.remove_reader(fd)
                os.close(fd)
            self._open.clear()

    def stop(self) -> None:
        """End the children (a finished one has exited already) and reap them."""
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in self.pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        self.pids.clear()

    def reap(self) -> dict[int, int]:
        """Wait for the children (their pipes closed): the wait status of each, by its index."""
        statuses = {}
        for index, pid in enumerate(self.pids):
            with contextlib.suppress(ChildProcessError):
                statuses[index] = os.waitpid(pid, 0)[1]
        self.pids.clear()
        return statuses


def _child(write_fd: int, pending: Iterator[tuple[int, Instance]],
           play: Player, concurrency: int) -> None:
    """A child's whole life: a fresh event loop and user-code threads, its share of the plan, then exit."""
    code = 0
    try:
        gc.freeze()  # what came from the parent is never collected here: no collection walks (or copies) it
        signal.set_wakeup_fd(-1)  # the parent's loop owns that socket
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)  # the parent decides what an interruption means
        asyncio.events._set_running_loop(None)  # forked from inside the parent's running loop
        from evalspec.core.usercode import WORKERS

        WORKERS.reset()  # the parent's threads did not come along
        asyncio.run(_play_share(write_fd, pending, play, concurrency))
    except BaseException as exc:  # anything: the parent replays what this child did not deliver
        with contextlib.suppress(BaseException):
            sys.stderr.write(f"evalspec: a worker process stopped: {exc!r}\n")
        code = 1
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


async def _play_share(write_fd: int, pending: Iterator[tuple[int, Instance]],
                      play: Player, concurrency: int) -> None:
    player, close = play()

    async def worker() -> None:
        for position, inst in pending:
            record = await player(inst)
            line = encode_line(record)
            frame = HEADER.pack(position, len(line)) + line
            view = memoryview(frame)
            while view:  # a full pipe blocks this child until the parent has read: back-pressure
                view = view[os.write(write_fd, view):]

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    finally:
        await close()
        os.close(write_fd)

