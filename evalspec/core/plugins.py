"""Plugins: modules whose `@assertion` and `@provider_kind` decorators add types to evalspec.

Three ways in: `plugins: [checks.py, mypkg.checks]` in a suite (files relative to the suite, or module
names), `--plugin MODULE_OR_FILE` on `evalspec list|schema`, and the entry-point groups
`evalspec.assertions` / `evalspec.providers` of installed packages (loaded once, on first use).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from evalspec.core.errors import ConfigError, PluginError, Problem
from evalspec.core.pyref import step

GROUPS = ("evalspec.assertions", "evalspec.providers")
_loaded_entry_points = False


def load_plugin(ref: str, base_dir: Path | None = None) -> None:
    """Import a plugin: `checks.py` (relative to `base_dir`) or a module name `mypkg.checks`."""
    if ref.endswith(".py"):
        path = ((base_dir or Path.cwd()) / ref).resolve()
        if not path.is_file():
            raise PluginError(f"plugin {ref!r}: file {path} does not exist")
        name = "evalspec_plugin_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
        if name in sys.modules:
            return
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise PluginError(f"plugin {ref!r}: cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            with step(f"importing {path}"):
                spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:  # SystemExit at import time is a load error too
            del sys.modules[name]
            raise PluginError(f"plugin {ref!r}: importing {path} failed: {type(exc).__name__}: {exc}") from exc
        return
    try:
        with step(f"importing module {ref!r}"):
            importlib.import_module(ref)
    except (Exception, SystemExit) as exc:
        raise PluginError(f"plugin {ref!r}: cannot import module {ref!r}: {type(exc).__name__}: {exc} "
                          "(a file needs its .py suffix)") from exc


def load_entry_points() -> None:
    """Import every installed plugin (entry points in `evalspec.assertions` and `evalspec.providers`) once.
    One that raises or exits while it is imported is a config error naming its distribution's
    `entry_points.txt`, the entry point and what it did."""
    global _loaded_entry_points
    if _loaded_entry_points:
        return
    _loaded_entry_points = True
    if not may_declare_entry_points():
        return
    from importlib.metadata import entry_points

    installed = entry_points()  # one scan of the installed distributions (each scan takes ~15 ms)
    for group in GROUPS:
        for ep in installed.select(group=group):
            where, what = _declared_by(ep)
            try:
                with step(f"{where}: {what}"):
                    ep.load()
            except (Exception, SystemExit) as exc:
                raise ConfigError([Problem(where, None, "", f"{what}: importing it failed: "
                                           f"{type(exc).__name__}: {exc}")]) from exc


def _declared_by(ep: Any) -> tuple[str, str]:
    """Where an entry point is declared (its distribution's entry_points.txt) and, for people, what it is:
    "[evalspec.providers] echo = mypkg (installed plugin mypkg 0.1)"."""
    dist = getattr(ep, "dist", None)
    name = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "an installed distribution"
    folder = getattr(dist, "_path", None)  # a PathDistribution's .dist-info folder
    where = str(Path(folder) / "entry_points.txt") if folder is not None else "installed plugins"
    return where, f"[{ep.group}] {ep.name} = {ep.value} (installed plugin {name})"


def may_declare_entry_points() -> bool:
    """False only when no distribution on `sys.path` declares an evalspec entry point: one look at each
    `entry_points.txt` costs ~2 ms, importing importlib.metadata (email, csv, zipfile) and parsing them
    all ~40 ms. Anything it cannot read as plainly (a zip archive on the path, a finder of other
    distributions) is left to importlib.metadata."""
    if any(finder is not importlib.machinery.PathFinder and hasattr(finder, "find_distributions")
           for finder in sys.meta_path):
        return True
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as found:
                names = [e.name for e in found if e.name.endswith((".dist-info", ".egg-info")) or e.name == "EGG-INFO"]
        except NotADirectoryError:
            return True
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(entry or ".", name, "entry_points.txt"), encoding="utf-8",
                          errors="replace") as declared:
                    text = declared.read()
            except OSError:
                continue
            if any(group in text for group in GROUPS):
                return True
    return False
