"""A large local run plays on forked processes and reads exactly like a one-process run."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from evalspec import run
from evalspec.config.model import ProviderSpec
from evalspec.play.processes import SMALLEST, Claims, process_count
from evalspec.play.runner import RunOptions

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forked processes need POSIX")

BOT = '''
import os

def respond(messages, context):
    if context["test_id"] == "t7" and os.getpid() != int(os.environ["EVALSPEC_TEST_PARENT"]):
        os._exit(3)  # the process playing t7 dies (the parent replays it)
    return f"pid {os.getpid()} reply {context['test_id']} turn {context['turn']}: " + messages[-1]["content"]
'''


def suite(folder: Path, n: int = 24) -> Path:
    (folder / "bot.py").write_text(BOT)
    tests = "".join(f"  - id: t{i}\n    conversation: [{{user: q{i}}}, {{user: again}}]\n" for i in range(n))
    path = folder / "s.yaml"
    path.write_text("options: {cache: false}\nproviders:\n  - id: b\n    python: bot.py:respond\n"
                    "defaults:\n  assert:\n    - not-contains: 'q13'\n      scope: each_turn\n"
                    f"tests:\n{tests}")
    return path


def play(folder: Path, processes: int, name: str) -> dict:
    os.environ["EVALSPEC_TEST_PARENT"] = str(os.getpid())
    options = RunOptions(run_dir=folder / name, concurrency=4, processes=processes)
    return run([suite(folder)], options=options, output=folder / f"{name}.json").data


def without_pids(record: dict) -> str:
    """The record as JSON, without what differs between any two runs (process ids, timings)."""
    text = json.dumps({k: v for k, v in record.items() if k != "duration_ms"}, ensure_ascii=False)
    return re.sub(r'"latency_ms": [0-9.]+', "", re.sub(r"pid \d+ ", "", text))


def test_records_verdicts_and_order_are_those_of_a_one_process_run(in_tmp: Path) -> None:
    one, two = play(in_tmp, 1, "one"), play(in_tmp, 2, "two")
    assert [r["test_id"] for r in two["results"]] == [f"t{i}" for i in range(24)]
    assert [without_pids(r) for r in two["results"]] == [without_pids(r) for r in one["results"]]
    assert two["summary"]["failed"] == one["summary"]["failed"] == 1  # t13's reply quotes q13
    pids = {r["transcript"][1]["content"].split(" reply ")[0] for r in two["results"]}
    assert len(pids) >= 2  # played by more than one process
    journal = (in_tmp / "two" / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["test_id"] for line in journal) == sorted(f"t{i}" for i in range(24))


def test_what_a_dead_process_did_not_deliver_is_played_by_the_parent(in_tmp: Path) -> None:
    data = play(in_tmp, 2, "two")
    t7 = next(r for r in data["results"] if r["test_id"] == "t7")
    assert t7["status"] == "passed"
    assert t7["transcript"][1]["content"].startswith(f"pid {os.getpid()} ")
    assert len(data["results"]) == 24


def test_small_runs_and_rate_limited_providers_stay_in_one_process(in_tmp: Path) -> None:
    from evalspec.config.loader import load_suites

    (loaded,) = load_suites([suite(in_tmp)])
    assert process_count([loaded], SMALLEST - 1, 64) == 1
    assert process_count([loaded], 2, 64, requested=8) == 2
    limited = ProviderSpec(id="m", kind="python", config={"python": "bot.py:respond"}, rpm=60)
    loaded.providers.append(limited)
    assert process_count([loaded], SMALLEST * 10, 64) == 1


def test_children_take_the_plan_in_chunks_and_a_faster_one_takes_more() -> None:
    # a static share (child i: positions i, i + n, ...) left one core idle at the end while the other child
    # still had conversations to play (up to half a second at 10,000)
    size = 40 * Claims.CHUNK
    claims = Claims(size)
    taken: dict[int, list[int]] = {}
    children = {}
    for index, delay in ((0, 0.02), (1, 0.0)):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # a child walks the plan, taking the positions its chunks hold
            os.close(read_fd)
            keep = claims.keep(index, lambda position: True)
            mine = []
            for position in range(size):
                if keep(position, ""):
                    mine.append(position)
                    if position % Claims.CHUNK == 0:
                        time.sleep(delay)  # this child plays slowly
            os.write(write_fd, json.dumps(mine).encode())
            os._exit(0)
        os.close(write_fd)
        children[index] = (pid, read_fd)
    for index, (pid, read_fd) in children.items():
        with os.fdopen(read_fd, "rb") as fh:
            taken[index] = json.loads(fh.read())
        os.waitpid(pid, 0)
    assert sorted(taken[0] + taken[1]) == list(range(size))  # every position once
    assert len(taken[1]) > len(taken[0])  # the faster child took more
    assert {claims.owner(p) for p in taken[0]} == {0} and {claims.owner(p) for p in taken[1]} == {1}


def test_a_child_that_dies_while_it_takes_a_chunk_holds_no_one_up() -> None:
    claims = Claims(4 * Claims.CHUNK)
    pid = os.fork()
    if pid == 0:  # ends while it holds the lock the chunks are taken under
        fcntl.lockf(claims._lock, fcntl.LOCK_EX)
        os._exit(0)
    os.waitpid(pid, 0)
    signal.alarm(10)  # a lock left held would hang the other children: fail instead
    try:
        keep = claims.keep(1, lambda position: True)
        assert [p for p in range(4 * Claims.CHUNK) if keep(p, "")] == list(range(4 * Claims.CHUNK))
    finally:
        signal.alarm(0)
    assert claims.owner(0) == 1 and Claims(10).owner(5) is None


def test_a_child_past_the_127th_is_still_named() -> None:
    claims = Claims(300 * Claims.CHUNK)
    keep = claims.keep(200, lambda position: True)
    assert keep(0, "") and claims.owner(0) == 200  # a signed byte read child 200 back as -56
