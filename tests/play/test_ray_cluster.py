"""`--executor ray` on a two-node cluster started on this machine (SPEC §15).

The system under test is a python provider that asks a loopback HTTP server for its answer, telling it
which node it runs on, its own `__file__` and its working directory; the server records when each call
started and how many were in flight.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.raycluster import LocalCluster
from tests.servers import LoopbackServer, Reply

# the session's cluster (the `ray_cluster` fixture skips these tests when ray is not installed), shared by
# every xdist worker: the tests spread over the workers, except those reading `first_run`'s two runs
pytestmark = pytest.mark.timeout(600)
FIRST_RUN = pytest.mark.xdist_group("ray-first-run")  # its tests on one worker: the two runs made once

RPM = 240  # one call start every 0.25 s, whichever worker makes it

BOT = '''
import json, os, urllib.request
from helper import SUFFIX  # a sibling module
with open(os.path.join(os.path.dirname(__file__), "facts.json")) as f:  # a sibling data file
    FACTS = json.load(f)

def reply(messages, ctx):
    body = json.dumps({"text": messages[-1]["content"], "node": os.environ.get("EVALSPEC_TEST_NODE"),
                       "file": __file__, "cwd": os.getcwd(), "pid": os.getpid()}).encode()
    request = urllib.request.Request("URL", body, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        answer = json.load(response)["answer"]
    return f"{answer} {SUFFIX} {FACTS['city']}"
'''


class BotServer(LoopbackServer):
    """Answers `ok: <text>` after `delay` seconds; records every call's start, node, file and cwd. With
    `kill_first`, the process making the first call is killed (SIGKILL) while that call is in flight."""

    def __init__(self, delay: float = 0.05, kill_first: bool = False) -> None:
        self.calls: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self.killed: dict[str, Any] | None = None
        guard = threading.Lock()

        def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
            with guard:
                self.calls.append({**body, "at": time.monotonic()})
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                if kill_first and self.killed is None:
                    self.killed = body
                    os.kill(body["pid"], signal.SIGKILL)  # a Ray worker of the test's own cluster
            time.sleep(delay)
            with guard:
                self.in_flight -= 1
            return Reply(body={"answer": f"ok: {body.get('text')}"})

        super().__init__(handle)


def write_suite(folder: Path, url: str, n: int, limits: str) -> Path:
    (folder / "suite").mkdir(parents=True)
    (folder / "suite" / "bot.py").write_text(BOT.replace("URL", url + "/chat"))
    (folder / "suite" / "helper.py").write_text('SUFFIX = "(helped)"\n')
    (folder / "suite" / "facts.json").write_text('{"city": "Lisbon"}')
    tests = "\n".join(f"""  - id: t{i:02d}
    conversation:
      - user: question {i}
        assert:
          - contains: "ok: question {i} (helped) Lisbon\"""" for i in range(n))
    suite = folder / "suite" / "cluster.yaml"
    suite.write_text(f"providers:\n  - id: bot\n    python: bot.py:reply\n{limits}\ntests:\n{tests}\n")
    return suite


@pytest.fixture(scope="module")
def cluster(ray_cluster: LocalCluster) -> LocalCluster:
    return ray_cluster  # one per session (tests/conftest.py)


def evalspec_run(cluster: LocalCluster, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalspec", "run", *args, "--executor", "ray", "--address",
                           cluster.address, "-q"], cwd=cwd, env=cluster.env(), capture_output=True, text=True,
                          timeout=timeout)


def starts_keep_the_rate(starts: list[float], rpm: float) -> bool:
    """Any k consecutive call starts span at least (k-1)·60/rpm seconds, less one interval for the
    jitter between the limiter's grant and the call on a loaded machine: at every scale, a minute
    included, at most `rpm` calls (one more only at a window's edge) start per minute."""
    starts = sorted(starts)
    interval = 60.0 / rpm
    return all(starts[j] - starts[i] >= (j - i - 1) * interval
               for i in range(len(starts)) for j in range(i + 1, len(starts)))


@pytest.fixture(scope="module")
def first_run(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    driver = tmp_path_factory.mktemp("driver")
    with BotServer() as server:
        suite = write_suite(driver, server.url, 16, f"    rpm: {RPM}\n    max_concurrency: 1")
        proc = evalspec_run(cluster, driver, str(suite), "-j", "8", "-o", "first.json")
        calls = list(server.calls)
        max_in_flight = server.max_in_flight
        again = evalspec_run(cluster, driver, str(suite), "-j", "8", "-o", "second.json")
        yield {"driver": driver, "proc": proc, "calls": calls, "max_in_flight": max_in_flight, "again": again,
               "calls_after_second_run": len(server.calls)}


@FIRST_RUN
def test_both_nodes_play_conversations_and_every_check_passes(first_run: dict[str, Any]) -> None:
    proc = first_run["proc"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads((first_run["driver"] / "first.json").read_text())
    assert [r["status"] for r in run["results"]] == ["passed"] * 16
    assert {call["node"] for call in first_run["calls"]} == {"head", "second"}


@FIRST_RUN
def test_one_limiter_holds_rpm_and_max_concurrency_across_the_cluster(first_run: dict[str, Any]) -> None:
    starts = [call["at"] for call in first_run["calls"]]
    assert len(starts) == 16
    assert starts_keep_the_rate(starts, RPM), [round(s - min(starts), 2) for s in sorted(starts)]
    assert first_run["max_in_flight"] == 1


def test_the_rate_check_sees_two_workers_each_keeping_the_rate_alone() -> None:
    one_worker = [i * 60 / RPM for i in range(8)]
    assert starts_keep_the_rate(one_worker, RPM)
    assert not starts_keep_the_rate(one_worker + [t + 0.01 for t in one_worker], RPM)


@FIRST_RUN
def test_workers_load_the_suite_and_its_python_files_from_what_the_task_carried(first_run: dict[str, Any]) -> None:
    driver = first_run["driver"]
    for call in first_run["calls"]:
        assert call["file"].endswith("/suite/bot.py")
        assert not Path(call["file"]).resolve().is_relative_to(driver.resolve()), call["file"]
        assert not Path(call["cwd"]).resolve().is_relative_to(driver.resolve()), call["cwd"]


@FIRST_RUN
def test_a_second_run_is_answered_from_the_drivers_cache(first_run: dict[str, Any]) -> None:
    again = first_run["again"]
    assert again.returncode == 0, again.stdout + again.stderr
    assert first_run["calls_after_second_run"] == len(first_run["calls"])  # no call reached the server
    second = json.loads((first_run["driver"] / "second.json").read_text())
    assert [r["status"] for r in second["results"]] == ["passed"] * 16
    assert (first_run["driver"] / ".evalspec" / "cache" / "responses.sqlite").is_file()


def test_resume_after_the_driver_is_killed_skips_the_finished_conversations(
        cluster: LocalCluster, tmp_path: Path) -> None:
    with BotServer(delay=0.4) as server:
        suite = write_suite(tmp_path, server.url, 12, "")
        command = [sys.executable, "-m", "evalspec", "run", str(suite), "--executor", "ray", "--address",
                   cluster.address, "-q", "--no-cache", "-j", "2", "-o", "run.json"]
        driver = subprocess.Popen(command, cwd=tmp_path, env=cluster.env(), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 240
        journal: list[Path] = []
        while time.monotonic() < deadline and driver.poll() is None:
            journal = list(tmp_path.glob(".evalspec/runs/*/journal.jsonl"))
            if journal and len(journal[0].read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
        assert journal, "the driver journaled nothing before it was killed"
        finished = [json.loads(line)["test_id"] for line in journal[0].read_text().splitlines()]
        assert 3 <= len(finished) < 12
        before = len(server.calls)
        resumed = subprocess.run([*command, "--resume", str(journal[0].parent)], cwd=tmp_path, env=cluster.env(),
                                 capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        redone = {call["text"] for call in server.calls[before:]}
    assert not redone & {f"question {int(t[1:])}" for t in finished}
    run = json.loads((tmp_path / "run.json").read_text())
    assert [r["test_id"] for r in run["results"]] == [f"t{i:02d}" for i in range(12)]
    assert all(r["status"] == "passed" for r in run["results"])


def test_a_module_function_provider_is_answered_from_the_drivers_cache_on_a_second_run(
        cluster: LocalCluster, tmp_path: Path) -> None:
    with BotServer() as server:
        suite = write_suite(tmp_path, server.url, 4, "")
        suite.write_text(suite.read_text().replace("python: bot.py:reply", "python: bot:reply"))  # module:function
        folder = suite.parent  # the driver imports `bot` from its working directory
        first = evalspec_run(cluster, folder, str(suite), "-j", "2", "-o", "first.json")
        calls = list(server.calls)
        again = evalspec_run(cluster, folder, str(suite), "-j", "2", "-o", "second.json")
        after = len(server.calls)
    assert first.returncode == 0, first.stdout + first.stderr
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(calls) == 4 and after == 4  # the second run made no call
    assert [r["status"] for r in json.loads((folder / "second.json").read_text())["results"]] == ["passed"] * 4
    for call in calls:  # the module, too, came with the task
        assert not Path(call["file"]).resolve().is_relative_to(tmp_path.resolve()), call["file"]


def test_a_worker_killed_mid_call_frees_its_slot_and_its_conversation_is_played_again(
        cluster: LocalCluster, tmp_path: Path) -> None:
    with BotServer(delay=0.2, kill_first=True) as server:
        suite = write_suite(tmp_path, server.url, 6, "    max_concurrency: 1")  # the dead worker held the only slot
        try:
            proc = evalspec_run(cluster, tmp_path, str(suite), "-j", "4", "--no-cache", "-o", "run.json", timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("the run hung: the dead worker's slot was never given back")
        calls, killed = list(server.calls), server.killed
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert killed is not None
    run = json.loads((tmp_path / "run.json").read_text())
    assert [r["status"] for r in run["results"]] == ["passed"] * 6
    again = [c for c in calls if c["text"] == killed["text"]]
    assert len(again) == 2 and again[1]["pid"] != killed["pid"]  # played again, by another worker


ENDING_BOT = '''
import os

def reply(messages, ctx):
    if ctx["test_id"] == "boom":
        os._exit(0)  # ends whichever Ray worker plays it
    return "ok: " + messages[-1]["content"]
'''


def test_a_conversation_that_ends_every_worker_it_lands_on_is_an_error_and_the_run_goes_on(
        cluster: LocalCluster, tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(ENDING_BOT)
    tests = "".join(f"  - id: {t}\n    conversation: [{{user: q {t}, assert: [{{contains: 'ok: q {t}'}}]}}]\n"
                    for t in ("a", "boom", "c", "d", "e", "f"))
    (tmp_path / "s.yaml").write_text(f"providers: [{{id: b, python: bot.py:reply}}]\ntests:\n{tests}")
    proc = evalspec_run(cluster, tmp_path, "s.yaml", "-j", "4", "--no-cache", "-o", "run.json", timeout=240)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # before: 2, "nothing was run"
    run = json.loads((tmp_path / "run.json").read_text())
    got = {r["test_id"]: (r["status"], r.get("error")) for r in run["results"]}
    assert list(got) == ["a", "boom", "c", "d", "e", "f"]
    assert got["boom"][0] == "error" and "user code ended the ray worker" in str(got["boom"][1])
    assert "the last time alone" in str(got["boom"][1]) and "Worker exit" in str(got["boom"][1])
    assert all(got[t] == ("passed", None) for t in ("a", "c", "d", "e", "f"))  # its neighbours, played again
