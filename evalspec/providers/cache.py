"""The response cache on disk (sqlite): provider configuration + full history + repeat -> response."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalspec.extend.transcript import ChatMessage


def cache_key(identity: Mapping[str, object], messages: list[ChatMessage], repeat: int, extra: Any = None) -> str:
    blob = json.dumps([identity, messages, repeat, extra], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


MASKED = "_masked"  # an entry that held a secret: stored masked, never served (docs/en/suite-format.md#secrets)
LOCK_WAIT_S = 2.0  # another writer's transaction is a few ms; a cache locked longer is skipped
BATCH = 256  # entries `put` keeps before writing them in one transaction
BATCH_AGE_S = 1.0  # ... or seconds since the last write (checked at the next `put`)
_warned: set[str] = set()  # one warning per cache file and process (a forked player inherits the parent's)


class ResponseCache:
    """A small sqlite key-value store; safe to share between threads of one process.

    A cache that cannot be used (a corrupt file, a lock held by another process, a full or read-only disk)
    never stops the run nor changes a verdict: it is skipped with one warning and every call runs live.

    `put` writes in batches (a transaction per entry cost more than the call of a fast provider): this
    process reads its own pending entries at once, other processes once the batch is written (at `BATCH`
    entries, `BATCH_AGE_S` seconds, `flush`, `put_many` or `close`). A process that ends abruptly loses
    its last batch: those calls are misses next time, never wrong replies."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "responses.sqlite"
        self.secrets: set[str] = set()  # the run's (`ProviderPool` sets them): never written to the file
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pending: dict[str, str] = {}  # key -> stored value (JSON), not written yet
        self._written_at = time.monotonic()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            # replies may quote secrets: the file is its owner's only (sqlite gives -wal/-shm the same mode)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=LOCK_WAIT_S)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            self._skip(exc)

    @property
    def usable(self) -> bool:
        return self._db is not None

    def _skip(self, exc: BaseException) -> None:
        """Stop using the cache, with one warning naming the file and the fault."""
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()
        if str(self.path) not in _warned:
            _warned.add(str(self.path))
            sys.stderr.write(f"warning: the response cache {self.path} cannot be used ({exc}); it is skipped "
                             f"and calls run live (delete the file to start a new cache)\n")
            sys.stderr.flush()

    def get(self, key: str) -> dict[str, object] | None:
        """The stored value, or None; an entry that is not a JSON object (a damaged file) is a miss."""
        with self._lock:
            if self._db is None:
                return None
            text = self._pending.get(key)
            if text is None:
                try:
                    row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
                except sqlite3.Error as exc:
                    self._skip(exc)
                    return None
                if not row:
                    return None
                text = row[0]
        try:
            value = json.loads(text)
        except (TypeError, ValueError):
            return None
        return value if isinstance(value, dict) and MASKED not in value else None

    def storable(self, value: dict[str, object]) -> dict[str, object]:
        """`value` as the file may hold it: with a secret in it, masked and marked, so that it is never
        served (a reply with `***` for the secret could pass a check the live reply fails): a miss."""
        from evalspec.core.redact import redact

        masked: dict[str, object] = redact(value, self.secrets)
        return value if masked is value or masked == value else {**masked, MASKED: True}

    async def aget(self, key: str) -> dict[str, object] | None:
        """`get` for callers on an event loop (a Ray worker's cache answers over the network)."""
        return self.get(key)

    def put(self, key: str, value: dict[str, object]) -> None:
        """Store one entry with the next batch (read back at once by this process)."""
        text = json.dumps(self.storable(value), ensure_ascii=False)
        with self._lock:
            if self._db is None:
                return
            self._pending[key] = text
            if len(self._pending) >= BATCH or time.monotonic() - self._written_at >= BATCH_AGE_S:
                self._write([])

    def put_many(self, entries: list[tuple[str, dict[str, object]]]) -> None:
        """Store several entries in one transaction now (a Ray worker's entries arrive with its result,
        and the cache reader, another process, serves them to the other workers)."""
        if not entries:
            return
        rows = [(key, json.dumps(self.storable(value), ensure_ascii=False)) for key, value in entries]
        with self._lock:
            self._write(rows)

    def flush(self) -> None:
        """Write the pending entries now."""
        with self._lock:
            self._write([])

    def _write(self, rows: list[tuple[str, str]]) -> None:
        """The pending entries and `rows` in one transaction (the caller holds the lock)."""
        rows = [*self._pending.items(), *rows]
        self._pending.clear()
        self._written_at = time.monotonic()
        if self._db is None or not rows:
            return
        try:
            self._db.executemany("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", rows)
            self._db.commit()
        except sqlite3.Error as exc:
            self._skip(exc)

    def close(self) -> None:
        with self._lock:
            self._write([])
            if self._db is not None:
                self._db.close()
