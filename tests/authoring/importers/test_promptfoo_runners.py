"""The programs a promptfoo import runs or writes are real files under evalspec/data (linted, typed, in the
wheel), and the importer stays readable: phases of short functions."""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import sys
from pathlib import Path

from click.testing import CliRunner

import evalspec
from evalspec.app.cli.main import main

PACKAGE = Path(evalspec.__file__).parent
RUNNERS = ("promptfoo_prompt_worker.py", "promptfoo_test_generator.py", "promptfoo_js_runner.mjs")


def test_the_runners_ship_in_the_wheel() -> None:
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")  # no tomllib on python 3.10
    section = pyproject.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    line = re.search(r"^evalspec\s*=\s*\[(.*)\]", section, re.M)
    assert line is not None, section
    globs = re.findall(r'"([^"]+)"', line[1])
    for name in RUNNERS:
        assert (PACKAGE / "data" / name).is_file(), name
        assert any(fnmatch.fnmatch(f"data/{name}", g) for g in globs), f"{name} is not package data: {globs}"


def test_the_javascript_runner_written_beside_a_suite_is_the_data_file(tmp_path: Path) -> None:
    (tmp_path / "shout.js").write_text("module.exports = async (prompt) => ({ output: prompt.toUpperCase() });\n",
                                       encoding="utf-8")
    config = {"prompts": ["你好 {{ name }}"], "providers": ["file://shout.js"],
              "tests": [{"vars": {"name": "世界"}, "assert": [{"type": "contains", "value": "世界"}]}]}
    (tmp_path / "promptfooconfig.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["import", "promptfoo", str(tmp_path / "promptfooconfig.json"),
                                       "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    written = (tmp_path / "out" / "promptfoo_js_runner.mjs").read_text(encoding="utf-8")
    assert written == (PACKAGE / "data" / "promptfoo_js_runner.mjs").read_text(encoding="utf-8")


def test_the_test_generator_runner_prints_the_tests_after_what_the_generator_printed(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "gen.py").write_text("def tests(n):\n    print('making', n, end='')\n"
                                     "    return [{'vars': {'q': '问题 %d' % k}} for k in range(n)]\n", encoding="utf-8")
    runner = (PACKAGE / "data" / "promptfoo_test_generator.py").read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", runner, str(tmp_path / "gen.py"), "tests", "[2]"],
                          capture_output=True, encoding="utf-8", cwd=tmp_path, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == [{"vars": {"q": "问题 0"}}, {"vars": {"q": "问题 1"}}]


def test_no_function_of_the_promptfoo_importer_is_over_60_lines() -> None:
    long = []
    for file in sorted((PACKAGE / "authoring" / "importers" / "promptfoo").glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None \
                    and node.end_lineno - node.lineno + 1 > 60:
                long.append(f"{file.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long
