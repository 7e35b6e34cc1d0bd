"""`kept_cwd`: the one place the command line restores the working directory that user code changed, so
evalspec's own files land where the command was started (docs/en/providers.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalspec.app.cli.common import kept_cwd


def test_the_working_directory_comes_back_after_a_change_and_after_an_error(tmp_path: Path) -> None:
    start = os.getcwd()
    with kept_cwd():
        os.chdir(tmp_path)
    assert os.getcwd() == start
    with pytest.raises(RuntimeError), kept_cwd():
        os.chdir(tmp_path)
        raise RuntimeError("user code failed")
    assert os.getcwd() == start


def test_a_python_provider_that_changes_directory_when_it_is_loaded_moves_no_report(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "bot.py").write_text(f"import os\n\nos.chdir({str(elsewhere)!r})\n\n\n"
                                     "def respond(messages, context):\n    return 'loaded'\n", encoding="utf-8")
    bot = tmp_path / "bot.py"  # named absolutely: the module is found whatever directory it leaves behind
    (tmp_path / "s.yaml").write_text(f"providers: [{{id: b, python: '{bot}:respond'}}]\n"
                                     "tests:\n  - id: t\n    conversation: [{user: hi}]\n"
                                     "    assert: [{contains: loaded}]\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "--no-cache", "-q",
                           "--md", "out/r.md", "--junit", "out/r.xml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "out" / "r.md").is_file() and (tmp_path / "out" / "r.xml").is_file()
    assert list((tmp_path / ".evalspec" / "runs").glob("*/run.json"))
    assert not any(elsewhere.iterdir())
