"""A conversation graded where user code may end the process (docs/en/reports-and-gate.md#errors-and-failures).

While a conversation with user-code checks (python, a plugin's) is graded in a process whose end is
noticed by another (the watched run's child, a forked player, a Ray worker), three files in a folder that
other one can read name it by its key: `.json` keeps the transcript, `.at` names the check whose user code
runs now and the process it runs in (`usercode.note_running`, cleared when it returns), and `.ended`
lists the checks that already ended a process while it was graded, each with its error. When the process
ends, the one that takes over grades the kept replies again (`runner.regrade_ended`) with every check that
ended a process as its error, so every other check, a red line above all, is still graded. Each re-grade
adds the check named in `.at` to `.ended` and never runs it again: a conversation is graded again at
most once for each of its checks that run user code.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec.core.usercode import clear_note, read_note
from evalspec.results.transcript import Transcript

Ended = tuple[tuple[tuple[Any, ...], str], ...]  # (the check's `where`, its error) for each check that ended one


@dataclass
class GradingWatch:
    """The files of one conversation graded under watch (see the module), and the checks that ended a
    process while it was graded before (`ended`: never run again, each an error)."""

    kept: Path
    note: Path
    ended_file: Path
    ended: Ended = ()

    @classmethod
    def of(cls, folder: Path, key: str) -> GradingWatch:
        name = hashlib.sha256(key.encode()).hexdigest()[:32]
        return cls(folder / f"{name}.json", folder / f"{name}.at", folder / f"{name}.ended")

    def keep(self, transcript: Transcript) -> bool:
        """Keep a freshly played conversation's transcript (no check of it has ended a process yet);
        False when it cannot be written (should its code end the process, it is an error as before)."""
        try:
            self.kept.parent.mkdir(parents=True, exist_ok=True)
            self.kept.write_text(json.dumps({"messages": transcript.messages, "stop_reason": transcript.stop_reason,
                                             "error": transcript.error, "calls": transcript.calls,
                                             "cached_calls": transcript.cached_calls, "world": transcript.world},
                                            ensure_ascii=False),
                                 encoding="utf-8")
        except (OSError, TypeError, ValueError):
            return False
        for stale in (self.note, self.ended_file):
            clear_note(stale)
        return True

    def running(self) -> tuple[Any, ...] | None:
        """The `where` of the check whose user code was running when its process ended, or None."""
        noted = read_note(self.note)
        return noted[0] if noted is not None else None

    def take_over(self, error: str) -> tuple[Transcript, Ended] | None:
        """After the process grading it ended: the kept transcript and every check that ended a process,
        the one named in `.at` now among them with `error` (recorded in `.ended`, the note cleared).
        None when it cannot be re-graded: nothing kept, no check was running (it ended elsewhere), or
        another conversation's check was running in that process too (which one ended it is not known)."""
        noted = read_note(self.note)
        try:
            saved = json.loads(self.kept.read_text(encoding="utf-8"))
            transcript = Transcript(saved["messages"], saved["stop_reason"], saved["error"], saved.get("calls", 0),
                                    saved.get("cached_calls", 0), world=saved.get("world"))
        except (OSError, ValueError, TypeError, KeyError):
            return None
        if noted is None or self._beside(noted[1]):
            return None
        ended = (*self.earlier(), (noted[0], error))
        try:
            self.ended_file.write_text(json.dumps([[list(where), why] for where, why in ended], ensure_ascii=False),
                                       encoding="utf-8")
        except OSError:
            return None
        clear_note(self.note)
        return transcript, ended

    def earlier(self) -> Ended:
        """The checks recorded in `.ended` by earlier re-grades."""
        try:
            said = json.loads(self.ended_file.read_text(encoding="utf-8"))
            return tuple((tuple(where), str(why)) for where, why in said)
        except (OSError, ValueError, TypeError):
            return ()

    def _beside(self, pid: int) -> bool:
        """Whether a check of another conversation was running in process `pid` too."""
        for other in self.note.parent.glob("*.at"):
            if other != self.note and (noted := read_note(other)) is not None and noted[1] == pid:
                return True
        return False

    def done(self) -> None:
        for path in (self.kept, self.note, self.ended_file):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
