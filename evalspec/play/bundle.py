"""The files a Ray worker needs, packed on the driver and unpacked on the worker.

A bundle is a zip of each suite's folder tree and of the folder of every `*.py` file a suite names
outside it (`python: ../bots/bot.py:reply`), stored under their absolute driver paths. A worker
unpacks it into a folder of its own and loads everything from there, so relative references between
those folders still resolve and no worker reads the driver's paths.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

from evalspec.config.interpolate import env_names
from evalspec.core.errors import ConfigError, Problem

SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", "env"}
MAX_FILES = 5000
MAX_BYTES = 200 * 1024 * 1024
PY_REF = re.compile(r"""([^\s'"`:{}\[\],]+\.py)(?::[A-Za-z_][\w.]*)?""")
JSON_REF = re.compile(r"""([^\s'"`:{}\[\],]+\.json)\b""")  # a world or expected world file (docs/en/world.md)


def bundle_folders(suite_paths: list[Path]) -> list[Path]:
    """Each suite's folder, and the folder of every existing `.py` or `.json` file a suite names outside them."""
    folders = [path.parent for path in suite_paths]
    for path in suite_paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in [*PY_REF.finditer(text), *JSON_REF.finditer(text)]:
            target = (path.parent / match.group(1)).resolve()
            if target.is_file():
                folders.append(target.parent)
    kept: list[Path] = []
    for folder in sorted({f.resolve() for f in folders}, key=lambda f: len(f.parts)):
        if not any(folder.is_relative_to(k) for k in kept):
            kept.append(folder)
    return kept


def pack(suite_paths: list[Path]) -> bytes:
    """A zip of the folders the suites need (hidden and virtualenv folders skipped)."""
    buffer = io.BytesIO()
    files = size = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for folder in bundle_folders(suite_paths):
            for current, dirs, names in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
                for name in sorted(names):
                    file = Path(current) / name
                    if not file.is_file():
                        continue
                    files += 1
                    size += file.stat().st_size
                    if files > MAX_FILES or size > MAX_BYTES:
                        raise ConfigError([Problem(str(folder), None, "", (
                            f"too much to send to the Ray workers (over {MAX_FILES:,} files or "
                            f"{MAX_BYTES // 2**20} MB under this folder): keep suites and their python "
                            "files in a folder of their own"))])
                    archive.write(file, file.as_posix().lstrip("/"))
    return buffer.getvalue()


def unpack(blob: bytes) -> Path:
    """The bundle extracted into a new folder; driver path `/a/b` is `<folder>/a/b` there."""
    root = Path(tempfile.mkdtemp(prefix="evalspec-worker-"))
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        archive.extractall(root)
    return root


def mirrored(root: Path, driver_path: str | Path) -> Path:
    """Where the driver's absolute `driver_path` is inside the unpacked bundle at `root`."""
    return root / Path(driver_path).resolve().as_posix().lstrip("/")


def driver_path(root: Path, path: Path) -> Path:
    """The driver's path of a file in the unpacked bundle (the inverse of `mirrored`)."""
    try:
        return Path("/") / path.resolve().relative_to(root.resolve())
    except ValueError:
        return path


def remove(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


def suite_environ(suite_paths: list[Path]) -> dict[str, str]:
    """The driver's environment variables the suites name (`${NAME}`), for loading them on a worker."""
    names = {name for path in suite_paths for name in env_names(path.read_text(encoding="utf-8", errors="replace"))}
    return {name: os.environ[name] for name in sorted(names) if name in os.environ}
