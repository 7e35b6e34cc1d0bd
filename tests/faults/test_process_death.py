"""Property, v3 fault classes that end or starve the process (SPEC §17), through the real CLI in a subprocess.

- process death: `os._exit` or a segfault in a provider or a python check, an `atexit` hook that
  `os._exit`s, with and without forked players (`--processes 2`): the affected conversations are errors
  naming the cause, the others keep their verdicts, run.json is plain JSON, exit 3 (or 1), never 0;
- storage faults: a full disk, a read-only folder, a folder that is a file, under run.json, a report or
  the run directory: exit 2 before the run or 3 after it, naming the path, never a traceback, never 1.

The in-process classes are in test_faults_property_v3.py (their helpers are shared from there).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tests.test_faults_property import WRONG, assert_all_ran_and_passed
from tests.test_faults_property_v3 import FEW, suite_yaml

posix = pytest.mark.skipif(not hasattr(os, "fork"), reason="a supervised run and forked players need POSIX")


def cli(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`evalspec ARGS` in a new process, as CI runs it (real standard streams: the run is supervised)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    env.pop("EVALSPEC_SUPERVISE", None)
    return subprocess.run([sys.executable, "-m", "evalspec", *args], cwd=where, capture_output=True, text=True,
                          timeout=120, env=env)


def plain_json(path: Path) -> dict[str, Any]:
    """run.json read back as plain JSON: NaN or Infinity in it fail."""
    def refuse(name: str) -> None:
        raise AssertionError(f"{path}: {name} is not JSON")

    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)
    return data


# ---------------------------------------------------------------------------------------------------------
# Process death: user code cannot end the run

DYING_BOT = '''
import atexit, ctypes, os

def _fault(name):
    if name == "os_exit0": os._exit(0)
    if name == "os_exit3": os._exit(3)
    if name == "segv": ctypes.string_at(0)  # a crash in native code: the process ends on SIGSEGV
    if name == "atexit": atexit.register(os._exit, 0)  # whenever this process ends, it ends "successfully"

def respond(messages, context):
    name = context["vars"]["faults"][context["turn"] - 1]
    _fault(name)
    return ("不对 " if name == "wrong" else "好的 ") + messages[-1]["content"]

def check(output, context):
    _fault(context["vars"]["check"])
    return True
'''
DEATHS = ["os_exit0", "os_exit3", "segv"]
dying_test = st.fixed_dictionaries({
    "faults": st.lists(st.one_of(st.sampled_from(["ok", "ok", WRONG, "atexit"]), st.sampled_from(DEATHS)),
                       min_size=1, max_size=3),
    "check": st.one_of(st.sampled_from(["ok", "ok", "atexit"]), st.sampled_from(DEATHS)),
})


def dies(case: dict[str, Any]) -> tuple[bool, bool]:
    """(the conversation ends its process: a turn's provider exits, or every reply received, the check does;
    a wrong reply came before that end)."""
    for n, name in enumerate(case["faults"]):
        if name in DEATHS:
            return True, WRONG in case["faults"][:n]
    return case["check"] in DEATHS, WRONG in case["faults"]


@posix
@settings(FEW, max_examples=8)
@given(cases=st.lists(dying_test, min_size=2, max_size=4), processes=st.sampled_from([None, 2]))
def test_user_code_that_ends_its_process_costs_its_conversation_only(
        cases: list[dict[str, Any]], processes: int | None, tmp_path: Path) -> None:
    assume(any(dies(c)[0] for c in cases))
    where = tmp_path / uuid.uuid4().hex
    where.mkdir()
    (where / "bot.py").write_text(DYING_BOT, encoding="utf-8")
    tests = [{"id": f"t{i}", "vars": case,
              "conversation": [{"user": f"问题{n}", "assert": [{"contains": "好的"}]} for n in range(len(case["faults"]))],
              "assert": [{"python": "bot.py:check"}]} for i, case in enumerate(cases)]
    (where / "s.yaml").write_text(suite_yaml(tests), encoding="utf-8")
    proc = cli(where, "run", "s.yaml", "-q", "-o", "out/run.json", *(["--processes", str(processes)] if processes else []))
    shown = proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, shown
    data = plain_json(where / "out" / "run.json")  # written, whatever ended
    records = {r["test_id"]: r for r in data["results"]}
    assert sorted(records) == sorted(f"t{i}" for i in range(len(cases))), shown
    failed = False
    for i, case in enumerate(cases):
        record = records[f"t{i}"]
        if record["status"] == "passed":
            assert_all_ran_and_passed(record, len(case["faults"]) + 1)
        dead, wrong_first = dies(case)
        if dead:
            # the end names its cause; a wrong reply received before it may be graded (an error never hides a
            # failure) or lost with the process that received it
            assert record["status"] in (("error", "failed") if wrong_first else ("error",)), \
                (case, record["status"], record["error"], shown)
            failed = failed or record["status"] == "failed"
            assert re.search(r"os\._exit|exit(ed)? (with )?status|died|killed", record["error"] or ""), record["error"]
        elif WRONG in case["faults"]:
            assert record["status"] == "failed", (case, record["status"], record["error"], shown)
            failed = True
        else:  # an innocent conversation played beside a dying one keeps its verdict
            assert record["status"] == "passed", (case, record["status"], record["error"], shown)
    assert proc.returncode == (1 if failed else 3), shown  # never 0, whatever an atexit hook says
    assert data["gate"]["exit_code"] == proc.returncode, data["gate"]


# ---------------------------------------------------------------------------------------------------------
# Storage faults: exit 2 before the run or 3 after it, never a traceback, never 1

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
