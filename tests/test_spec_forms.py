"""Every YAML form written in SPEC.md (§2 suite, §2.1 providers, §2.2 tests, §2.3 curves, §2.4 simulated
users, §3 assertion forms), gathered in tests/data/spec_forms.yaml, validates and runs as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main

FORMS = Path(__file__).resolve().parent / "data" / "spec_forms.yaml"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    monkeypatch.setenv("BOT_TOKEN", "bot-token-value")


def test_spec_forms_validate(env: None) -> None:
    result = CliRunner().invoke(main, ["validate", str(FORMS)])
    assert result.exit_code == 0, result.output
    assert "4 tests" in result.output


def test_spec_forms_need_their_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("BOT_TOKEN", raising=False)
    result = CliRunner().invoke(main, ["validate", str(FORMS)])
    assert result.exit_code == 2
    assert "environment variable OPENAI_API_KEY is not set" in result.output
    assert "environment variable BOT_TOKEN is not set" in result.output


def test_spec_curve_runs_against_the_demo_bot(env: None, in_tmp: Path) -> None:
    result = CliRunner().invoke(main, ["run", str(FORMS), "--provider", "demo-bot", "--filter", "信息记忆衰减",
                                       "-o", "run.json"])
    # sla: every distance <= 10 must average >= 0.8; the demo bot's memory fades by distance 8: exit 1
    assert result.exit_code == 1, result.output
    assert "SLA missed" in result.output
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    (curve,) = data["curves"]
    assert [p["value"] for p in curve["points"]] == [1, 3, 5, 8, 12, 20]
    assert all(p["n"] == 3 for p in curve["points"])
    # a point's score is the test's own assertions: the suite's default red line gates, never dilutes (SPEC §17)
    assert [round(p["mean"], 2) for p in curve["points"]] == [1.0, 0.83, 0.67, 0.33, 0.0, 0.0]
    # a sample fails below the SLA minimum covering its point (0.8 up to 10): 0.67 at 5 is the failure point
    assert curve["sla"][0]["missed_at"] == [5, 8] and curve["failure_point"] == 5
