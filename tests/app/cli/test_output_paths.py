"""User code that changes directory never moves evalspec's own files (SPEC §8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_a_provider_that_changes_directory_does_not_move_run_json_or_the_reports(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "bot.py").write_text(f"import os\n\ndef respond(messages, context):\n"
                                     f"    os.chdir({str(elsewhere)!r})\n    return 'moved'\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text("providers: [{id: b, python: bot.py:respond}]\n"
                                     "tests:\n  - id: t\n    conversation: [{user: hi}, {user: again}]\n"
                                     "    assert: [{contains: moved}]\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "-o", "out/run.json",
                           "--md", "out/r.md", "--html", "out/r.html", "--junit", "out/r.xml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))["results"][0]["status"] == "passed"
    assert all((tmp_path / "out" / name).is_file() for name in ("r.md", "r.html", "r.xml"))
    assert list((tmp_path / ".evalspec" / "runs").glob("*/journal.jsonl"))
    assert not any(elsewhere.iterdir())


def test_report_without_a_path_renders_the_run_that_finished_last_wherever_it_was_written(in_tmp: Path) -> None:
    from tests.helpers import invoke

    (in_tmp / "bot.py").write_text("def respond(messages, context):\n    return 'yes'\n", encoding="utf-8")
    (in_tmp / "s.yaml").write_text("providers: [{id: b, python: bot.py:respond}]\n"
                                   "tests:\n  - conversation: [{user: hi}]\n", encoding="utf-8")
    assert invoke("run", "s.yaml", "--no-cache")[0] == 0
    assert invoke("run", "s.yaml", "--no-cache", "-o", "elsewhere/last.json")[0] == 0
    code, out = invoke("report")
    assert code == 0 and "elsewhere/last.json" in out.replace("\n", "")
