"""promptfoo's `javascript` checks that evalspec's own checks cannot say become evalspec `javascript` checks
with the code as written (or its file), run by node with promptfoo's meaning; the ones whose verdict could
differ are listed as not converted."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.config import load_suite
from evalspec.play.runner import RunOptions
from tests.authoring.importers.helpers import import_config

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")

BODY = """const words = output.split(' ');
return {pass: words.length >= context.vars.min, score: 0.5, reason: `${words.length} words`};
"""
ASSERT_JS = """module.exports = {
  longEnough: (output, context) => output.length >= context.config.minLength,
};
"""


def checks_of(tmp_path: Path, checks: list[dict[str, Any]], files: dict[str, str] | None = None,
              **test: Any) -> tuple[Any, str]:
    (tmp_path / "pf").mkdir(exist_ok=True)
    for name, text in (files or {}).items():
        (tmp_path / "pf" / name).write_text(text, encoding="utf-8")
    code, _out, err = import_config(tmp_path, {"prompts": ["Say {{ word }}"], "providers": ["echo"],
                                               "tests": [{"vars": {"word": "hello there", "min": 2, **test},
                                                          "assert": checks}]})
    assert code == 0, err
    return load_suite(tmp_path / "out" / "promptfooconfig.yaml"), err


def verdicts(tmp_path: Path) -> list[Any]:
    data = run([tmp_path / "out" / "promptfooconfig.yaml"],
               options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return [(a["type"], a["pass"], a["reason"]) for a in data["results"][0]["assertions"]]


def test_code_is_kept_as_written_and_runs_with_promptfoos_meaning(tmp_path: Path) -> None:
    suite, _ = checks_of(tmp_path, [
        {"type": "javascript", "value": BODY},
        {"type": "not-javascript", "value": "output.split(' ').length > 10"},
        {"type": "javascript", "value": "output.split(' ').length / 10", "threshold": 0.5}])
    asserts = suite.tests[0].conversation[0].asserts
    assert [(a.name, a.value) for a in asserts] == [
        ("javascript", BODY), ("not-javascript", "output.split(' ').length > 10"),
        ("javascript", "output.split(' ').length / 10")]  # `${` written `$${`: read back as the code's own
    assert verdicts(tmp_path) == [("javascript", True, "3 words"),
                                  ("not-javascript", True, "javascript returned false"),
                                  ("javascript", False, "javascript returned 0.3 (passes at least 0.5)")]


def test_a_file_check_points_at_the_file_from_the_suite_and_keeps_its_config(tmp_path: Path) -> None:
    suite, _ = checks_of(tmp_path, [
        {"type": "javascript", "value": "file://assert.js:longEnough", "config": {"minLength": 5}},
        {"type": "javascript", "value": "file://assert.js:longEnough", "config": {"minLength": 50}}],
        files={"assert.js": ASSERT_JS})
    first = suite.tests[0].conversation[0].asserts[0]
    assert first.value == "file://../pf/assert.js:longEnough" and first.params.config == {"minLength": 5}
    assert [v[1] for v in verdicts(tmp_path)] == [True, False]  # "Say hello there" has 15 characters


def test_checks_whose_verdict_could_differ_are_listed_not_converted(tmp_path: Path) -> None:
    trace = "module.exports = (output, context) => context.trace.spans.length > 0;\n"
    suite, err = checks_of(tmp_path, [
        {"type": "contains", "value": "Say"},
        {"type": "javascript", "value": "const v = output.toLowerCase();\n['say'].some(s => v.includes(s))\n"},
        {"type": "javascript", "value": "output.sentiment === 'positive'"},
        {"type": "javascript", "value": "file://trace.js"},
        {"type": "javascript", "value": "file://check.ts"},
        {"type": "javascript", "value": "file://gone.js"},
        {"type": "javascript", "value": "output.length", "threshold": 5000},
        {"type": "javascript", "value": "output.length > 3", "transform": "output.trim()"},
        {"type": "javascript", "value": "({pass: true, score: 0.1, reason: 'x'})", "threshold": 0.5}],
        files={"trace.js": trace, "check.ts": "export default () => true;\n"})
    assert [a.type for a in suite.tests[0].conversation[0].asserts] == ["contains"]
    for why in ("on several lines without `return` (promptfoo's check returns nothing: it always fails)",
                "reading output.sentiment (a provider's parsed object",
                "reading context.trace (evalspec's context has vars, prompt, test and config)",
                "file check.ts (node runs .js, .cjs and .mjs files)", "file gone.js is not next to the config",
                "threshold 5000 (evalspec's thresholds are 0..1)", "on the output transformed by 'output.trim()'",
                "with a threshold and a {pass, ...} result"):
        assert f"assertion 'javascript' {why}" in err, why


def test_one_liners_evalspec_can_say_stay_its_own_checks(tmp_path: Path) -> None:
    suite, _ = checks_of(tmp_path, [{"type": "javascript", "value": "output.includes('Say')"},
                                    {"type": "not-javascript", "value": "output.includes('Bye')"}])
    assert [a.name for a in suite.tests[0].conversation[0].asserts] == ["contains", "not-javascript"]


def test_templates_in_the_code_render_with_the_tests_vars_as_promptfoo_renders_them(tmp_path: Path) -> None:
    checks_of(tmp_path, [{"type": "javascript", "value": "output.includes('{{ word }}') && `${output}`.length > 3"}])
    assert verdicts(tmp_path)[0][1] is True
