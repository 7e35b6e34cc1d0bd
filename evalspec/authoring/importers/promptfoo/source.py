"""What every part of a promptfoo import shares: the config's path, the output folder, the notes (what
is not converted), the problems (what refuses the import) and the extra files written beside the suite."""

from __future__ import annotations

from pathlib import Path

from evalspec.core.errors import Problem


class Source:
    def __init__(self, path: Path, out_dir: Path) -> None:
        self.path, self.out_dir = path, out_dir
        self.notes: list[str] = []
        self.problems: list[Problem] = []
        self.files: dict[str, str] = {}

    def problem(self, where: str, message: str) -> None:
        self.problems.append(Problem(str(self.path), None, where, message))

    def inside(self, target: str, where: str) -> Path | None:
        """A `file://` target of the config, or None (a problem) when it is outside the config's folder."""
        folder = self.path.parent.resolve()
        absolute = (folder / target).resolve()
        if not absolute.is_relative_to(folder):
            self.problem(where, f"file://{target} is outside the config's folder {folder}: not read; "
                                "copy the file next to the config")
            return None
        return absolute

    def relative(self, target: str, where: str) -> str | None:
        """A path in the config (relative to it) as seen from the output folder."""
        import os

        absolute = self.inside(target, where)
        if absolute is not None and not absolute.exists():
            self.problem(where, f"file://{target} does not exist next to the config ({absolute}): the suite "
                                "would call a missing file; copy it there and import again")
            return None
        return None if absolute is None else Path(os.path.relpath(absolute, self.out_dir.resolve())).as_posix()

