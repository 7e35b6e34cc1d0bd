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
    (unquoted) YAML scalars wrapped in typographic quotes: the writer meant YAML quotes (docs/en/rule-self-tests.md)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[PathKey, int] = {}
        self.plain_quoted: set[PathKey] = set()
        self.plain_typed: dict[str, str] = {}  # formatted path -> how a plain scalar read as true/false/a number was written
        # `include:` fragments (docs/en/state.md): a data path prefix of spliced turns -> (the fragment's own lines,
        # the path there the prefix stands for, the words naming the including test)
        self.fragments: dict[PathKey, tuple[LineMap, PathKey, str]] = {}

    def _fragment(self, path: PathKey) -> tuple[LineMap, PathKey, str] | None:
        """The fragment `path` lies in (the longest registered prefix), as (its lines, its path, note)."""
        for n in range(len(path), 0, -1):
            found = self.fragments.get(tuple(path[:n]))
            if found is not None:
                lines, at, note = found
                return lines, (*at, *path[n:]), note
        return None

    def line(self, path: PathKey) -> int | None:
        """The line of `path`, or of its closest written ancestor."""
        if self.fragments and (inside := self._fragment(path)):
            return inside[0].line(inside[1])
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), 1)

    def problem(self, path: PathKey, message: str) -> Problem:
        if self.fragments and (inside := self._fragment(path)):
            lines, at, note = inside
            return Problem(lines.file, lines.line(at), format_path(at), f"{message} ({note})")
        return Problem(self.file, self.line(path), format_path(path), message)
