"""The tests are a place a newcomer can find their way in.

- A test module imports no other test module: what several test modules share lives in a helper module
  (tests/helpers.py, tests/servers.py, tests/<area>/helpers.py) or a conftest.py fixture, so reading or
  moving one test file never breaks another, and pytest collects each module once.
- No module under tests/ (a test module, a helper module, a conftest.py) is over 500 lines: a longer one is
  split by subject.
- A test file's name says what it tests, not when it was written (no `_v3`, `round`, `seed 002`, issue
  numbers).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
MAX_LINES = 500
# a version, round, seed or issue number in a file name: `_v3`, `_round2`, `_issue37`, `_seed002`
HISTORY = re.compile(r"_(v\d+|round\d+|issue\d+|seed\d+)(_|$)")


def modules_of_tests(tests: Path = TESTS) -> list[Path]:
    return sorted(p for p in tests.rglob("test_*.py") if "__pycache__" not in p.parts)


def _file(module: str, root: Path) -> Path | None:
    """The .py file under `root` (the folder holding tests/) that the dotted `module` names, if any."""
    path = root.joinpath(*module.split("."))
    return next((f for f in (path.with_suffix(".py"), path / "__init__.py") if f.is_file()), None)


def imported_test_modules(path: Path, root: Path = TESTS.parent) -> list[str]:
    """The test modules (test_*.py files) that `path` imports, at any depth, absolute or relative."""
    package = ".".join(path.relative_to(root).parent.parts)
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            modules = [base, *(f"{base}.{a.name}" for a in node.names)]  # `from tests.play import test_replay`
        else:
            continue
        found += [m for m in modules if (f := _file(m, root)) and f.name.startswith("test_")]
    return found


def test_imported_test_modules_finds_every_form(tmp_path: Path) -> None:
    play = tmp_path / "tests" / "play"
    play.mkdir(parents=True)
    for name in ("__init__.py", "helpers.py", *(f"test_{c}.py" for c in "abcdef")):
        (play / name).write_text("", encoding="utf-8")
    (tmp_path / "tests" / "__init__.py").write_text("", encoding="utf-8")
    source = play / "test_x.py"
    source.write_text("import tests.play.test_a\nfrom tests.play.test_b import helper\n"
                      "from tests.play import test_c\nfrom .test_d import helper\nfrom . import test_e\n"
                      "def f():\n    from tests.play.test_f import g\n"
                      "from tests.play.helpers import test_suite_yaml\nfrom tests.play import helpers\n",
                      encoding="utf-8")
    assert imported_test_modules(source, tmp_path) == [
        "tests.play.test_a", "tests.play.test_b", "tests.play.test_c", "tests.play.test_d", "tests.play.test_e",
        "tests.play.test_f"]


def test_no_test_module_imports_another_test_module() -> None:
    offenders = {str(p.relative_to(TESTS.parent)): names for p in modules_of_tests()
                 if (names := imported_test_modules(p))}
    assert not offenders, ("a test module imports another test module; move what they share into a helper "
                           f"module (tests/<area>/helpers.py) or a conftest.py fixture: {offenders}")


def test_no_module_of_the_tests_is_over_500_lines() -> None:
    modules = sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)
    long = {str(p.relative_to(TESTS.parent)): n for p in modules
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by subject): {long}"


def test_a_dated_name_is_told_from_a_subject() -> None:
    dated = ["test_faults_property_v3", "test_faults_property_v3_cli", "test_tools_round2", "test_issue37",
             "test_state_seed002"]
    subjects = ["test_tool_rounds", "test_setup_and_seed", "test_mtbench101_run", "test_http_429", "test_v_shape"]
    assert [n for n in dated + subjects if HISTORY.search(n)] == dated


def test_test_file_names_say_what_they_test_not_when() -> None:
    dated = [str(p.relative_to(TESTS.parent)) for p in modules_of_tests() if HISTORY.search(p.stem)]
    assert not dated, f"test file names that say when, not what (name them by subject): {dated}"
