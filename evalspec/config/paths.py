"""Where a value is written in a suite: its data path (`tests[2].conversation[1]`) and its line."""

from __future__ import annotations

from evalspec.core.errors import Problem

PathKey = tuple[str | int, ...]


def format_path(path: PathKey) -> str:
    """`("tests", 2, "conversation", 1)` -> `tests[2].conversation[1]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class LineMap:
    """Maps a data path to the 1-based line where it is written. `plain_quoted` holds the paths of plain
    (unquoted) YAML scalars wrapped in typographic quotes: the writer meant YAML quotes (SPEC §18)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[PathKey, int] = {}
        self.plain_quoted: set[PathKey] = set()
        self.plain_typed: dict[str, str] = {}  # formatted path -> how a plain scalar read as true/false/a number was written

    def line(self, path: PathKey) -> int | None:
        """The line of `path`, or of its closest written ancestor."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), 1)

    def problem(self, path: PathKey, message: str) -> Problem:
        return Problem(self.file, self.line(path), format_path(path), message)
