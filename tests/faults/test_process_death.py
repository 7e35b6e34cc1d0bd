"""Property: user code cannot end the run. `os._exit` or a segfault in a provider or a python check, an
`atexit` hook that `os._exit`s, with and without forked players (`--processes 2`), through the real CLI in a
subprocess: the affected conversations are errors naming the cause, the others keep their verdicts, run.json
is plain JSON, exit 3 (or 1), never 0 (docs/en/reports-and-gate.md#exit-codes-and-the-gate)."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.faults.helpers import FEW, WRONG, assert_all_ran_and_passed, cli, plain_json, suite_yaml

posix = pytest.mark.skipif(not hasattr(os, "fork"), reason="a supervised run and forked players need POSIX")

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


