"""The GitHub Action: the inputs of SPEC §6, and a job that fails exactly when `evalspec run` does."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_action_inputs_and_gate() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert set(action["inputs"]) == {"suites", "fail-under", "args", "python-version", "comment", "baseline"}
    assert action["inputs"]["comment"]["default"] == "true"
    steps = action["runs"]["steps"]
    run_step = next(s for s in steps if s.get("id") == "run")
    assert "--md evalspec-report/summary.md" in run_step["run"] and "exit 0" in run_step["run"]
    assert steps[-1]["run"] == "exit ${{ steps.run.outputs.exit-code }}" and steps[-1]["if"] == "always()"
    comment = next(s for s in steps if "github-comment" in s.get("run", ""))
    assert comment["run"] == "evalspec github-comment evalspec-report/run.json"
    assert comment["env"]["GITHUB_TOKEN"] == "${{ github.token }}" and comment["continue-on-error"] is True
    assert any("upload-artifact" in s.get("uses", "") for s in steps)
