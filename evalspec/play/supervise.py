"""User code cannot end the run (docs/en/rule-self-tests.md#verdicts-that-hold): `evalspec run` plays in a forked child the parent watches.

Nothing a user's provider, check or `atexit` hook does can be caught inside the process once it calls
`os._exit` or crashes the interpreter, so the process the caller waits on plays nothing: it forks the
run, and the child tells it through a pipe which conversations it starts (`+key`), which are journaled
(`-key`) and, last, the exit code it chose (`=code`). A child that ends without choosing one was ended by
the code it was running: the parent names the cause and plays the rest of the run in a new child, as
`--resume` would. The conversation that was being played is an error naming the cause, or, when one of
its checks was running (`play.watch`), that check is, and the new child grades its other checks on the
replies it received (should another check end that child too, it is an error as well); when several
were in flight, the new child first plays them one at a time (suspects), so the next end names one.
The exit code is the last child's, and never 0 after such an end; an `atexit` hook that exits after
the child chose its code changes nothing.

The child also loads the suites, their plugins and python modules, before it plays (`ready`, `!`):
user code it imports or runs then says what it is (`evalspec.core.pyref.step`: `~"what"` … `~`), so a
child that ends before it is ready is a config error naming the plugin or module being loaded (exit
2: nothing was run). `validate` runs whole in such a child (`watch`).

Only where it cannot change what a run does: a POSIX system, with real standard streams (not inside
an in-process test runner that captures `sys.stdout`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from evalspec.core.exitcodes import ExitCode


@dataclass
class PlayGuard:
    """What one child of a supervised run is told and tells: set as `RunOptions.guard`."""

    crashed: dict[str, str] = field(default_factory=dict)  # instance key -> the error recorded instead of playing
    suspects: set[str] = field(default_factory=set)  # instance keys played one at a time, before the rest
    resumed: bool = False  # an earlier child ended: this one continues its journal
    fd: int | None = None
    parent: int = 0  # the watching process (the pid people see)
    pid: int = 0  # the child itself: processes it forks (players) say nothing about their own loading

    def ready(self) -> None:
        """The suites are loaded and checked: what ends the child from here on ends a run, not a setup."""
        self._send("!")

    def step(self, what: str | None) -> None:
        """`evalspec.core.pyref.step`'s line: user code `what` begins (None: the innermost one ended)."""
        if os.getpid() == self.pid:
            self._send("~" + ("" if what is None else json.dumps(what, ensure_ascii=False)))

    def started(self, key: str) -> None:
        self._send("+" + json.dumps(key, ensure_ascii=False))

    def finished(self, key: str) -> None:
        self._send("-" + json.dumps(key, ensure_ascii=False))

    def exiting(self, code: int) -> None:
        self._send(f"={code}")

    def _send(self, line: str) -> None:
        if self.fd is not None:
            data = (line + "\n").encode()
            while data:  # one line is below PIPE_BUF: a single write, whole
                data = data[os.write(self.fd, data):]


def can_supervise() -> bool:
    if not hasattr(os, "fork") or os.environ.get("EVALSPEC_SUPERVISE") == "0":
        return False
    try:
        sys.stdout.fileno()
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # captured in-process (click's CliRunner, pytest's capsys)
        return False
    return True


def cause_of(status: int) -> str:
    """How a child ended, for people: 'exit status 0 (os._exit?)', 'signal SIGSEGV'."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"was killed by signal {name}"
    return f"exited with status {code} (os._exit or a crash in user code)"


def supervise(body: Callable[[PlayGuard], None], journal: Path, resume_hint: str) -> NoReturn:
    """Run `body(guard)` (which plays the run and ends with `sys.exit(code)`) in forked children until
    one chooses its exit code; exit with that code (3 instead of 0 when user code ended a child)."""
    guard = PlayGuard()
    ended = False
    empty_ends = 0
    while True:
        heard, status = _play_once(body, guard)
        if heard.code is not None:
            _exit(ExitCode.TOO_MANY_ERRORS if ended and heard.code == ExitCode.OK else heard.code)
        if not heard.ready and not guard.resumed:
            _ended_while_loading(heard.steps, status)
        ended = guard.resumed = True
        cause = cause_of(status)
        in_flight = [key for key in heard.started if key not in guard.crashed]
        again = [key for key in heard.started if key in guard.crashed]  # graded again: another check ended it
        names = ", ".join(key.split("::")[1] for key in in_flight[:5]) + (" …" if len(in_flight) > 5 else "")
        if not journal.exists() or (not in_flight and not again and empty_ends):
            sys.stderr.write(f"error: evalspec's run process {cause} outside any conversation; "
                             + (f"finished tests are kept in {journal}; resume with: {resume_hint}\n"
                                if journal.exists() else "nothing was kept.\n"))
            sys.exit(ExitCode.TOO_MANY_ERRORS)
        if again:  # (conversations are graded again one at a time, before any other is played)
            error, said = ended_in(journal.parent, again[0], cause, again=True)
            guard.crashed[again[0]] = error
            sys.stderr.write(f"error: {again[0].split('::')[1]}: {said}\n")
        elif not in_flight:
            empty_ends += 1
        elif len(in_flight) == 1 or set(in_flight) <= guard.suspects:
            error, said = ended_in(journal.parent, in_flight[0], cause)
            guard.crashed[in_flight[0]] = error
            guard.suspects.discard(in_flight[0])
            sys.stderr.write(f"error: {names.split(', ')[0]}: {said}\n")
        else:
            guard.suspects.update(in_flight)
            sys.stderr.write(f"error: evalspec's run process {cause} while playing {names}; they are "
                             f"played again one at a time to find which one ends it\n")
        sys.stderr.flush()


def _exit(code: int) -> NoReturn:
    """The parent ends with the child's code as soon as the child has: it ran no user code and holds
    nothing to clean up, and tearing its interpreter down would only add to every run's time."""
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def ended_in(run_dir: Path, key: str, cause: str, again: bool = False) -> tuple[str, str]:
    """A conversation in flight, alone, when user code ended the child (`cause`): the error it is recorded
    with, and what the run says about it. When one of its checks was running (`play.watch`), that check
    is the error and the conversation's other checks are graded on the replies it received; otherwise
    (it was being played) the conversation is an error."""
    from evalspec.config.paths import format_path
    from evalspec.play.watch import GradingWatch

    where = GradingWatch.of(run_dir / "grading", key).running()
    if where is None:
        error = f"user code ended evalspec's process: it {cause} while this conversation was " + \
            ("graded again" if again else "played")
        return error, f"{error}; recorded as an error, the run continues"
    error = f"user code ended evalspec's process: it {cause} while this check ran"
    return error, (f"user code ended evalspec's process{' again' if again else ''}: it {cause} while its check "
                   f"{format_path(where)} ran; that check is recorded as an error{' too' if again else ''}, and "
                   "the conversation's other checks are graded on the replies it received; the run continues")


def watch(body: Callable[[], None]) -> NoReturn:
    """`validate`: `body` (which ends with `sys.exit(code)` or returns) in a watched child; one that ends
    the child without choosing a code is a config error naming the user code it was loading."""
    heard, status = _play_once(lambda _guard: body(), PlayGuard())
    if heard.code is not None:
        sys.exit(heard.code)
    _ended_while_loading(heard.steps, status)


def _ended_while_loading(steps: list[str], status: int) -> NoReturn:
    """A child ended before the suites were ready: a config error, as the loader's own are printed (unless
    it was ended by the signal the parent was sent and passed on: then the parent ends as it would have)."""
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in _forwarded | {signal.SIGINT}:
        what = "terminated" if os.WTERMSIG(status) == signal.SIGTERM else "interrupted"
        sys.stderr.write(f"\n{what}: nothing was run.\n")
        sys.exit(128 + os.WTERMSIG(status))
    cause = cause_of(status)
    text = (f"{': '.join(steps)}: ended evalspec's process: it {cause}; code that is loaded must not end "
            "the process (remove it or fix it)" if steps else
            f"evalspec's process {cause} while the suites were loaded and checked, before any call")
    sys.stderr.write(f"error {text}\n1 problem found; nothing was run.\n")
    sys.stderr.flush()
    sys.exit(ExitCode.CONFIG_ERROR)


@dataclass
class _Heard:
    """What one child said: the exit code it chose, the keys it started and did not journal, whether it
    was ready to play, and the user code it was loading (outermost first) when it last spoke."""

    code: int | None = None
    started: list[str] = field(default_factory=list)
    ready: bool = False
    steps: list[str] = field(default_factory=list)


def _play_once(body: Callable[[PlayGuard], None], guard: PlayGuard) -> tuple[_Heard, int]:
    """One child: what it said, and its wait status."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(body, PlayGuard(guard.crashed, guard.suspects, guard.resumed, write_fd, parent), parent)
    os.close(write_fd)
    forward = _forward_signals(pid)
    try:
        heard = _listen(read_fd)
        _, status = os.waitpid(pid, 0)
    finally:
        for signum, previous in forward.items():
            signal.signal(signum, previous)
        os.close(read_fd)
    return heard, status


_forwarded: set[int] = set()  # the signals the parent was sent and passed on


def _forward_signals(pid: int) -> dict[int, signal._HANDLER]:
    """SIGTERM (and SIGINT when no terminal sends it to the whole group) go on to the child, which stops
    the run as it always has; the parent itself waits for the child's exit code."""
    def forward(signum: int, _frame: object) -> None:
        _forwarded.add(signum)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    previous: dict[int, signal._HANDLER] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        by_terminal = signum == signal.SIGINT and _has_terminal()
        previous[signum] = signal.signal(signum, signal.SIG_IGN if by_terminal else forward)
    return previous


def _has_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno()) and os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (AttributeError, OSError, ValueError):
        return False


def _listen(fd: int) -> _Heard:
    heard = _Heard()
    started: dict[str, None] = {}
    pending = b""
    while True:
        data = os.read(fd, 1 << 16)
        if not data:
            heard.started = list(started)
            return heard
        lines = (pending + data).split(b"\n")
        pending = lines.pop()
        for raw in lines:
            line = raw.decode()
            if line[:1] == "+":
                started[json.loads(line[1:])] = None
            elif line[:1] == "-":
                started.pop(json.loads(line[1:]), None)
            elif line[:1] == "=":
                heard.code = int(line[1:])
            elif line == "!":
                heard.ready = True
            elif line == "~":
                del heard.steps[-1:]
            elif line[:1] == "~":
                heard.steps.append(json.loads(line[1:]))


def _child(body: Callable[[PlayGuard], None], guard: PlayGuard, parent: int) -> NoReturn:
    """The run, in the child: its exit code goes to the parent before `atexit` hooks run."""
    code: int = ExitCode.TOO_MANY_ERRORS
    with contextlib.suppress(Exception):  # Linux: the child ends with its parent (kill -9 of `evalspec run`)
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(ExitCode.TOO_MANY_ERRORS)
    from evalspec.core import pyref as loading
    from evalspec.core.usercode import WORKERS

    guard.pid = os.getpid()
    loading.TELL = guard.step  # user code loaded here says what it is (docs/en/rule-self-tests.md#verdicts-that-hold: a plugin that exits is named)
    WORKERS.reset()  # the parent's threads did not come along
    try:
        body(guard)
        code = ExitCode.OK
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:  # Ctrl-C while the suites were loaded (the run itself handles its own)
        with contextlib.suppress(BaseException):
            sys.stderr.write("\ninterrupted: nothing was run.\n")
        code = ExitCode.INTERRUPTED
    except BaseException:  # an evalspec bug: shown as it would be without the supervisor
        import traceback

        traceback.print_exc()
        code = 1
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
        guard.exiting(code)
    import atexit

    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()  # they may end the process: the parent already has the code
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
