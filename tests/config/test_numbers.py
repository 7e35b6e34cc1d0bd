"""Numbers are numbers (SPEC §17): NaN and ±inf are refused wherever a number is read — the suite file,
the command line, the Python API — with exit 2 naming the key, never a check silently switched off."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from tests.helpers import invoke

BOT = "def respond(messages, context):\n    open('called', 'a').write('x')\n    return 'hello'\n"

SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
    rpm: {rpm}
    timeout: {provider_timeout}
gate: {{min_pass_rate: {min_pass_rate}}}
options: {{timeout: {timeout}, grade_timeout: {grade_timeout}, max_retry_wait: {max_retry_wait}}}
tests:
  - id: t
    threshold: {threshold}
    matrix: {{d: [1, 2]}}
    curve: d
    sla: [{{at: 10, min_score: {min_score}}}]
    conversation:
      - user: hi
        assert:
          - {{contains: hello, weight: {weight}, threshold: {assertion_threshold}}}
          - latency: {latency}
          - word-count: {{min: {word_min}}}
"""
FINE = {"rpm": 60, "provider_timeout": 30, "min_pass_rate": 1.0, "timeout": 60, "grade_timeout": 30,
        "max_retry_wait": 60, "threshold": 0.5, "min_score": 0.5, "weight": 1, "assertion_threshold": 1.0,
        "latency": 10000, "word_min": 1}
# the key's line and path in SUITE
WHERE = {"rpm": "4: providers[0].rpm", "provider_timeout": "5: providers[0].timeout",
         "min_pass_rate": "6: gate.min_pass_rate", "timeout": "7: options.timeout",
         "grade_timeout": "7: options.grade_timeout", "max_retry_wait": "7: options.max_retry_wait",
         "threshold": "10: tests[0].threshold", "min_score": "13: tests[0].sla[0].min_score",
         "weight": "17: tests[0].conversation[0].assert[0].weight",
         "assertion_threshold": "17: tests[0].conversation[0].assert[0].threshold",
         "latency": "18: tests[0].conversation[0].assert[1].latency",
         "word_min": "19: tests[0].conversation[0].assert[2].word-count.min"}


def write(tmp_path: Path, **values: object) -> Path:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(SUITE.format(**{**FINE, **values}), encoding="utf-8")
    return path


def test_the_suite_with_finite_numbers_validates(in_tmp: Path) -> None:
    code, out = invoke("validate", str(write(in_tmp)))
    assert code == 0, out


@pytest.mark.parametrize("written", [".nan", ".NaN", ".inf", "-.inf", "+.Inf"])
@pytest.mark.parametrize("key", sorted(WHERE))
def test_nan_and_infinity_are_refused_with_the_key_and_its_line(in_tmp: Path, key: str, written: str) -> None:
    code, out = invoke("validate", str(write(in_tmp, **{key: written})))
    assert code == 2, out
    shown = ".nan" if "n" in written.lower().replace("inf", "") else ("-.inf" if written[0] == "-" else ".inf")
    assert f"s.yaml:{WHERE[key]}: {shown} is not a finite number" in out, out
    assert "1 problem found" in out, out  # the schema's words about the same value are not repeated


@pytest.mark.parametrize("written", [".nan", ".inf"])
def test_run_refuses_them_before_the_first_call(in_tmp: Path, written: str) -> None:
    code, out = invoke("run", str(write(in_tmp, min_pass_rate=written, rpm=written)))
    assert code == 2 and "gate.min_pass_rate" in out and "providers[0].rpm" in out, out
    assert not (in_tmp / "called").exists()


@pytest.mark.parametrize(("option", "value"), [("--fail-under", "nan"), ("--fail-under", "NaN"),
                                               ("--judge-sample", "nan")])
def test_command_line_rates_refuse_nan(in_tmp: Path, option: str, value: str) -> None:
    code, out = invoke("run", str(write(in_tmp)), option, value)
    assert code == 2 and option in out and "not a finite number" in out, out
    assert not (in_tmp / "called").exists()


def test_the_python_api_refuses_a_nan_fail_under(in_tmp: Path) -> None:
    with pytest.raises(ConfigError, match="fail_under: nan is not a finite number"):
        run(str(write(in_tmp)), fail_under=float("nan"), run_dir=in_tmp / "r")
    assert not (in_tmp / "called").exists()


@pytest.mark.parametrize("args", [["--judge", "openai/judge", "--min-agreement", "nan"],
                                  ["--judge", "{model: openai/judge, rpm: .nan}"]])
def test_judge_eval_refuses_nan_in_its_options(in_tmp: Path, args: list[str]) -> None:
    labels = in_tmp / "labels.jsonl"
    labels.write_text('{"transcript": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], '
                      '"assert": {"llm-rubric": "polite"}, "label": true}\n', encoding="utf-8")
    code, out = invoke("judge-eval", str(labels), *args)
    assert code == 2 and "is not a finite number" in out, out
