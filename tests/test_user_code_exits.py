"""User code cannot end the run (SPEC §17): `os._exit` in a provider, a python check or an `atexit` hook,
in a one-process run or on forked players, leaves run.json written, the conversation that ended the
process an error naming the cause, and an exit code that is never 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the watched run needs POSIX fork")

BOT = '''
import atexit, os

def respond(messages, context):
    if context["test_id"] == "boom":
        os._exit(0)
    if context["test_id"] == "exit-hook":
        atexit.register(os._exit, 0)  # runs after the run chose its exit code
    return "ok " + messages[-1]["content"]

def ends_the_process(output, context):
    os._exit(0)
'''


def cli(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "-o", "out.json", *args], cwd=where,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def write_suite(where: Path, tests: str, options: str = "") -> None:
    (where / "bot.py").write_text(BOT)
    (where / "s.yaml").write_text(f"providers: [{{id: b, python: bot.py:respond}}]\n{options}tests:\n{tests}",
                                  encoding="utf-8")


def statuses(where: Path) -> dict[str, tuple[str, str | None]]:
    data = json.loads((where / "out.json").read_text(encoding="utf-8"))
    return {r["test_id"]: (r["status"], r.get("error")) for r in data["results"]}


def test_os_exit_in_a_provider_is_that_conversations_error_and_the_run_goes_on(in_tmp: Path) -> None:
    write_suite(in_tmp, "".join(f"  - id: {t}\n    conversation: [{{user: hi}}, {{user: again}}]\n"
                                for t in ("a", "boom", "c", "d", "e")))
    proc = cli(in_tmp, "-j", "4")
    assert proc.returncode == 3, proc.stdout + proc.stderr  # before: exit 0 and no run.json
    got = statuses(in_tmp)
    assert list(got) == ["a", "boom", "c", "d", "e"]
    assert got["boom"][0] == "error" and "os._exit" in str(got["boom"][1]) and "status 0" in str(got["boom"][1])
    assert all(got[t] == ("passed", None) for t in ("a", "c", "d", "e"))  # in flight beside it, played again
    assert "boom" in proc.stderr and "Traceback" not in proc.stderr


def test_os_exit_in_a_python_check_fails_the_gate_when_another_verdict_failed(in_tmp: Path) -> None:
    write_suite(in_tmp, "  - id: checked\n    conversation: [{user: hi, assert: [{python: bot.py:ends_the_process}]}]\n"
                        "  - id: wrong\n    conversation: [{user: hi, assert: [{contains: nope}]}]\n")
    proc = cli(in_tmp, "-j", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    got = statuses(in_tmp)
    assert got["checked"][0] == "error" and "ended evalspec's process" in str(got["checked"][1])
    assert got["wrong"][0] == "failed"


def test_an_atexit_hook_that_exits_0_does_not_change_the_runs_exit_code(in_tmp: Path) -> None:
    write_suite(in_tmp, "  - id: exit-hook\n    conversation: [{user: hi, assert: [{contains: nope}]}]\n")
    proc = cli(in_tmp)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # before: 0, the hook's
    assert statuses(in_tmp) == {"exit-hook": ("failed", None)}


def test_os_exit_on_a_forked_player_is_an_error_and_the_parent_survives_it(in_tmp: Path) -> None:
    tests = "".join(f"  - id: t{i}\n    conversation: [{{user: hi}}]\n" for i in range(6))
    write_suite(in_tmp, tests + "  - id: boom\n    conversation: [{user: hi}]\n", "options: {cache: false}\n")
    proc = cli(in_tmp, "--processes", "2", "-j", "4")
    assert proc.returncode == 3, proc.stdout + proc.stderr  # before: the parent replayed boom and died too
    got = statuses(in_tmp)
    assert got["boom"][0] == "error" and "os._exit" in str(got["boom"][1])
    assert [got[f"t{i}"][0] for i in range(6)] == ["passed"] * 6
