"""A suite whose users are only simulated speaks its users' language too (docs/en/reports-and-gate.md#language):
with no written `user:` turn, the simulated user's instructions, persona, goal and milestones decide, and a
comment after a value is not what the user says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import ROOT
from tests.helpers import invoke

JOURNEY = f"""\
providers:
  - id: bot
    python: {ROOT / "providers" / "demo_bot.py"}:respond
tests:
  - id: staged
    simulate:
      python: {ROOT / "providers" / "demo_buyer.py"}:buyer     # a scripted buyer, the same every run
      instructions: 你想买一台瑶光，关心分期；问清楚后约周六到店。
      milestones:
        - goal: 问清车况
          done_when: {{assistant_matches: "年款"}}
          max_turns: 2
        - user: 好的，那我周六上午过去看看          # a fixed turn between milestones
      max_turns: 4
    assert:
      - not-contains: 保证
"""


@pytest.fixture(autouse=True)
def no_team_language(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSPEC_LANG")  # tests/conftest.py sets it: here the suite decides
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)


def test_validate_and_run_of_a_chinese_journey_speak_chinese(tmp_path: Path) -> None:
    path = tmp_path / "journey.yaml"
    path.write_text(JOURNEY, encoding="utf-8")
    code, out = invoke("validate", str(path))
    assert code == 0 and out.strip().startswith("通过："), out
    code, out = invoke("run", str(path), "--no-cache", "-o", str(tmp_path / "run.json"))
    assert code == 0 and "门禁通过" in out and "gate passed" not in out.lower(), out
