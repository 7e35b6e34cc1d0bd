"""`evalspec init` writes a .gitignore that keeps what a run produces out of git and what people decided
in (SPEC §32, docs/en/ci.md#what-to-commit), merged into an existing one without repeating its lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import invoke

RUN_FILES = [".evalspec/runs/r1/run.json", ".evalspec/cache/ab.json"]
TEAM_FILES = [".evalspec/triage.jsonl", ".evalspec/labels.jsonl", ".evalspec/review.log"]


def _ignored(project: Path) -> set[str]:
    """What git itself ignores of the files a run and a review leave in the project."""
    for name in RUN_FILES + TEAM_FILES:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("{}\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    found = subprocess.run(["git", "-C", str(project), "check-ignore", *RUN_FILES, *TEAM_FILES],
                           capture_output=True, text=True)
    return set(found.stdout.split())


def test_init_writes_a_gitignore_that_keeps_runs_out_and_review_files_in(tmp_path: Path) -> None:
    code, out = invoke("init", str(tmp_path / "proj"))
    assert code == 0, out
    assert f"created {tmp_path / 'proj' / '.gitignore'}" in out
    assert _ignored(tmp_path / "proj") == set(RUN_FILES)


def test_init_merges_into_an_existing_gitignore_without_repeating_lines(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".gitignore").write_text("__pycache__/\n.evalspec/\n.evalspec/cache/\n", encoding="utf-8")
    assert invoke("init", str(project))[0] == 0
    lines = (project / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "__pycache__/" and lines.count(".evalspec/cache/") == 1 and len(lines) == len(set(lines))
    assert _ignored(project) == set(RUN_FILES)  # `.evalspec/` would have hidden triage.jsonl from git
    (project / "suites" / "example.yaml").unlink()
    before = (project / ".gitignore").read_text(encoding="utf-8")
    assert invoke("init", str(project))[0] == 2  # the other starter files exist: nothing written
    assert (project / ".gitignore").read_text(encoding="utf-8") == before
