"""The response cache on disk (sqlite): provider configuration + full history + repeat -> response."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any


def cache_key(identity: dict[str, Any], messages: list[dict[str, Any]], repeat: int, extra: Any = None) -> str:
    blob = json.dumps([identity, messages, repeat, extra], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """A small sqlite key-value store; safe to share between threads of one process."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "responses.sqlite"
        self._lock = threading.Lock()
        # replies may quote secrets: the file is its owner's only (sqlite gives -wal/-shm the same mode)
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.commit()

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value, or None; an entry that is not a JSON object (a damaged file) is a miss."""
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if not row:
            return None
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    async def aget(self, key: str) -> dict[str, Any] | None:
        """`get` for callers on an event loop (a Ray worker's cache answers over the network)."""
        return self.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.put_many([(key, value)])

    def put_many(self, entries: list[tuple[str, dict[str, Any]]]) -> None:
        """Store several entries in one transaction (a Ray worker's entries arrive with its result)."""
        if not entries:
            return
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)",
                                 [(key, json.dumps(value, ensure_ascii=False)) for key, value in entries])
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()
