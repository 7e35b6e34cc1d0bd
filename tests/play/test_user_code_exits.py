"""User code cannot end the run (SPEC §17): `os._exit` in a provider, a python check or an `atexit` hook,
in a one-process run or on forked players, leaves run.json written, the conversation that ended the
process an error naming the cause, and an exit code that is never 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from tests.raycluster import LocalCluster

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


@pytest.mark.parametrize("ref", ["ends.py:respond", "ends:respond"])
def test_a_provider_module_that_calls_os_exit_at_import_is_a_config_error_naming_it(in_tmp: Path, ref: str) -> None:
    (in_tmp / "ends.py").write_text("import os\nos._exit(0)\n\ndef respond(messages, context):\n    return 'ok'\n")
    (in_tmp / "s.yaml").write_text(f"providers:\n  - id: b\n    python: {ref}\ntests:\n"
                                   "  - id: t\n    conversation: [{user: hi}]\n")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONPATH": os.pathsep.join(
        [str(in_tmp), os.environ.get("PYTHONPATH", "")])}
    for args in (["validate", "s.yaml"], ["run", "s.yaml", "-o", "out.json"]):
        proc = subprocess.run([sys.executable, "-m", "evalspec", *args], cwd=in_tmp, capture_output=True, text=True,
                              timeout=120, env=env)
        assert proc.returncode == 2, proc.stdout + proc.stderr  # before: 0, before the watcher was in place
        assert "s.yaml:2: providers[0]: provider 'b'" in proc.stderr, proc.stderr
        assert "ends" in proc.stderr and "ended evalspec's process: it exited with status 0" in proc.stderr
        assert "nothing was run" in proc.stderr
    assert not (in_tmp / "out.json").exists()


def test_a_python_check_module_that_exits_at_import_is_a_config_error(in_tmp: Path) -> None:
    (in_tmp / "bot.py").write_text(BOT)
    (in_tmp / "quits.py").write_text("import sys\nsys.exit(0)\n")
    (in_tmp / "s.yaml").write_text("providers: [{id: b, python: bot.py:respond}]\ntests:\n  - id: t\n"
                                   "    conversation: [{user: hi, assert: [{python: 'quits:check'}]}]\n")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONPATH": os.pathsep.join(
        [str(in_tmp), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "-o", "out.json"], cwd=in_tmp,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr  # before: 0, the check's sys.exit ended evalspec
    assert "s.yaml:4: tests[0].conversation[0].assert[0].python" in proc.stderr and "quits" in proc.stderr and "SystemExit: 0" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (in_tmp / "out.json").exists()


def test_sigterm_while_a_module_is_imported_ends_the_command_as_terminated_not_as_a_config_error(in_tmp: Path) -> None:
    (in_tmp / "slow.py").write_text("import time\nprint('importing', flush=True)\ntime.sleep(60)\n\n"
                                    "def respond(messages, context):\n    return 'ok'\n")
    (in_tmp / "s.yaml").write_text("providers: [{id: b, python: slow.py:respond}]\ntests:\n"
                                   "  - id: t\n    conversation: [{user: hi}]\n")
    for args in (["validate", "s.yaml"], ["run", "s.yaml", "-o", "out.json"]):
        proc = subprocess.Popen([sys.executable, "-m", "evalspec", *args], cwd=in_tmp, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline() == "importing\n"  # the module is being imported
        proc.terminate()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 143, err  # a guarded load must not call this the module's fault (exit 2)
        assert "terminated: nothing was run" in err and "error" not in err


def test_a_python_check_that_exits_on_its_examples_is_a_config_error_naming_the_rule(in_tmp: Path) -> None:
    """`validate` and `run` grade a rule's `examples:` before any call (SPEC §18): a python check that ends
    the process there is exit 2 naming its line, not a bare "user code ended evalspec's process"."""
    write_suite(in_tmp, "  - id: t\n    conversation: [{user: hi}]\n    assert:\n"
                        "      - contains: ok\n        examples: {fail: [no], pass: [ok]}\n"
                        "      - python: bot.py:ends_the_process\n        examples: {fail: [bad]}\n")
    for args in (["validate", "s.yaml"], ["run", "s.yaml", "-o", "out.json"]):
        proc = subprocess.run([sys.executable, "-m", "evalspec", *args], cwd=in_tmp, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "s.yaml:9: tests[0].assert[1].examples.fail[0]: python check" in proc.stderr, proc.stderr
        assert "ended evalspec's process: it exited with status 0" in proc.stderr and "nothing was run" in proc.stderr
    assert not (in_tmp / "out.json").exists()


@pytest.mark.parametrize("check", ["python: bot.py:ends_the_process", "javascript: 'process.exit(1)'"])
def test_a_check_that_ends_the_process_is_its_error_and_the_red_line_beside_it_is_still_graded(
        in_tmp: Path, check: str) -> None:
    """docs/en/reports-and-gate.md#errors-and-failures: the reply broke a critical `not-regex`; the check whose
    code ended the process (python `os._exit`, node's `process.exit`) is an error, the red line fails the run."""
    write_suite(in_tmp, "  - id: leak\n    conversation:\n      - user: 电话\n        assert:\n"
                        f"          - {check}\n          - not-regex: ok\n            severity: critical\n")
    proc = cli(in_tmp, "--no-cache")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # before (python): exit 3, the red line never graded
    record = json.loads((in_tmp / "out.json").read_text(encoding="utf-8"))["results"][0]
    assert record["status"] == "failed" and record["critical_failed"] is True
    ended, red_line = record["assertions"]
    assert ended["pass"] is None and ended["error"] and red_line["pass"] is False
    if check.startswith("python"):
        assert "ended evalspec's process" in ended["error"] and "while this check ran" in ended["error"]


RED_LINE = ("  - id: leak\n    conversation:\n      - user: 电话\n        assert:\n{checks}"
            "          - not-regex: ok\n            severity: critical\n"
            "  - id: fine\n    conversation: [{{user: 你好, assert: [{{contains: ok}}]}}]\n")


def leak_record(where: Path) -> dict[str, Any]:
    data = json.loads((where / "out.json").read_text(encoding="utf-8"))
    assert {r["test_id"]: r["status"] for r in data["results"]} == {"leak": "failed", "fine": "passed"}
    record = next(r for r in data["results"] if r["test_id"] == "leak")
    assert record["critical_failed"] is True and record["assertions"][-1]["pass"] is False
    return cast(dict[str, Any], record)


def test_two_checks_that_end_the_process_are_both_errors_and_the_red_line_beside_them_fails_the_run(
        in_tmp: Path) -> None:
    write_suite(in_tmp, RED_LINE.format(checks="          - python: bot.py:ends_the_process\n"
                                               "          - python: bot.py:ends_the_process\n"))
    proc = cli(in_tmp, "--no-cache")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # before: exit 3, the second end ended the run
    first, second, _ = leak_record(in_tmp)["assertions"]
    for ended in (first, second):
        assert ended["pass"] is None and "ended evalspec's process" in ended["error"]
        assert "while this check ran" in ended["error"]
    # the supervisor says which check ended it and that the others are graded (before: "recorded as an error")
    assert "while its check tests[0].conversation[0].assert[0] ran; that check is recorded as an error" in proc.stderr
    assert "again: it exited with status 0" in proc.stderr and "assert[1] ran" in proc.stderr, proc.stderr
    assert "while this conversation was played" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_check_that_ends_a_forked_player_is_its_error_graded_on_the_replies_it_received(in_tmp: Path) -> None:
    write_suite(in_tmp, RED_LINE.format(checks="          - python: bot.py:ends_the_process\n"))
    (in_tmp / "bot.py").write_text(BOT.replace('    return "ok "', '    with open("played.txt", "a") as f:\n'
                                               '        f.write(context["test_id"] + "\\n")\n    return "ok "'))
    proc = cli(in_tmp, "--no-cache", "--processes", "2", "-j", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    ended, _ = leak_record(in_tmp)["assertions"]
    assert ended["pass"] is None and "ended a player process of evalspec" in ended["error"]
    assert "while this check ran" in ended["error"]
    # graded on the replies its player received: not played again (before: the parent played it again and
    # its check ended the parent too)
    assert (in_tmp / "played.txt").read_text().split().count("leak") == 1
    assert "ended evalspec's process" not in proc.stderr, proc.stderr


def test_checks_that_end_a_ray_worker_are_their_errors_and_the_red_line_beside_them_fails_the_run(
        in_tmp: Path, ray_cluster: LocalCluster) -> None:
    write_suite(in_tmp, RED_LINE.format(checks="          - python: bot.py:ends_the_process\n"
                                               "          - python: bot.py:ends_the_process\n"))
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "-o", "out.json", "--no-cache", "-q",
                           "--executor", "ray", "--address", ray_cluster.address], cwd=in_tmp,
                          env={**ray_cluster.env(), "PYTHONIOENCODING": "utf-8"}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # before: exit 3, the conversation an error
    first, second, _ = leak_record(in_tmp)["assertions"]
    for ended in (first, second):
        assert ended["pass"] is None and "ended the ray worker grading this conversation" in ended["error"]
