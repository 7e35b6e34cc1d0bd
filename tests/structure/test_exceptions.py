"""One exception tree: every exception class evalspec defines derives from `EvalspecError`, and
evalspec/core/errors.py's docstring draws each one, indented under its base (as httpx draws its tree).

Every module is imported (but `python -m evalspec`, which would run the CLI: it defines no class), then
the subclasses of BaseException are walked, so a class defined anywhere in evalspec is found.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import evalspec
from evalspec.core import errors
from evalspec.core.errors import EvalspecError

TREE_LINE = re.compile(r"^(?P<indent> *)[*x+] (?P<name>\w+)\b")


def evalspec_exceptions() -> list[type[BaseException]]:
    for info in pkgutil.walk_packages(evalspec.__path__, "evalspec."):
        if info.name != "evalspec.__main__":
            importlib.import_module(info.name)
    found: dict[type[BaseException], None] = {}
    todo: list[type[BaseException]] = [BaseException]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in found:
                found[sub] = None
                todo.append(sub)
    return [c for c in found if c.__module__ == "evalspec" or c.__module__.startswith("evalspec.")]


def drawn_parents() -> dict[str, str | None]:
    assert errors.__doc__ is not None
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in errors.__doc__.splitlines():
        if m := TREE_LINE.match(line):
            depth = len(m["indent"]) // 2
            del stack[depth:]
            parents[m["name"]] = stack[-1] if stack else None
            stack.append(m["name"])
    return parents


def test_every_exception_is_an_evalspec_error() -> None:
    classes = evalspec_exceptions()
    assert len(classes) > 20, [c.__qualname__ for c in classes]  # the walk found them (not a vacuous pass)
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, EvalspecError))
    assert not outside, f"not EvalspecError subclasses (derive them from the right base in core/errors.py): {outside}"


def test_every_exception_is_drawn_under_its_base() -> None:
    parents = drawn_parents()
    assert parents.get("EvalspecError", "") is None, "the tree's root is EvalspecError"
    classes = [c for c in evalspec_exceptions() if issubclass(c, EvalspecError)]
    missing = sorted(c.__qualname__ for c in classes if c.__qualname__ not in parents)
    assert not missing, f"not in evalspec/core/errors.py's tree: {missing}"
    for cls in classes:
        if cls is EvalspecError:
            continue
        base = next(b for b in cls.__bases__ if issubclass(b, EvalspecError))  # its place in the tree
        assert parents[cls.__qualname__] == base.__qualname__, \
            f"{cls.__qualname__} is drawn under {parents[cls.__qualname__]}, but derives from {base.__qualname__}"
    stale = sorted(set(parents) - {c.__qualname__ for c in classes})
    assert not stale, f"drawn in the tree but not defined: {stale}"


def test_the_tree_line_names_where_a_class_lives() -> None:
    """A class defined outside core/errors.py says its module on its line: `(play.ray_executor)`."""
    assert errors.__doc__ is not None
    lines = {m["name"]: line for line in errors.__doc__.splitlines() if (m := TREE_LINE.match(line))}
    for cls in evalspec_exceptions():
        if cls.__module__ != errors.__name__:
            where = cls.__module__.removeprefix("evalspec.")
            assert f"({where}" in lines[cls.__qualname__], f"{cls.__qualname__}'s line does not name {where}"
