"""Property: a storage fault (a full disk, a read-only folder, a folder that is a file) under run.json, a
report or the run directory, through the real CLI in a subprocess, is exit 2 before the run or 3 after it,
naming the path, never a traceback, never 1 (docs/en/reports-and-gate.md#exit-codes-and-the-gate)."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tests.faults.helpers import FEW, cli, suite_yaml

STORAGE_BOT = '''
def respond(messages, context):
    with open(context["vars"]["calls"], "a") as log:
        log.write(context["test_id"] + "\\n")
    return ("不对 " if context["vars"].get("wrong") else "好的 ") + messages[-1]["content"]
'''


@pytest.fixture(scope="module")
def disks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A full 64 KiB tmpfs and a read-only one (each holding a run directory `r` with an empty journal), and
    a folder that is a file. Mounting needs root: the mount-backed faults are left out elsewhere."""
    base = tmp_path_factory.mktemp("disks")
    out = {"notdir": base / "file"}
    out["notdir"].write_text("a file, not a folder")
    mounted = []
    try:
        for name in ("full", "ro"):
            mount = base / name
            mount.mkdir()
            if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                              capture_output=True).returncode != 0:
                continue
            mounted.append(mount)
            (mount / "r").mkdir()
            (mount / "r" / "journal.jsonl").write_text("")
            out[name] = mount
        if "full" in out:
            filler = os.open(out["full"] / "filler", os.O_WRONLY | os.O_CREAT)
            try:
                while os.write(filler, b"x" * 4096):
                    pass
            except OSError:  # full
                pass
            finally:
                os.close(filler)
        if "ro" in out:
            subprocess.run(["mount", "-o", "remount,ro", str(out["ro"])], check=True)
        yield out
    finally:
        for mount in mounted:
            subprocess.run(["umount", "-l", str(mount)], check=False)


TARGETS = ["-o", "--html", "--junit", "--md", "--resume", "default-run-dir"]


@settings(FEW, max_examples=6)
# a full disk under run.json (the error blamed the journal) and under a report (a traceback and exit 1)
@example(target="-o", disk="full", tests=1, wrong=False, html=False)
@example(target="--html", disk="full", tests=2, wrong=True, html=False)
@given(target=st.sampled_from(TARGETS), disk=st.sampled_from(["full", "ro", "notdir"]),
       tests=st.integers(1, 3), wrong=st.booleans(), html=st.booleans())
def test_a_storage_fault_is_exit_2_before_the_run_or_3_after_it(
        disks: dict[str, Path], target: str, disk: str, tests: int, wrong: bool, html: bool, tmp_path: Path) -> None:
    assume(disk in disks)
    assume(not (target == "default-run-dir" and disk != "notdir"))  # the cwd's own .evalspec: made a file
    assume(not (target == "--resume" and disk == "notdir"))  # a --resume folder that is a file: a usage error
    where = tmp_path / uuid.uuid4().hex
    where.mkdir()
    calls = where / "calls.log"
    (where / "bot.py").write_text(STORAGE_BOT, encoding="utf-8")
    cases = [{"id": f"t{i}", "vars": {"calls": str(calls), "wrong": wrong and i == 0},
              "conversation": [{"user": "你好", "assert": [{"contains": "好的"}]}]} for i in range(tests)]
    (where / "s.yaml").write_text(suite_yaml(cases), encoding="utf-8")
    bad = disks[disk] / (f"run-{uuid.uuid4().hex[:8]}" if disk == "notdir" else "")
    args = ["run", "s.yaml", "-q", "-j", "1"]
    if target == "--resume":
        bad = disks[disk] / "r"
        args += ["--resume", str(bad)]
    elif target == "default-run-dir":
        (where / ".evalspec").write_text("not a folder")
        bad = where / ".evalspec"
    else:
        bad = bad / f"out-{uuid.uuid4().hex[:8]}.{'json' if target == '-o' else 'html'}"
        args += [target, str(bad)]
    if html and target != "--html":
        args += ["--html", str(where / "report.html")]  # a healthy output beside the faulty one
    proc = cli(where, *args)
    shown = proc.stdout + proc.stderr
    assert proc.returncode in (2, 3), (proc.returncode, shown)  # never 0, never 1 (a failed test or not)
    assert "Traceback" not in shown, shown
    # the error names the path that failed (not only the resume command, which repeats every argument)
    said = shown.split("resume with:")[0]
    named = str(bad) if target != "default-run-dir" else ".evalspec"
    assert named in said or os.path.relpath(bad, where) in said, (named, shown)
    if proc.returncode == 2:
        assert not calls.exists(), shown  # refused before the run: nothing was called
