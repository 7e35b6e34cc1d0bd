"""The Action's `baseline` input reaches `evalspec run` as `--baseline X --gate regressions`, with the token."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from tests import ROOT


def run_step(tmp_path: Path, baseline: str) -> list[str]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "run")
    assert step["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    assert step["env"]["BASELINE"] == "${{ inputs.baseline }}"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "evalspec").write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$ARGS_FILE"\nexit 1\n')
    (fake / "evalspec").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "SUITES": "suites/a.yaml", "FAIL_UNDER": "",
           "EXTRA_ARGS": "", "BASELINE": baseline, "GITHUB_OUTPUT": str(tmp_path / "out"),
           "ARGS_FILE": str(tmp_path / "args")}
    subprocess.run(["bash", "-c", step["run"]], cwd=tmp_path, env=env, check=True, timeout=30)
    assert (tmp_path / "out").read_text() == "exit-code=1\n"
    return (tmp_path / "args").read_text().splitlines()


def test_baseline_auto_asks_for_the_regressions_gate(tmp_path: Path) -> None:
    args = run_step(tmp_path, "auto")
    assert args[-4:] == ["--baseline", "auto", "--gate", "regressions"]
    assert args[:2] == ["run", "suites/a.yaml"]


def test_no_baseline_input_runs_the_usual_gate(tmp_path: Path) -> None:
    assert "--baseline" not in run_step(tmp_path, "")
