"""Folders are layers, and imports follow the data flow: a module imports only from its own layer or an
earlier one, and no chain of imports comes back to where it started.

    core → extend → config → providers → assertions → plan → results → play → reporters → review
         → authoring → app → the facade (`evalspec/__init__.py`)

A module's layer is the folder it sits in (`evalspec/play/runner.py` is `play`); imports inside
functions count, `if TYPE_CHECKING:` blocks do not (they never run). docs/architecture.md draws the
layers and says what each owns.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "evalspec"
LAYERS = ("core", "extend", "config", "providers", "assertions", "plan", "results", "play", "reporters", "review",
          "authoring", "app", "facade")
LOOSE = {"evalspec", "evalspec.__main__"}  # the facade and `python -m evalspec`


def layer(module: str) -> str:
    parts = module.split(".")
    if module in LOOSE:
        return "facade"
    assert parts[1] in LAYERS, f"{module} is not in a layer folder"
    return parts[1]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    # evalspec/data holds files the package ships and runs in processes of their own: no module of it
    return {module_name(p, package): p for p in package.rglob("*.py") if p.relative_to(package).parts[0] != "data"}


def imports(path: Path, known: Iterable[str] = ()) -> set[str]:
    """evalspec modules imported by `path` (in functions too; `if TYPE_CHECKING:` blocks excepted).
    `from pkg import name` is the module `pkg.name` when that is one of `known`, and `pkg` as well."""
    known = set(known)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("evalspec"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("evalspec")}
    return found


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    found = modules(package)
    return {name: imports(path, found) - {name} for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return out


def test_every_module_sits_in_a_layer_folder() -> None:
    loose = sorted(name for name, path in modules().items()
                   if path.parent == PACKAGE and path.name != "__init__.py" and name not in LOOSE)
    assert not loose, f"modules loose at the top of evalspec/: {loose}"
    stray = sorted(name for name in modules() if name not in LOOSE and name.split(".")[1] not in LAYERS)
    assert not stray, f"folders that are not layers: {stray}"


def test_no_module_imports_against_the_flow() -> None:
    backward = sorted((s, t) for s, targets in graph().items() for t in targets
                      if LAYERS.index(layer(t)) > LAYERS.index(layer(s)))
    assert not backward, "imports against the flow (" + " → ".join(LAYERS) + "):\n" + "\n".join(
        f"  {s} ({layer(s)}) imports {t} ({layer(t)})" for s, t in backward)


def test_no_import_cycle() -> None:
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join("  " + " ↔ ".join(c) for c in found)


def test_the_checks_see_a_backward_import_and_a_cycle(tmp_path: Path) -> None:
    package = tmp_path / "evalspec"
    for folder in ("reporters", "providers", "results"):
        (package / folder).mkdir(parents=True)
    (package / "reporters" / "leak.py").write_text("def f():\n    from evalspec.providers import factory\n")
    (package / "providers" / "factory.py").write_text("from evalspec.results.record import x\n")
    (package / "results" / "record.py").write_text("def g():\n    import evalspec.reporters.leak\n")
    edges = graph(package)
    assert edges["evalspec.reporters.leak"] == {"evalspec.providers", "evalspec.providers.factory"}
    assert LAYERS.index(layer("evalspec.results.record")) > LAYERS.index(layer("evalspec.providers.factory"))
    assert cycles(edges) == [["evalspec.providers.factory", "evalspec.reporters.leak", "evalspec.results.record"]]
