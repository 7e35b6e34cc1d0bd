"""The disk cache (a rerun makes no calls, and does not import litellm) and resuming after a crash."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.results.journal import read_journal
from tests.helpers import invoke
from tests.play.helpers import slow_suite
from tests.servers import OpenAIServer


def model_suite(path: Path, server: OpenAIServer, client: str = "lean", system: str = "你好") -> Path:
    path.write_text(f"""\
providers:
  - id: m
    model: openai/gpt-4o-mini
    client: {client}
    api_base: {server.base}
    system: {system}
tests:
  - id: t
    repeat: 2
    conversation:
      - user: 一
      - user: 二
""", encoding="utf-8")
    return path


def test_second_identical_run_makes_zero_calls(in_tmp: Path) -> None:
    with OpenAIServer() as server:
        path = model_suite(in_tmp / "s.yaml", server)
        first = run([path], options=RunOptions(run_dir=in_tmp / "r1")).data
        assert server.calls == 4 and first["summary"]["calls"] == 4
        second = run([path], options=RunOptions(run_dir=in_tmp / "r2")).data
        assert server.calls == 4
        assert second["summary"]["calls"] == 0 and second["summary"]["cached_calls"] == 4
        assert second["results"][0]["transcript"] == [
            {**m, "cached": True} if m["role"] == "assistant" else m for m in first["results"][0]["transcript"]]
        run([path], options=RunOptions(run_dir=in_tmp / "r3", use_cache=False))
        assert server.calls == 8
        model_suite(path, server, system="换一个系统提示")
        run([path], options=RunOptions(run_dir=in_tmp / "r4"))
        assert server.calls == 12  # another configuration is another key


PROBE = """
import sys
from evalspec.app.cli.main import main
try:
    main()
finally:
    print("LITELLM_IMPORTED=" + str("litellm" in sys.modules), file=sys.stderr)
"""


def test_fully_cached_run_does_not_import_litellm(in_tmp: Path) -> None:
    with OpenAIServer() as server:
        path = model_suite(in_tmp / "s.yaml", server, client="litellm")
        cmd = [sys.executable, "-c", PROBE, "run", str(path), "-q"]
        env = {**os.environ, "EVALSPEC_SUPERVISE": "0"}  # the probe looks at the process that plays the run
        first = subprocess.run(cmd, cwd=in_tmp, capture_output=True, text=True, timeout=120, env=env)
        assert first.returncode == 0, first.stderr
        assert "LITELLM_IMPORTED=True" in first.stderr
        second = subprocess.run(cmd, cwd=in_tmp, capture_output=True, text=True, timeout=120, env=env)
        assert second.returncode == 0, second.stderr
        assert "LITELLM_IMPORTED=False" in second.stderr
        assert server.calls == 4


def _wait_for_journal(journal: Path, count: int, timeout: float = 20) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if journal.exists() and len(journal.read_text().splitlines()) >= count:
            return
        time.sleep(0.05)
    raise AssertionError("journal did not fill")


def test_kill_9_loses_nothing_finished_and_resume_runs_only_the_rest(in_tmp: Path) -> None:
    path = slow_suite(in_tmp)
    run_dir = in_tmp / "runs" / "r"
    proc = subprocess.Popen([sys.executable, "-m", "evalspec", "run", str(path), "-j", "1", "--resume", str(run_dir)],
                            cwd=in_tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc.wait(timeout=60)  # --resume on a missing journal is a usage error
    assert proc.returncode == 2
    run_dir.mkdir(parents=True)
    (run_dir / "journal.jsonl").write_text("")
    proc = subprocess.Popen([sys.executable, "-m", "evalspec", "run", str(path), "-j", "1", "--resume", str(run_dir)],
                            cwd=in_tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = run_dir / "journal.jsonl"
    _wait_for_journal(journal, 3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    finished = {json.loads(line)["test_id"] for line in journal.read_text().splitlines() if line.strip()}
    assert 3 <= len(finished) < 8
    (in_tmp / "calls.log").unlink()
    done = subprocess.run([sys.executable, "-m", "evalspec", "run", str(path), "-j", "4", "--resume", str(run_dir)],
                          cwd=in_tmp, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    called = set((in_tmp / "calls.log").read_text().split())
    assert called == {f"t{i}" for i in range(8)} - finished
    data = json.loads((run_dir / "run.json").read_text())
    assert [r["test_id"] for r in data["results"]] == [f"t{i}" for i in range(8)]  # suite order


def test_ctrl_c_keeps_finished_tests_and_says_how_to_resume(in_tmp: Path) -> None:
    path = slow_suite(in_tmp)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.Popen([sys.executable, "-m", "evalspec", "run", str(path), "-j", "1", "-o", "out.json"],
                            cwd=in_tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 20
    while time.time() < deadline and not list((in_tmp / ".evalspec" / "runs").glob("*/journal.jsonl")):
        time.sleep(0.05)
    (journal,) = list((in_tmp / ".evalspec" / "runs").glob("*/journal.jsonl"))
    _wait_for_journal(journal, 2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, out + err
    assert "interrupted" in err and "--resume" in err
    kept = len(journal.read_text().splitlines())
    assert kept >= 2
    resumed = subprocess.run([sys.executable, "-m", "evalspec", "run", str(path), "--resume", str(journal.parent),
                              "-o", "out.json"], cwd=in_tmp, capture_output=True, text=True, timeout=60, env=env)
    assert resumed.returncode == 0 and f"resuming: {kept} of 8 already finished" in resumed.stdout


def test_sigterm_is_handled_like_ctrl_c_exit_143_with_the_resume_hint(in_tmp: Path) -> None:
    path = slow_suite(in_tmp)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    run_dir = in_tmp / "runs" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "journal.jsonl").write_text("")
    proc = subprocess.Popen([sys.executable, "-m", "evalspec", "run", str(path), "-j", "1", "--resume", str(run_dir)],
                            cwd=in_tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    _wait_for_journal(run_dir / "journal.jsonl", 2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 143, out + err
    assert "terminated" in err and "--resume" in err
    assert len(read_journal(run_dir / "journal.jsonl")) >= 2


def test_resume_after_the_suite_changed_exits_2_naming_the_file(in_tmp: Path) -> None:
    path = slow_suite(in_tmp, n=2)
    data = run([path], options=RunOptions(run_dir=in_tmp / "r")).data
    assert data["gate"]["exit_code"] == 0
    path.write_text(path.read_text().replace("user: hi", "user: hello"))
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", str(path), "--resume", "r"], cwd=in_tmp,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "s.yaml" in proc.stderr and "changed since" in proc.stderr and "evalspec grade" in proc.stderr


def test_resume_after_the_python_bots_code_changed_exits_2_naming_the_provider(in_tmp: Path) -> None:
    # the verdicts kept from the first bot and those played by the edited one would make one run
    path = slow_suite(in_tmp, n=2)
    (in_tmp / "helper.py").write_text("ANSWER = '好的'\n", encoding="utf-8")
    assert run([path], options=RunOptions(run_dir=in_tmp / "r")).data["gate"]["exit_code"] == 0
    unchanged = subprocess.run([sys.executable, "-m", "evalspec", "run", str(path), "--resume", "r"], cwd=in_tmp,
                               capture_output=True, text=True, timeout=60)
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    (in_tmp / "helper.py").write_text("ANSWER = '请拨打 13812345678'\n", encoding="utf-8")  # a module beside the bot
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", str(path), "--resume", "r"], cwd=in_tmp,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "the code of python provider b changed since the interrupted run" in proc.stderr


def test_a_torn_last_journal_line_is_skipped_and_the_next_record_starts_a_new_line(in_tmp: Path) -> None:
    path = slow_suite(in_tmp, n=3)
    run_dir = in_tmp / "r"
    run([path], options=RunOptions(run_dir=run_dir))
    journal = run_dir / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines()
    journal.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2], encoding="utf-8")  # killed mid-write
    data = run([path], options=RunOptions(run_dir=run_dir, resume=True)).data
    assert [r["test_id"] for r in data["results"]] == ["t0", "t1", "t2"]
    assert sorted(r["test_id"] for r in read_journal(journal)) == ["t0", "t1", "t2"]
    assert all(r["status"] == "passed" for r in data["results"])


def test_first_ctrl_c_ends_a_run_whose_sync_provider_hangs(in_tmp: Path) -> None:
    (in_tmp / "bot.py").write_text("import pathlib, time\n\ndef respond(messages, context):\n"
                                   "    pathlib.Path('started').touch()\n    time.sleep(3600)\n")
    (in_tmp / "s.yaml").write_text("providers: [{id: b, python: bot.py:respond}]\noptions: {timeout: 3600}\n"
                                   "tests:\n  - id: t\n    conversation: [{user: hi}]\n")
    proc = subprocess.Popen([sys.executable, "-m", "evalspec", "run", "s.yaml"], cwd=in_tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not (in_tmp / "started").exists() and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)  # before: the first Ctrl-C waited for the hung thread forever
    assert proc.returncode == 130 and "--resume" in err, out + err


@pytest.mark.parametrize("started, resumed, named", [
    (["--var", "tone=calm"], ["--var", "tone=angry"], "--var tone differ"),
    ([], ["--filter", "t1"], "--filter 't1' differs"),
    (["--tag", "a"], ["--tag", "b"], "--tag b differs from the interrupted run's a"),
    (["--repeat", "2"], [], "--repeat (none) differs from the interrupted run's 2"),
    (["--provider", "b"], ["--provider", "c"], "--provider c differs"),
])
def test_resume_with_other_options_than_the_interrupted_run_exits_2(
        in_tmp: Path, started: list[str], resumed: list[str], named: str) -> None:
    (in_tmp / "bot.py").write_text("def respond(messages, context):\n    return 'ok'\n")
    (in_tmp / "s.yaml").write_text("providers: [{id: b, python: bot.py:respond}, {id: c, python: bot.py:respond}]\n"
                                   "vars: {tone: calm}\ntests:\n  - id: t1\n    tags: [a, b]\n"
                                   "    conversation: [{user: '{{ tone }}'}]\n")
    code, out = invoke("run", "s.yaml", "-q", "--resume", "r", *started)
    assert code == 2  # no journal yet: a usage error
    (in_tmp / "r").mkdir()
    (in_tmp / "r" / "journal.jsonl").write_text("")
    code, out = invoke("run", "s.yaml", "-q", "--resume", "r", *started)
    assert code == 0, out
    code, out = invoke("run", "s.yaml", "-q", "--resume", "r", *started)
    assert code == 0, out  # the same options: resumed
    code, out = invoke("run", "s.yaml", "-q", "--resume", "r", *resumed)
    assert code == 2, out  # before: resumed, mixing the two runs' verdicts
    assert named in out and "nothing was run" in out
