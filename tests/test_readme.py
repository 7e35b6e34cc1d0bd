"""The README is enough to start: its two commands are what CI runs, and its workflow is what `init` writes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from evalspec.app.cli.main import main
from evalspec.authoring.scaffold import ACTION, WORKFLOW

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert block
    return block.group(1).strip().splitlines()


def test_the_first_command_installs_only_what_running_needs_and_the_second_runs_the_tests() -> None:
    first, second = readme_commands()
    assert first == "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && evalspec run suites/*.yaml"
    assert "pip install -e '.[dev]'" in second and second.endswith("python -m pytest -q")


def test_ci_runs_both_readme_commands_verbatim_and_ends_with_the_tests() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    first, second = readme_commands()
    assert first in ci and second in ci
    assert [line for line in ci if line.strip() and not line.startswith("#")][-1] == second
    assert any("apt-get install" in line and "chromium" in line for line in ci)


def test_the_readme_workflow_is_complete_and_init_writes_the_same(tmp_path: Path) -> None:
    assert "```yaml\n" + WORKFLOW + "```" in README
    workflow = yaml.safe_load(WORKFLOW)
    assert workflow["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
    assert "pull_request" in workflow[True]  # `on:` is YAML 1.1's true
    steps = workflow["jobs"]["evalspec"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@") and steps[1]["uses"] == ACTION
    assert "<" not in ACTION and ACTION.count("/") == 1 and "@" in ACTION
    result = CliRunner().invoke(main, ["init", str(tmp_path / "proj")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "proj" / ".github" / "workflows" / "evalspec.yml").read_text(encoding="utf-8") == WORKFLOW
    suite = (tmp_path / "proj" / "suites" / "example.yaml").read_text(encoding="utf-8")
    assert "$schema=../schema/suite.schema.json" in suite and (tmp_path / "proj" / "schema" / "suite.schema.json").exists()
