"""`python:` custom assertions: bool, float, dict results, async functions and failures."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import check, transcript

CHECKS = '''
async def polite(output, context):
    return "您" in output

def ratio(output, context):
    return len(output) / 10

def detailed(output, context):
    return {"pass": context["turn"] == 1, "score": 0.7, "reason": "turn " + str(context["turn"])}

def broken(output, context):
    raise RuntimeError("boom")

def odd(output, context):
    return ["not", "valid"]
'''


def _dir(tmp_path: Path) -> Path:
    (tmp_path / "checks.py").write_text(CHECKS, encoding="utf-8")
    return tmp_path


def test_bool_result(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    assert check("python: checks.py:polite", transcript(("q", "您好")), suite_dir=d).passed
    assert not check("python: checks.py:polite", transcript(("q", "你好")), suite_dir=d).passed


def test_float_result_uses_threshold(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    r = check("python: checks.py:ratio", transcript(("q", "123456")), suite_dir=d)
    assert r.passed and r.score == 0.6  # default threshold 0.5
    assert not check("{python: checks.py:ratio, threshold: 0.7}", transcript(("q", "123456")), suite_dir=d).passed


def test_dict_result_and_context(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    r = check("python: checks.py:detailed", transcript(("q", "a")), turn=1, suite_dir=d)
    assert r.passed and r.score == 0.7 and r.reason == "turn 1"


def test_exceptions_and_bad_returns_are_errors(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    r = check("python: checks.py:broken", transcript(("q", "a")), suite_dir=d)
    assert r.passed is None and "boom" in (r.error or "")
    r = check("python: checks.py:odd", transcript(("q", "a")), suite_dir=d)
    assert r.passed is None and "expected bool" in (r.error or "")
    r = check("python: missing.py:fn", transcript(("q", "a")), suite_dir=d)
    assert r.passed is None and "does not exist" in (r.error or "")
