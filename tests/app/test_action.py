"""The GitHub Action: the inputs of SPEC §6, and a job that fails exactly when `evalspec run` does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import ROOT


def test_action_inputs_and_gate() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert set(action["inputs"]) == {"suites", "fail-under", "args", "python-version", "comment", "baseline",
                                       "requirements", "working-directory", "coverage-min"}
    assert action["inputs"]["comment"]["default"] == "true"
    steps = action["runs"]["steps"]
    run_step = next(s for s in steps if s.get("id") == "run")
    assert "--md evalspec-report/summary.md" in run_step["run"] and "exit 0" in run_step["run"]
    assert steps[-1]["run"] == "exit ${{ steps.run.outputs.exit-code }}" and steps[-1]["if"] == "always()"
    comment = next(s for s in steps if "github-comment" in s.get("run", ""))
    assert comment["run"] == "evalspec github-comment evalspec-report/run.json"
    assert comment["env"]["GITHUB_TOKEN"] == "${{ github.token }}" and comment["continue-on-error"] is True
    assert any("upload-artifact" in s.get("uses", "") for s in steps)


def _play(step: dict[str, Any], inputs: dict[str, str], workspace: Path, bin_dir: Path) -> None:
    """Run one composite step's bash as a runner would: `${{ inputs.x }}` filled, in its working-directory."""
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    values = {k: str(v.get("default", "")) for k, v in action["inputs"].items()} | inputs

    def fill(text: str) -> str:
        return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: values[m.group(1)], text)

    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "GITHUB_OUTPUT": str(workspace / "out.txt")}
    env |= {k: fill(str(v)) for k, v in (step.get("env") or {}).items() if "github." not in str(v)}
    cwd = workspace / fill(step.get("working-directory", "."))
    subprocess.run(["bash", "-e", "-c", fill(step["run"])], cwd=cwd, env=env, check=True, timeout=30)


@pytest.fixture
def fake_tools(tmp_path: Path) -> Path:
    """`python` and `evalspec` that log their arguments and working directory instead of running."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python", "evalspec"):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\necho "{name} $PWD $*" >> "{tmp_path}/calls.log"\n', encoding="utf-8")
        tool.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("requirements, installed", [
    ("requirements.txt", "-r requirements.txt"),
    ("httpx jieba>=0.42", "httpx jieba>=0.42"),
])
def test_the_bots_dependencies_are_installed_in_the_working_directory(
        tmp_path: Path, fake_tools: Path, requirements: str, installed: str) -> None:
    bot = tmp_path / "ws" / "bot"
    bot.mkdir(parents=True)
    (bot / "requirements.txt").write_text("httpx\n", encoding="utf-8")
    steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    install = next(s for s in steps if s.get("name") == "Install the bot's dependencies")
    assert install["if"] == "inputs.requirements != ''"
    inputs = {"requirements": requirements, "working-directory": "bot"}
    _play(install, inputs, tmp_path / "ws", fake_tools)
    _play(next(s for s in steps if s.get("id") == "run"), inputs, tmp_path / "ws", fake_tools)
    calls = (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines()
    assert calls[0] == f"python {bot} -m pip install --quiet {installed}"
    assert calls[1].startswith(f"evalspec {bot} run suites/*.yaml -o evalspec-report/run.json")
    upload = next(s for s in steps if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "${{ inputs.working-directory }}/evalspec-report/"


def test_the_readme_and_init_pin_the_action_by_tag_and_pass_keys_from_secrets() -> None:
    from evalspec.authoring.scaffold import ACTION, WORKFLOW

    assert re.fullmatch(r"evalspec/evalspec@v\d+", ACTION) and f"uses: {ACTION}" in WORKFLOW
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert set(re.findall(r"uses: (evalspec/evalspec@\S+)", readme)) == {ACTION}
    assert re.search(r"OPENAI_API_KEY: \$\{\{ secrets\.OPENAI_API_KEY \}\}", readme)


COVERED_SUITE = """providers:
  - id: bot
    python: ../bot.py:respond
coverage:
  signal: [no_signal, purchase_signal, refused]
tests:
  - id: invite-after-finance
    conversation:
      - {user: 这台瑶光是哪年的车？, label: no_signal}
      - {user: 能分期吗？, label: purchase_signal}
  - id: refuse
    draft: true
    covers: {signal: refused}
    conversation:
      - user: 不用了，我再考虑考虑
"""


@pytest.mark.parametrize("minimum, passes", [("1", False), ("0", True)])
def test_coverage_min_runs_the_coverage_gate_and_fails_the_job_below_it(
        tmp_path: Path, minimum: str, passes: bool) -> None:
    """`coverage-min: N` runs the real `evalspec coverage --min N` in the working directory: a declared value
    (`refused`, covered only by a draft) with fewer than N approved tests fails the step, so the job."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "evalspec"
    tool.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m evalspec "$@"\n', encoding="utf-8")
    tool.chmod(0o755)
    bot = tmp_path / "ws" / "bot"
    (bot / "suites").mkdir(parents=True)
    (bot / "evalspec-report").mkdir()
    (bot / "bot.py").write_text("def respond(messages, context):\n    return '您好'\n", encoding="utf-8")
    (bot / "suites" / "sales.yaml").write_text(COVERED_SUITE, encoding="utf-8")
    steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    names = [s.get("name") for s in steps]
    gate = steps[names.index("Coverage gate")]
    assert gate["if"] == "inputs.coverage-min != ''" and "continue-on-error" not in gate
    assert names.index("Run suites") < names.index("Coverage gate") < names.index("Upload report")
    inputs = {"coverage-min": minimum, "working-directory": "bot"}
    if passes:
        _play(gate, inputs, tmp_path / "ws", bin_dir)
    else:
        with pytest.raises(subprocess.CalledProcessError) as failed:
            _play(gate, inputs, tmp_path / "ws", bin_dir)
        assert failed.value.returncode == 1
    matrix = (bot / "evalspec-report" / "coverage.md").read_text(encoding="utf-8")
    assert "refused" in matrix and "purchase_signal" in matrix
    summary = next(s for s in steps if s.get("name") == "Step summary")
    assert "evalspec-report/coverage.md" in summary["run"]
