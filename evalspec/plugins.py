"""Plugins: modules whose `@assertion` and `@provider_kind` decorators add types to evalspec.

Three ways in: `plugins: [checks.py, mypkg.checks]` in a suite (files relative to the suite, or module
names), `--plugin MODULE_OR_FILE` on `evalspec list|schema`, and the entry-point groups
`evalspec.assertions` / `evalspec.providers` of installed packages (loaded once, on first use).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from importlib.metadata import entry_points
from pathlib import Path

from evalspec.errors import EvalspecError

GROUPS = ("evalspec.assertions", "evalspec.providers")
_loaded_entry_points = False


class PluginError(EvalspecError):
    """A plugin could not be imported."""


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
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise PluginError(f"plugin {ref!r}: importing {path} failed: {type(exc).__name__}: {exc}") from exc
        return
    try:
        importlib.import_module(ref)
    except Exception as exc:
        raise PluginError(f"plugin {ref!r}: cannot import module {ref!r}: {type(exc).__name__}: {exc} "
                          "(a file needs its .py suffix)") from exc


def load_entry_points() -> None:
    """Import every installed plugin (entry points in `evalspec.assertions` and `evalspec.providers`) once."""
    global _loaded_entry_points
    if _loaded_entry_points:
        return
    _loaded_entry_points = True
    installed = entry_points()  # one scan of the installed distributions (each scan takes ~15 ms)
    for group in GROUPS:
        for ep in installed.select(group=group):
            try:
                ep.load()
            except Exception as exc:
                raise PluginError(f"plugin entry point {ep.name!r} ({ep.value}) in {group}: "
                                  f"{type(exc).__name__}: {exc}") from exc
