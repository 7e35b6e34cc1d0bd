"""The journal: one JSON line per finished test, written as it finishes, so a crash costs at most a moment.

Lines are handed to the operating system in bursts: at most `FLUSH_EVERY` seconds after a record is
written (a write per record cost a large run a quarter of its wall time), and at once on close, so Ctrl-C
loses nothing and a killed evalspec loses at most the last `FLUSH_EVERY` seconds of records, which
`--resume` plays again. The file is fsynced at most every `SYNC_EVERY` seconds and on close, so only a
power loss can cost the last second of records.

Records are encoded by orjson (fifteen times faster than the standard encoder on a record; a large
run spent a tenth of its CPU there); `encode` and `decode` are the journal's one codec.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, cast

import orjson

from evalspec.results.rundata import Record

FLUSH_EVERY = 0.05  # seconds a written record may wait in the buffer
SYNC_EVERY = 1.0  # seconds between fsyncs
_OPTIONS = orjson.OPT_NON_STR_KEYS


def encode(record: Any) -> bytes:
    """A record as one compact JSON text (UTF-8, no newline). NaN and infinities become null; a value
    orjson cannot encode (an int beyond 64 bits) falls back to the standard encoder, its text marked by
    a leading space (JSON's own whitespace) so that `decode` reads it with the standard decoder too:
    orjson would read that int back as a float."""
    try:
        return orjson.dumps(record, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return b" " + json.dumps(record, ensure_ascii=False).encode("utf-8")


def encode_line(record: Any) -> bytes:
    """A record as the journal stores it: its JSON text and a newline."""
    return encode(record) + b"\n"


def decode(data: bytes | bytearray | str) -> Any:
    """A JSON text as `json.loads` reads it: orjson first; the standard decoder for a text `encode` wrote
    with it (a leading space: an int beyond 64 bits, which orjson would read as a float) and for what
    orjson refuses, such as the NaN an older journal may hold."""
    if data[:1] in (b" ", " "):
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._synced = time.monotonic()
        self._flush_due: asyncio.TimerHandle | None = None
        self.error: OSError | None = None  # a flush that failed on the loop (a full disk): raised by the next write
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("ab", buffering=1 << 16)
        if _ends_torn(path):  # a crash cut the last line: the next record starts on a line of its own
            self._file.write(b"\n")
            self._file.flush()
        self.size = path.stat().st_size

    def write(self, record: Mapping[str, Any]) -> int:
        """Append `record`; returns the byte offset its line starts at."""
        return self.write_line(encode_line(record))

    def write_line(self, line: bytes | bytearray) -> int:
        """Append one record already encoded as a JSON line (ending in a newline); returns its offset.
        On an event loop the line is flushed within `FLUSH_EVERY` seconds; elsewhere at once."""
        if self.error is not None:
            raise self.error
        offset = self.size
        self._file.write(line)
        self.size += len(line)
        if self._flush_due is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
            else:
                self._flush_due = loop.call_later(FLUSH_EVERY, self.flush)
        return offset

    def flush(self) -> None:
        self._flush_due = None
        if self._file.closed:
            return
        try:
            self._file.flush()
            if time.monotonic() - self._synced >= SYNC_EVERY:
                self.sync()
        except OSError as exc:  # on the loop no one would see it: the next write or close raises it
            self.error = exc

    def sync(self) -> None:
        os.fsync(self._file.fileno())
        self._synced = time.monotonic()

    def close(self) -> None:
        if self._flush_due is not None:
            self._flush_due.cancel()
            self._flush_due = None
        if not self._file.closed:
            try:
                self._file.flush()
                self.sync()
            finally:
                with contextlib.suppress(OSError):
                    self._file.close()
        if self.error is not None:
            raise self.error


def _ends_torn(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


RECORD_FIELDS = {"key": str, "test_id": str, "base_id": str, "name": str, "suite": str, "provider": str,
                 "status": str}
STATUSES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def read_journal(path: Path) -> list[Record]:
    """Records of a journal; a line cut short by a crash (or not a record at all) is skipped,
    so its test runs again."""
    return [record for _, record in scan_journal(path)]


def scan_journal(path: Path) -> Iterator[tuple[int, Record]]:
    """(byte offset, record) of every valid line of a journal, one line in memory at a time."""
    if not path.exists():
        return
    offset = 0
    with path.open("rb") as fh:
        for raw in fh:
            start, offset = offset, offset + len(raw)
            try:
                item = decode(raw)
            except ValueError:  # a line cut by a crash (torn UTF-8 included)
                continue
            if (isinstance(item, dict) and all(isinstance(item.get(k), t) for k, t in RECORD_FIELDS.items())
                    and item["status"] in STATUSES):
                yield start, cast(Record, item)  # a record the run journaled: its keys checked above


MANIFEST = "suites.json"
LOCK = "lock"


def lock_run_dir(run_dir: Path, pid: int) -> IO[str] | None:
    """Hold `run_dir` for this run until the returned file is closed (its lock ends with the process, so
    a dead run's lock is taken over); a directory held by a live run is refused: "in use by PID N"."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks
        return None
    from evalspec.core.errors import ConfigError, Problem

    run_dir.mkdir(parents=True, exist_ok=True)
    handle = (run_dir / LOCK).open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "?"
        handle.close()
        raise ConfigError([Problem(str(run_dir), None, "", f"in use by PID {holder}: another `evalspec run` "
                                   "is playing this run directory; wait for it to end (or stop it), then resume")]) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(pid))
    handle.flush()
    return handle


def write_manifest(suites: list[Any], run_dir: Path, invocation: Mapping[str, Any] | None = None) -> None:
    """Record which suite files (by sha256) a run was started with, and with which options (`invocation`:
    --var values only as digests, they may be secrets), unless already recorded."""
    path = run_dir / MANIFEST
    if path.exists():
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    data = [{"path": str(s.path), "resolved": str(Path(s.path).resolve()), "sha256": s.sha256} for s in suites]
    manifest: dict[str, object] = {"suites": data}
    if invocation is not None:
        manifest["invocation"] = invocation
    path.write_text(json.dumps(manifest, ensure_ascii=False, indent=2), encoding="utf-8")


def invocation_of(cli_vars: Mapping[str, Any], filter_: str | None, tags: list[str], providers: list[str],
                  repeat: int | None, simulators: list[str] | None = None) -> dict[str, object]:
    """What of a run's command line decides its plan and replies (docs/en/rule-self-tests.md#verdicts-that-hold: a resume must repeat it)."""
    digest = {k: hashlib.sha256(json.dumps(v, ensure_ascii=False, sort_keys=True).encode()).hexdigest()[:16]
              for k, v in cli_vars.items()}
    return {"var": digest, "filter": filter_, "tag": sorted(tags), "provider": sorted(providers), "repeat": repeat,
            "simulator": list(simulators or [])}


def check_unchanged(suites: list[Any], run_dir: Path, invocation: Mapping[str, Any] | None = None) -> None:
    """`--resume` must not mix verdicts of two versions of a suite, nor of two command lines: exit 2
    naming the changed files and options."""
    from evalspec.core.errors import ConfigError, Problem

    try:
        manifest = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
        recorded = manifest["suites"]
        started = {str(r["resolved"]): str(r["sha256"]) for r in recorded}
    except (OSError, ValueError, KeyError, TypeError):
        return  # a run from before manifests: nothing to compare with
    changed = [s for s in suites if started.get(str(Path(s.path).resolve()), s.sha256) != s.sha256]
    problems = [Problem(str(s.path), None, "", f"changed since {run_dir} was started (sha256 differs); "
                        "--resume would mix verdicts of two versions. Re-grade the old transcripts "
                        "with `evalspec grade`, or rerun without --resume") for s in changed]
    before = manifest.get("invocation")
    if invocation is not None and isinstance(before, dict):
        for option, now in invocation.items():
            then = before.get(option)
            if then == now or option not in before:  # a manifest from before it, or of a run made by the API
                continue
            if option == "code":
                names = sorted(k.rpartition("::")[2] for k in {*now, *(then or {})} if (then or {}).get(k) != now.get(k))
                shown = f"the code of python provider {', '.join(names)} changed since the interrupted run (sha256 differs)"
            elif option == "transcripts":
                shown = _recorded_change(then, now)
            elif option == "var":
                names = sorted(k for k in {*now, *(then or {})} if (then or {}).get(k) != now.get(k))
                shown = f"--var {', '.join(names)} differ from the interrupted run's"
            else:
                shown = f"--{option} {_shown(now)} differs from the interrupted run's {_shown(then)}"
            again = "Restore that code" if option == "code" else "Resume with the interrupted run's options"
            problems.append(Problem(str(run_dir), None, "", f"{shown}; --resume would mix verdicts of two "
                                    f"runs. {again}, or run without --resume"))
    if problems:
        raise ConfigError(problems)


def _recorded_change(then: Any, now: Any) -> str:
    """How the recorded conversations to grade differ from the interrupted run's (run_plan's `transcripts`)."""
    then = then if isinstance(then, dict) else {}
    now = now if isinstance(now, dict) else {}
    if then.get("path") != now.get("path"):
        named = [f"--transcripts {p}" if p else "each suite's transcripts.path" for p in (now.get("path"), then.get("path"))]
        return f"the conversations to grade ({named[0]}) are not the interrupted run's ({named[1]})"
    where = f"--transcripts {now['path']}" if now.get("path") else "the suites' transcripts.path files"
    return f"the conversations to grade ({where}) changed since the interrupted run (sha256 differs)"


def _shown(value: Any) -> str:
    if value is None or value == []:
        return "(none)"
    return " ".join(map(str, value)) if isinstance(value, list) else repr(value) if isinstance(value, str) else str(value)
