"""Load `FILE.py:function` (relative to a suite) or `module:function`.

User code imported or run while a run is prepared says what it is (`step`): in a watched process
(evalspec.play.supervise) the watcher hears it, so code that ends the process there is named (docs/en/rule-self-tests.md#verdicts-that-hold).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evalspec.core.errors import LoadError

_cache: dict[tuple[str, str], Callable[..., Any]] = {}
_user_folders: set[Path] = set()  # the folders of the user files loaded so far (their sibling modules)


TELL: Callable[[str | None], None] | None = None  # a watched process's line to its watcher (evalspec.play.supervise)


@contextlib.contextmanager
def step(what: str) -> Iterator[None]:
    """Around user code run before a run starts (an import, a plugin's preflight): `what` it is, for
    people ("s.yaml:3: providers[0]: provider 'bot'", "importing /x/bot.py"); steps nest."""
    tell = TELL
    if tell is None:
        yield
        return
    tell(what)
    try:
        yield
    finally:
        tell(None)


def split_ref(ref: str) -> tuple[str, str]:
    target, sep, name = ref.rpartition(":")
    if not sep or not target or not name:
        raise LoadError(f"{ref!r} is not FILE.py:function or module:function")
    return target, name


def load_callable(ref: str, base_dir: Path) -> Callable[..., Any]:
    target, name = split_ref(ref)
    key = (str(base_dir.resolve()), ref)
    if key in _cache:
        return _cache[key]
    fn: Callable[..., Any] | None = getattr(load_module(ref, base_dir), name, None)
    if fn is None or not callable(fn):
        raise LoadError(f"{ref!r}: {target} has no function {name!r}")
    _cache[key] = fn
    return fn


def load_attribute(ref: str, base_dir: Path) -> Any:
    """`FILE.py:NAME` or `module:NAME` naming any value (a list of tools, say)."""
    target, name = split_ref(ref)
    module = load_module(ref, base_dir)
    if not hasattr(module, name):
        raise LoadError(f"{ref!r}: {target} has no attribute {name!r}")
    return getattr(module, name)


def load_module(ref: str, base_dir: Path) -> Any:
    """The module of `FILE.py:NAME` (relative to `base_dir`) or `module:NAME`, imported once."""
    target, _ = split_ref(ref)
    base_dir = base_dir.resolve()
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        if not path.is_file():
            raise LoadError(f"{ref!r}: file {path} does not exist")
        mod_name = "evalspec_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
        module = sys.modules.get(mod_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(mod_name, path)
            if spec is None or spec.loader is None:
                raise LoadError(f"{ref!r}: cannot import {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            if sys.path[:1] != [str(path.parent)]:  # its sibling modules import as they would from a script
                with contextlib.suppress(ValueError):
                    sys.path.remove(str(path.parent))
                sys.path.insert(0, str(path.parent))
            _forget_shadowed_siblings(path.parent)
            try:
                with step(f"importing {path}"):
                    spec.loader.exec_module(module)
            except BaseException as exc:  # user code: SystemExit at import time is a load error too
                del sys.modules[mod_name]
                raise LoadError(f"{ref!r}: importing {path} failed: {type(exc).__name__}: {exc}") from exc
        return module
    try:
        with step(f"importing module {target!r}"):
            return importlib.import_module(target)
    except (Exception, SystemExit) as exc:  # user code: SystemExit at import time is a load error too
        raise LoadError(f"{ref!r}: cannot import module {target!r}: {type(exc).__name__}: {exc}") from exc


def _forget_shadowed_siblings(folder: Path) -> None:
    """Before a user file in `folder` runs: its sibling modules are its own. A module of the same name
    imported earlier from another folder (two providers' `agent.py`, say) is dropped from `sys.modules`, so
    `import agent` here finds this folder's; the code that imported the other one keeps its reference.
    Only modules from another user file's folder are dropped, never an installed one."""
    _user_folders.add(folder.resolve())
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.suffix == ".py":
            name, own = entry.stem, entry
        elif (entry / "__init__.py").is_file():
            name, own = entry.name, entry / "__init__.py"
        else:
            continue
        file = getattr(sys.modules.get(name), "__file__", None)
        if file and Path(file).resolve() != own.resolve() and _in_user_folder(Path(file)):
            for sub in [n for n in sys.modules if n == name or n.startswith(name + ".")]:
                del sys.modules[sub]


def _in_user_folder(file: Path) -> bool:
    """Whether `file` is a module in (or a package right under) the folder of a user file loaded before."""
    resolved = file.resolve()
    return resolved.parent in _user_folders or resolved.parent.parent in _user_folders
