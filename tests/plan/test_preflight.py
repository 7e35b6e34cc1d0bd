"""`validate` checks everything `run` checks before its first call, in one round (SPEC §8, §9)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT

BOT = ROOT / "providers" / "demo_bot.py"


def evalspec(cwd: Path, *args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "evalspec", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    return proc.returncode, proc.stdout + proc.stderr


MISSING = f"""\
providers:
  - {{id: gone, python: nothere.py:respond}}
  - {{id: nofn, python: '{BOT}:no_such_function'}}
tests:
  - id: t
    conversation:
      - user: 你好
        assert:
          - not-after: {{pattern: 优惠, after: accepted}}
      - user: 好的
        label: accepted
    assert:
      - llm-rubric: 礼貌
      - python: checks.py:is_polite
      - similar: 你好
  - id: s
    simulate: {{persona: 顾客, goal: 问价格, max_turns: 2}}
"""


@pytest.mark.parametrize("command", ["validate", "run"])
def test_validate_and_run_report_the_same_preflight_problems_and_run_calls_nothing(tmp_path: Path,
                                                                                  command: str) -> None:
    (tmp_path / "s.yaml").write_text(MISSING, encoding="utf-8")
    code, out = evalspec(tmp_path, command, "s.yaml")
    assert code == 2, out
    for expected in (
        "s.yaml:2: providers[0]: provider 'gone': 'nothere.py:respond': file",
        "provider 'nofn'", "has no function 'no_such_function'",
        "needs a judge", "needs a embedder", "simulated test s needs a simulator",
        "s.yaml:14: tests[0].assert[1].python: python check: 'checks.py:is_polite': file",
        "s.yaml:9: tests[0].conversation[0].assert[0].not-after.after: label 'accepted' is on a later turn (line 10)",
    ):
        assert expected in out, (expected, out)
    assert "7 problems found; nothing was run." in out
    assert not (tmp_path / ".evalspec" / "runs").exists() or not any((tmp_path / ".evalspec" / "runs").iterdir())


def test_a_turn_level_rule_may_refer_to_its_own_turns_label(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(f"""\
providers: [{{id: bot, python: '{BOT}:respond'}}]
tests:
  - id: t
    conversation:
      - user: 好的，那我周六过去看看
        label: accepted
        assert:
          - not-after: {{pattern: 首付, after: accepted}}
""", encoding="utf-8")
    code, out = evalspec(tmp_path, "validate", "s.yaml")
    assert code == 0, out


def test_problems_from_loading_planning_and_preflight_come_out_in_one_round(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("""\
providers: [{id: gone, python: gone.py:respond}]
tests:
  - id: t
    repeat: 0
    conversation:
      - user: "{{ nme }}"
    assert:
      - contians: x
""", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("tests: [\n", encoding="utf-8")  # a YAML error stops this file only
    code, out = evalspec(tmp_path, "validate", "a.yaml", "b.yaml")
    assert code == 2, out
    for expected in ("a.yaml:4: tests[0].repeat: repeat must be at least 1, got 0",
                     "a.yaml:6: tests[0].conversation[0].user: template",  # found only by planning
                     "'nme' is undefined",
                     "a.yaml:8: tests[0].assert[0].contians: unknown assertion type 'contians'",
                     "provider 'gone': 'gone.py:respond': file",  # found only by the preflight
                     "b.yaml:2: the '[' at line 1 is never closed: end it with ']'"):
        assert expected in out, (expected, out)
