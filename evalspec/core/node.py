"""Running the user's JavaScript (the `javascript` check; promptfoo's test generators and prompt functions
at import) in Node.js children that cannot hang or end a run.

A few long-lived `node` workers (`evalspec/data/node_runner.js`) serve requests one at a time: a JSON
line in on stdin, a JSON line back on a pipe of its own (the worker's fd named on its command line), the
request's `id` echoed in it. The user's code never sees that pipe: what it prints (console, stdout,
stderr) is kept, bounded, with its answer, and never read as one. Starting node costs tens of
milliseconds (more on a busy machine), so a worker serves many checks; at most `NodePool.size` run at
once. A request that overruns its time limit stops its worker (SIGKILL, then reaped); a worker that
exits is replaced by the next request. Workers end with the process (their stdin closes; atexit kills
any still busy, and none starts after it), and a forked child starts its own instead of sharing its
parent's pipes."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import subprocess
import threading
import time
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from evalspec.core.errors import GradingError

WAIT_LIMIT = 600.0  # seconds a check may wait for a free worker (not charged to its own time limit)
NODE_MISSING = ("Node.js is not installed: no `node` on PATH (javascript checks run in it; "
                "install Node.js 18 or later)")


def node_binary() -> str | None:
    """The `node` that javascript checks run in, or None."""
    return shutil.which("node")


@cache
def node_version() -> tuple[int, ...]:
    """The version of `node` on PATH, as (major, minor, patch); () when there is none or it says none."""
    node = node_binary()
    if node is None:
        return ()
    try:
        said = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(int(part) for part in said.strip().lstrip("v").split(".") if part.isdigit())


def typescript_problem(path: Path) -> str | None:
    """Why node cannot run `path` when it is TypeScript (node strips types from 22.18 on), or None."""
    if path.suffix.lower() not in (".ts", ".cts", ".mts") or node_version() >= (22, 18):
        return None
    return f"node {'.'.join(map(str, node_version()))} cannot run TypeScript (node 22.18 or later strips its types)"


@cache
def _runner() -> str:
    return resources.files("evalspec").joinpath("data/node_runner.js").read_text("utf-8")


class NodeWorker:
    """One `node` process serving requests in turn (in `cwd`, else this process's folder). `command`
    starts another program that serves the same way (the answers' fd appended to it)."""

    def __init__(self, node: str, cwd: str | None = None, command: list[str] | None = None) -> None:
        self.node = node
        answers, write_end = os.pipe()
        try:
            self.proc = subprocess.Popen([*(command or [node, "-e", _runner()]), str(write_end)], stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, bufsize=0,
                                         pass_fds=(write_end,), cwd=cwd)
        except BaseException:
            os.close(answers)
            raise
        finally:
            os.close(write_end)  # node's copy only: its exit is then the end of this pipe
        self.answers = answers
        self._rest = b""  # what was read after the last answer's end
        self._asked = 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(self, request: dict[str, Any], deadline: float) -> dict[str, Any]:
        """Send one request; its answer, read by `deadline` (time.monotonic()): TimeoutError after it,
        EOFError when node exited."""
        assert self.proc.stdin is not None
        self._asked += 1
        data = json.dumps({**request, "id": self._asked}, ensure_ascii=False, default=str).encode("utf-8") + b"\n"
        try:
            self.proc.stdin.write(data)
        except (BrokenPipeError, ValueError):
            raise EOFError from None
        while True:
            answer: dict[str, Any] = json.loads(self._line(deadline))
            if answer.get("id") in (self._asked, None):  # None: a request it could not read
                answer.pop("id")
                return answer

    def _line(self, deadline: float) -> bytes:
        """The next line of the answer pipe, in time linear in its length."""
        parts: list[bytes] = []
        chunk = self._rest
        while (end := chunk.find(b"\n")) < 0:
            parts.append(chunk)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.answers], [], [], left)[0]:
                self._rest = b"".join(parts)
                raise TimeoutError
            chunk = os.read(self.answers, 1 << 20)
            if not chunk:
                self._rest = b"".join(parts)
                raise EOFError
        parts.append(chunk[:end])
        self._rest = chunk[end + 1:]
        return b"".join(parts)

    def stop(self) -> None:
        """Kill node and reap it (its pipes closed)."""
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.close_pipes()

    def close_pipes(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        if self.answers >= 0:
            with contextlib.suppress(OSError):
                os.close(self.answers)
            self.answers = -1


def answer_of(worker: NodeWorker, request: dict[str, Any], limit: float, limit_name: str) -> dict[str, Any]:
    """`worker`'s answer to `request` within `limit` seconds; a GradingError when it overruns (the worker
    is stopped here) or exits."""
    try:
        return worker.ask(request, time.monotonic() + limit)
    except TimeoutError:
        worker.stop()
        raise GradingError(f"timed out after {limit:g}s ({limit_name}): its node process was stopped") from None
    except EOFError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.proc.wait(timeout=1)
        raise GradingError(f"node exited (exit code {worker.proc.poll()}) while running the check") from None


def call_once(request: dict[str, Any], limit: float, cwd: str, limit_name: str) -> dict[str, Any]:
    """The answer to `request` of a node started for it in the folder `cwd`, stopped after it (promptfoo's
    test generators, run once at import in their config's folder). A GradingError when node is missing,
    cannot start, exits or overruns `limit` seconds (`limit_name` says which setting that is)."""
    node = node_binary()
    if node is None:
        raise GradingError(NODE_MISSING)
    try:
        worker = NodeWorker(node, cwd)
    except OSError as exc:
        raise GradingError(f"node could not start: {exc}") from None
    try:
        return answer_of(worker, request, limit, limit_name)
    finally:
        worker.stop()


class NodePool:
    """The workers of this process: idle ones are reused; at most `size` serve requests at once."""

    def __init__(self, size: int = 0) -> None:
        self.size = size or max(2, min(4, os.cpu_count() or 2))
        self._lock = threading.Condition()
        self._idle: list[NodeWorker] = []
        self._busy: set[NodeWorker] = set()
        self._starting = 0  # workers being started for a request: they count towards `size`
        self._closed = False

    def call(self, request: dict[str, Any], limit: float) -> dict[str, Any]:
        """The worker's answer to `request` within `limit` seconds of its own run (waiting for a free
        worker is not charged to it; that wait is bounded by `WAIT_LIMIT`). A GradingError when node is
        missing, cannot start, exits or overruns (then it is stopped)."""
        node = node_binary()
        if node is None:
            raise GradingError(NODE_MISSING)
        worker = self._take(node, time.monotonic() + WAIT_LIMIT)
        try:
            answer = answer_of(worker, request, limit, "options.grade_timeout")
        except BaseException:
            self._drop(worker)
            raise
        self._give(worker)
        return answer

    def _take(self, node: str, deadline: float) -> NodeWorker:
        with self._lock:
            while True:
                if self._closed:
                    raise GradingError("the run is ending: no node process is started for this check")
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive() and worker.node == node:
                        self._busy.add(worker)
                        return worker
                    worker.stop()
                if len(self._busy) + self._starting < self.size:
                    self._starting += 1  # the slot is this request's while node starts (outside the lock)
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GradingError(f"no node process was free within {WAIT_LIMIT:g}s to run the check")
                self._lock.wait(left)
        try:
            worker = NodeWorker(node)
        except BaseException as exc:
            with self._lock:
                self._starting -= 1
                self._lock.notify()
            if isinstance(exc, OSError):
                raise GradingError(f"node could not start: {exc}") from None
            raise
        with self._lock:
            self._starting -= 1
            if not self._closed:
                self._busy.add(worker)
                return worker
            self._lock.notify()
        worker.stop()  # closed while it started: a node no one stops would outlive the run
        raise GradingError("the run is ending: no node process is started for this check")

    def _give(self, worker: NodeWorker) -> None:
        with self._lock:
            self._busy.discard(worker)
            self._idle.append(worker)
            self._lock.notify()

    def _drop(self, worker: NodeWorker) -> None:
        worker.stop()
        with self._lock:
            self._busy.discard(worker)
            self._lock.notify()

    def live(self) -> int:
        """Node processes of this pool still running."""
        with self._lock:
            return sum(w.alive() for w in [*self._idle, *self._busy])

    def close(self) -> None:
        """Stop every worker (at exit)."""
        with self._lock:
            self._closed = True
            workers = [*self._idle, *self._busy]
            self._idle, self._busy = [], set()
        for worker in workers:
            worker.stop()

    def forget(self) -> None:
        """In a forked child: the parent's workers stay the parent's; the child closes its copies of
        their pipes (so a worker still sees its stdin close when the parent exits)."""
        for worker in [*self._idle, *self._busy]:
            worker.close_pipes()
            worker.proc.returncode = 0  # not this process's child: never waited for here
        self._lock = threading.Condition()
        self._idle, self._busy, self._starting = [], set(), 0


POOL = NodePool()
atexit.register(POOL.close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=POOL.forget)
