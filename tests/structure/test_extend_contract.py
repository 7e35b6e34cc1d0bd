"""extend/ is what plugins build on: it names nothing of config/ or a later layer, not even for types (a
type-only import is a circle the type checker sees). A provider kind's contract, the `ProviderSpec` its
builder is given and the `SuiteView` it reads, lives in extend/kinds.py."""

from __future__ import annotations

import ast
from pathlib import Path

EXTEND = Path(__file__).resolve().parents[2] / "evalspec" / "extend"
ALLOWED = ("evalspec.core", "evalspec.extend")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # `if TYPE_CHECKING:` blocks too
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("evalspec"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("evalspec")}
    return found


def test_extend_imports_only_core_and_itself_even_for_types() -> None:
    later = sorted(f"{path.name} imports {name}" for path in EXTEND.glob("*.py") for name in _imports(path)
                   if not name.startswith(ALLOWED))
    assert not later, "extend/ names a later layer:\n" + "\n".join(later)


def test_a_suite_satisfies_the_view_a_provider_builder_reads(tmp_path: Path) -> None:
    from evalspec.config.loader import load_suite
    from evalspec.config.model import ProviderSpec as ConfigProviderSpec
    from evalspec.extend.kinds import ProviderSpec, SuiteView

    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '好的'\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text("providers: [{id: bot, python: bot.py:respond}]\n"
                                     "tests: [{id: t, conversation: [{user: 你好}]}]\n", encoding="utf-8")
    suite = load_suite(tmp_path / "s.yaml")
    view: SuiteView = suite  # what the builders are typed against (mypy checks the real builders)
    assert view.path == tmp_path / "s.yaml" and [t.id for t in view.tests] == ["t"]
    assert ConfigProviderSpec is ProviderSpec and isinstance(suite.providers[0], ProviderSpec)
