"""Paths in the files a team commits (imported suites, tests made from conversations, triage and label
lines, review.log): never an absolute path of this machine, always relative to the file's own base (the
suite's folder, the project root) with `/` separators (docs/en/importers.md#portable-files)."""

from __future__ import annotations

import os
from pathlib import Path


def portable(path: str | Path, base: str | Path) -> str:
    """`path` as a committed file holds it: an absolute one as seen from `base` (`suites/sales.yaml`,
    `../runs/r1/run.json`), a relative one as it is (it was written relative to the project already).
    A path on another drive than `base` (Windows) keeps only its name."""
    target, root = Path(path), Path(base).absolute()
    if not target.is_absolute():
        return target.as_posix()
    try:
        relative = os.path.relpath(os.path.normpath(target), os.path.normpath(root))
    except ValueError:  # another drive: there is no relative path
        return target.name
    return Path(relative).as_posix()


def project_root(evalspec_file: Path) -> Path:
    """The project a `.evalspec/<file>` belongs to: the folder holding `.evalspec` (else the file's own)."""
    folder = evalspec_file.absolute().parent
    return folder.parent if folder.name == ".evalspec" else folder
