"""Storage faults (SPEC §17): a full disk, a read-only folder, a run directory another run is playing.
A clear error naming the path (and the resume command when the journal is intact); exit 2 before the
run, 3 after it started; never a traceback, never exit 1.

The full and read-only disks are real: a 64 KiB tmpfs, mounted read-only for the second case (root is
needed to mount; the tests skip elsewhere)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.play.helpers import slow_suite

BIG_BOT = "def respond(messages, context):\n    return 'x' * 30000\n"


def cli(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "-q", *args], cwd=where,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"})


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_mid_run_is_an_error_naming_the_journal_with_the_resume_command(
        in_tmp: Path, small_disk: Path) -> None:
    (in_tmp / "bot.py").write_text(BIG_BOT)
    tests = "".join(f"  - id: t{i}\n    conversation: [{{user: hi}}]\n" for i in range(8))
    (in_tmp / "s.yaml").write_text("options: {cache: false}\nproviders: [{id: b, python: bot.py:respond}]\n"
                                   "tests:\n" + tests)
    run_dir = small_disk / "r"
    run_dir.mkdir()
    (run_dir / "journal.jsonl").write_text("")
    proc = cli(in_tmp, "-j", "1", "--resume", str(run_dir))
    assert proc.returncode == 3, proc.stdout + proc.stderr  # before: a traceback and exit 1
    assert "Traceback" not in proc.stderr
    assert "No space left on device" in proc.stderr and str(run_dir / "journal.jsonl") in proc.stderr
    assert f"resume with: evalspec run s.yaml -q -j 1 --resume {run_dir}" in proc.stderr


def test_a_read_only_run_directory_is_refused_before_the_run(in_tmp: Path, small_disk: Path) -> None:
    slow_suite(in_tmp, n=1)
    run_dir = small_disk / "r"
    run_dir.mkdir()
    (run_dir / "journal.jsonl").write_text("")
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    proc = cli(in_tmp, "--resume", str(run_dir))
    assert proc.returncode == 2, proc.stdout + proc.stderr  # before: a traceback and exit 1
    assert "Traceback" not in proc.stderr
    assert "Read-only file system" in proc.stderr and str(run_dir) in proc.stderr and "nothing was run" in proc.stderr
    assert not (in_tmp / "calls.log").exists()


HELD_BOT = """
import os, time
def respond(messages, context):
    with open("calls.log", "a") as f:
        f.write(context["test_id"] + "\\n")
    deadline = time.time() + 60
    while not os.path.exists("release") and time.time() < deadline:
        time.sleep(0.02)
    return "ok"
"""


def _wait_for_file(path: Path, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and not path.exists():
        time.sleep(0.02)
    assert path.exists(), f"{path.name} was not written"


def test_a_second_resume_of_a_run_in_progress_is_refused_and_a_dead_runs_lock_is_taken_over(in_tmp: Path) -> None:
    path = slow_suite(in_tmp)
    # the first run's bot holds each conversation until `release` exists: the run is surely in progress when
    # the second resume arrives, however slowly a loaded machine starts it
    (in_tmp / "bot.py").write_text(HELD_BOT)
    run_dir = in_tmp / "r"
    run_dir.mkdir()
    (run_dir / "journal.jsonl").write_text("")
    first = subprocess.Popen([sys.executable, "-m", "evalspec", "run", str(path), "-j", "1", "--resume", "r"],
                             cwd=in_tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_file(in_tmp / "calls.log")
        second = cli(in_tmp, "--resume", "r")
        assert second.returncode == 2, second.stdout + second.stderr  # before: both played into one journal
        assert f"in use by PID {first.pid}" in second.stderr and "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    deadline = time.time() + 10  # the killed run's player ends with it (it was told to)
    while time.time() < deadline and subprocess.run(["fuser", str(run_dir / "lock")], capture_output=True).returncode == 0:
        time.sleep(0.05)
    (in_tmp / "release").write_text("")
    third = cli(in_tmp, "--resume", "r")
    assert third.returncode == 0, third.stdout + third.stderr


def test_commands_that_write_an_output_on_a_full_disk_say_so_without_a_traceback_nor_exit_1(
        in_tmp: Path, small_disk: Path) -> None:
    """`grade`, `report`, `diff`, `export`, `judge-eval` ... write their files after the work: a full disk is
    a clear error naming the file (grade: exit 3, its verdicts were reached; the others: exit 2), never a
    traceback and never exit 1, which CI reads as "gate failed"."""
    (in_tmp / "bot.py").write_text("def respond(messages, context):\n    return 'ok'\n")
    (in_tmp / "s.yaml").write_text("options: {cache: false}\nproviders: [{id: b, python: bot.py:respond}]\n"
                                   "tests:\n  - id: t\n    conversation: [{user: hi, assert: [{contains: ok}]}]\n")
    assert cli(in_tmp, "-o", "run.json").returncode == 0
    fd = os.open(small_disk / "fill", os.O_WRONLY | os.O_CREAT)  # fill the disk to its last block
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    commands = ((["grade", "run.json", "-o", f"{small_disk}/g.json"], 3),
                (["report", "run.json", "--html", f"{small_disk}/r.html"], 2),
                (["diff", "run.json", "run.json", "-o", f"{small_disk}/d.json"], 2),
                (["export", "csv", "s.yaml", "-o", f"{small_disk}/e.csv"], 2))
    procs = [subprocess.Popen([sys.executable, "-m", "evalspec", *args], cwd=in_tmp, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
             for args, _ in commands]  # at once: each writes a file of its own
    for (args, code), proc in zip(commands, procs, strict=True):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == code, (args, out + err)
        assert "Traceback" not in err and "No space left on device" in err, err
        assert str(small_disk) in err, err
