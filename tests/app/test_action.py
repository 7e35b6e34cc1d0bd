"""The GitHub Action: the inputs of SPEC §6, and a job that fails exactly when `evalspec run` does."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import ROOT


def test_action_inputs_and_gate() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert set(action["inputs"]) == {"suites", "fail-under", "args", "python-version", "comment", "baseline",
                                       "requirements", "working-directory"}
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
