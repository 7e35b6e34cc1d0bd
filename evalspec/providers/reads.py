"""The files a python provider reads while it answers, so its cached replies last only while they are
unchanged (docs/en/providers.md#the-cache): editing a prompt file the bot reads is a cache miss.

Opens are seen through Python's audit hook (event "open": `open()`, `pathlib`, `os.open`, `io.open_code`;
event "sqlite3.connect": a database sqlite opens from C, with its `-wal` file).
The hook is process-global and cannot be removed, so it is installed once per process and attributes an
open to the call recording in the current context (a `ContextVar`): concurrent conversations on one event
loop, on threads (`carried`) or in forked players each see only their own opens. Files opened only for
writing, evalspec's own, the standard library's, installed packages', compiled `.pyc` files and device or
process files are left out; so is whatever the caller excludes (the cache's own folder).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import inspect
import os
import site
import stat
import sys
import sysconfig
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

MAX_FILES = 200  # a reply that read more files than this is not cached (checking them would cost each hit)
_RECORDING: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("evalspec_reads", default=None)
_installed = False
_install_lock = threading.Lock()


def _sqlite_files(database: Any) -> list[str]:
    """The files a `sqlite3.connect(database)` reads: the database and its write-ahead log (none in memory)."""
    name = os.fsdecode(database)
    if name.startswith("file:"):  # a URI: file:path?mode=ro
        name = urllib.parse.unquote(urllib.parse.urlsplit(name).path)
    if name in ("", ":memory:"):
        return []
    path = os.path.abspath(name)
    return [path, path + "-wal"]


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in ("open", "sqlite3.connect"):
        return
    reads = _RECORDING.get()
    if reads is None:
        return
    try:  # an audit hook that raises would fail the user's open(): nothing here may
        if event == "sqlite3.connect":
            reads.update(_sqlite_files(args[0]))
            return
        path, flags = args[0], args[2] if len(args) > 2 else 0
        if isinstance(path, int) or (isinstance(flags, int) and flags & os.O_ACCMODE == os.O_WRONLY):
            return
        reads.add(os.path.abspath(os.fsdecode(path)))
    except Exception:  # noqa: BLE001, S110 - a path that cannot be named is not one we can check either
        pass


def install() -> None:
    """Install the audit hook, once per process (a forked child keeps its parent's)."""
    global _installed
    with _install_lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True


@contextlib.contextmanager
def recording() -> Iterator[set[str]]:
    """Collect the paths opened for reading in this context (and on threads it `carried` to) until the
    block ends; a recording inside another adds its paths to the outer one too."""
    install()
    outer = _RECORDING.get()
    reads: set[str] = set()
    token = _RECORDING.set(reads)
    try:
        yield reads
    finally:
        _RECORDING.reset(token)
        if outer is not None:
            outer.update(reads)


def note(paths: Iterable[str]) -> None:
    """Count `paths` as read by the current recording, if any (what a module read when it was imported)."""
    reads = _RECORDING.get()
    if reads is not None:
        reads.update(paths)


def carried(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, such that when it runs on a worker thread its opens count for the current recording (a thread
    starts with a context of its own). A coroutine function runs as a task, which copies the context itself."""
    if _RECORDING.get() is None or inspect.iscoroutinefunction(fn):
        return fn
    context = contextvars.copy_context()

    def in_context(*args: Any) -> Any:
        return context.run(fn, *args)

    return in_context


@contextlib.contextmanager
def ignored() -> Iterator[None]:
    """No recording in this block (evalspec's own reads during a call)."""
    token = _RECORDING.set(None)
    try:
        yield
    finally:
        _RECORDING.reset(token)


def _excluded_roots() -> tuple[str, ...]:
    roots = {str(Path(__file__).resolve().parent.parent)}  # evalspec itself
    roots.update(v for k, v in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib", "purelib", "platlib"))
    with contextlib.suppress(Exception):
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    expanded = {os.path.abspath(r) for r in roots if r} | {os.path.realpath(r) for r in roots if r}
    return tuple(sorted(r.rstrip(os.sep) + os.sep for r in expanded)) + ("/dev/", "/proc/", "/sys/")


_EXCLUDED: tuple[str, ...] | None = None


def tracked(path: str, also_excluded: tuple[str, ...] = ()) -> bool:
    """Whether a reply can depend on this file's content as far as the cache is concerned."""
    global _EXCLUDED
    if _EXCLUDED is None:
        _EXCLUDED = _excluded_roots()
    if path.endswith((".pyc", ".pyo")) or f"{os.sep}__pycache__{os.sep}" in path:
        return False
    return not path.startswith(_EXCLUDED + also_excluded)


_memo: dict[str, tuple[tuple[int, ...], str]] = {}
_memo_lock = threading.Lock()


def file_digest(path: str) -> str:
    """sha256 of a regular file's bytes; "missing" for nothing there, "dir" or "special" for what is not
    read as a file's content. Remembered while the file's inode, size and change times stay the same
    (a write changes its ctime, which no `touch` can set back)."""
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if not stat.S_ISREG(st.st_mode):
        return "special"
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _memo_lock:
        known = _memo.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    digest = hashlib.sha256()
    try:
        with ignored(), open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return "unreadable"
    value = digest.hexdigest()
    with _memo_lock:
        _memo[path] = (stamp, value)
    return value


def digests(paths: Iterable[str], also_excluded: tuple[str, ...] = (), root: str | None = None) -> dict[str, str] | None:
    """{path: file_digest} of the tracked paths, those under `root` (the suite's folder) relative to it, so
    that a Ray worker's copy of the suite finds the same entry; None when there are more than MAX_FILES."""
    kept = sorted(p for p in set(paths) if tracked(p, also_excluded))
    if len(kept) > MAX_FILES:
        return None
    under = root.rstrip(os.sep) + os.sep if root else None
    return {(p[len(under):] if under and p.startswith(under) else p): file_digest(p) for p in kept}


def unchanged(recorded: Any, root: str | None = None) -> bool:
    """Whether every file of a cache entry's `reads` (relative ones under `root`) still has its digest."""
    if not isinstance(recorded, dict):
        return False
    for path, digest in recorded.items():
        if not isinstance(path, str) or (not os.path.isabs(path) and root is None):
            return False
        if file_digest(os.path.join(root, path) if root is not None else path) != digest:
            return False
    return True
