"""Imports follow the data flow: a module imports only from its own layer or earlier ones.

    base → config (the suite) → providers → assertions → plan → results → run → reporters → app

Declarations every layer may read (the registries, the Provider protocol, the check types) sit in
`base`. `KNOWN` lists today's backward imports, each a piece of structure still to fix; the test fails
on any new one, so the list can only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "evalspec"
LAYERS = ("base", "config", "providers", "assertions", "plan", "results", "run", "reporters", "app")

# the first matching prefix decides; modules not listed are `app` (cli, api, importers, plugins, ...)
PREFIXES = (
    ("evalspec.errors", "base"), ("evalspec.exitcodes", "base"), ("evalspec.textutil", "base"),
    ("evalspec.redact", "base"), ("evalspec.loading", "base"), ("evalspec.interrupts", "base"),
    ("evalspec.assertions.registry", "base"), ("evalspec.assertions.params", "base"),
    ("evalspec.assertions.base", "base"), ("evalspec.assertions.patterns", "base"),
    ("evalspec.assertions.turnrefs", "base"), ("evalspec.providers.base", "base"),
    ("evalspec.providers.kinds", "base"), ("evalspec.providers.strategies", "base"),
    ("evalspec.providers.model_keys", "base"),
    ("evalspec.config.suggest", "base"),  # pure string helpers (did-you-mean, slugs): no evalspec imports
    ("evalspec.plugins", "base"), ("evalspec.usercode", "base"), ("evalspec.limits", "base"),
    ("evalspec.config", "config"), ("evalspec.fillers", "config"), ("evalspec.recorded", "config"),
    ("evalspec.providers", "providers"), ("evalspec.cache", "providers"), ("evalspec.agent", "providers"),
    ("evalspec.scripted_user", "providers"),
    ("evalspec.assertions", "assertions"),
    ("evalspec.plan", "plan"), ("evalspec.plan_preflight", "plan"), ("evalspec.plan_examples", "plan"),
    ("evalspec.runner", "run"), ("evalspec.executors", "run"), ("evalspec.conversation", "run"),
    ("evalspec.simulate", "run"), ("evalspec.replay", "run"), ("evalspec.attack", "run"),
    ("evalspec.teardown", "run"), ("evalspec.processes", "run"), ("evalspec.supervise", "run"),
    ("evalspec.diff.files", "app"), ("evalspec.diff.confirm", "app"), ("evalspec.diff.github_baseline", "app"),
    ("evalspec.diff.attach", "app"), ("evalspec.reporters.trend_command", "app"),
    ("evalspec.view", "app"),  # `evalspec view`: serves runs, reports and diffs, writes review actions
    ("evalspec.diff.render", "reporters"),
    ("evalspec.results", "results"), ("evalspec.diff", "results"),
    ("evalspec.reporters", "reporters"),
)

KNOWN: set[tuple[str, str]] = set()  # every backward import is fixed: keep it empty


def layer(module: str) -> str:
    if module == "evalspec":
        return "base"  # `from evalspec import __version__`
    for prefix, name in PREFIXES:
        if module == prefix or module.startswith(prefix + "."):
            return name
    return "app"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """evalspec modules imported by `path` (in functions too; `if TYPE_CHECKING:` blocks excepted)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("evalspec"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("evalspec")}
    return found


def backward_imports() -> set[tuple[str, str]]:
    out = set()
    for path in PACKAGE.rglob("*.py"):
        source = module_name(path)
        if source == "evalspec":
            continue  # the public facade re-exports from every layer
        for target in imports(path):
            if LAYERS.index(layer(target)) > LAYERS.index(layer(source)):
                out.add((source, target))
    return out


def test_no_module_imports_against_the_flow() -> None:
    new = sorted(backward_imports() - KNOWN)
    assert not new, "imports against the flow (" + " → ".join(LAYERS) + "):\n" + "\n".join(
        f"  {s} ({layer(s)}) imports {t} ({layer(t)})" for s, t in new)


def test_the_check_sees_a_backward_import(tmp_path: Path) -> None:
    bad = tmp_path / "evalspec" / "reporters" / "leak.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("def f():\n    from evalspec.providers.factory import build_provider\n")
    assert imports(bad) == {"evalspec.providers.factory"}
    assert LAYERS.index(layer("evalspec.providers.factory")) < LAYERS.index(layer("evalspec.reporters.leak"))
    assert LAYERS.index(layer("evalspec.reporters.html")) > LAYERS.index(layer("evalspec.results.record"))
