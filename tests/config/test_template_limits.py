"""Templates render under a time and a size limit: a hostile one is exit 2, never a hang or a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main
from evalspec.config.interpolate import render_text
from evalspec.core.errors import TemplateProblem

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def suite_with_user_text(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"providers: [{{id: bot, python: '{BOT}:respond'}}]\n"
                    f"tests:\n  - id: t\n    conversation:\n      - user: \"{text}\"\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("template", "message"), [
    ("{{ 'x' * 10**11 }}", "the limit is 1,000,000 characters per template"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", "limit"),
])
def test_validate_refuses_a_template_over_its_limits_with_exit_2(tmp_path: Path, template: str, message: str) -> None:
    result = CliRunner().invoke(main, ["validate", str(suite_with_user_text(tmp_path, template))])
    assert result.exit_code == 2, result.output
    assert "s.yaml:5: tests[0].conversation[0].user: template" in result.output
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("template", [
    "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",  # loops, no output
    "{% set s = namespace(v='x') %}{% for i in range(60) %}{% set s.v = s.v ~ s.v %}{% endfor %}{{ s.v }}",
    "{% set s = namespace(v='x') %}{% for i in range(60) %}{% set s.v = s.v + s.v %}{% endfor %}{{ s.v }}",
    "{{ 'x'.center(10**11) }}",
    "{{ 'x'|center(10**11) }}",
    "{{ [0] * 10**10 }}",
    "{{ '{:>99999999999}'.format(1) }}",
    "{{ '%099999999999d' % 1 }}",
    "{% set s = 'x' * 999999 %}{{ s.replace('x', s) }}",
])
def test_templates_that_would_hang_or_exhaust_memory_are_refused(template: str) -> None:
    with pytest.raises(TemplateProblem) as info:
        render_text(template, {})
    assert "limit" in str(info.value) or "format width" in str(info.value)


@pytest.mark.parametrize(("template", "message"), [
    ("{{ 1 / 0 }}", "ZeroDivisionError: division by zero"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "recursion too deep"),
])
def test_errors_inside_a_template_are_template_problems_not_tracebacks(template: str, message: str) -> None:
    with pytest.raises(TemplateProblem, match=message):
        render_text(template, {})


def test_ordinary_templates_render_as_before() -> None:
    text = "{{ name }}：{% for i in range(3) %}{{ i }}{% endfor %} {{ 'ab' ~ name }} {{ n * 2 }} {{ '%03d' % n }} {{ 2 ** 64 }}"
    assert render_text(text, {"name": "张三", "n": 7}) == "张三：012 ab张三 14 007 18446744073709551616"
