"""Resume and grade never mix inputs (docs/en/recorded-conversations.md#resume-and-grade): `--resume` refuses
other conversations to grade than the interrupted run's, and `grade` of a `--transcripts P` run grades P."""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from pathlib import Path

from evalspec.config.loader import load_suite
from evalspec.play.runner import recorded_inputs
from tests.helpers import invoke

SUITE = """\
transcripts:
  path: logs/default.jsonl
defaults:
  assert:
    - contains: 您好
"""


def line(cid: str, reply: str) -> str:
    return json.dumps({"id": cid, "messages": [{"role": "user", "content": "在吗"},
                                               {"role": "assistant", "content": reply}]}, ensure_ascii=False) + "\n"


def project(root: Path) -> Path:
    (root / "logs").mkdir()
    (root / "logs" / "default.jsonl").write_text(line("默认-1", "您好"), encoding="utf-8")
    (root / "nightly.jsonl").write_text(line("夜间-1", "您好，在的") + line("夜间-2", "在"), encoding="utf-8")
    (root / "other.jsonl").write_text(line("其他-1", "您好"), encoding="utf-8")
    suite = root / "rules.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    return suite


def run_dir(root: Path) -> Path:
    (found,) = (root / ".evalspec" / "runs").iterdir()
    return found


def test_resume_with_other_conversations_to_grade_is_exit_2(in_tmp: Path) -> None:
    suite = project(in_tmp)
    code, out = invoke("run", str(suite), "--transcripts", "nightly.jsonl")
    assert code == 1, out  # 夜间-2 fails
    directory = str(run_dir(in_tmp))

    code, out = invoke("run", str(suite), "--transcripts", "other.jsonl", "--resume", directory)
    assert code == 2 and "--transcripts" in out and "other.jsonl" in out and "nightly.jsonl" in out, out
    code, out = invoke("run", str(suite), "--resume", directory)  # the suite's own file instead
    assert code == 2 and "transcripts.path" in out, out

    with (in_tmp / "nightly.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(line("夜间-3", "您好"))  # the same path, other content
    code, out = invoke("run", str(suite), "--transcripts", "nightly.jsonl", "--resume", directory)
    assert code == 2 and "changed since the interrupted run" in out and "Traceback" not in out, out


def test_resume_with_the_same_conversations_goes_on(in_tmp: Path) -> None:
    suite = project(in_tmp)
    assert invoke("run", str(suite), "--transcripts", "nightly.jsonl")[0] == 1
    code, out = invoke("run", str(suite), "--transcripts", "nightly.jsonl", "--resume", str(run_dir(in_tmp)))
    assert code == 1, out


def test_grade_of_a_transcripts_run_grades_that_file_again(in_tmp: Path) -> None:
    suite = project(in_tmp)
    code, out = invoke("run", str(suite), "--transcripts", "nightly.jsonl", "-o", "run.json")
    assert code == 1, out
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    assert data["transcripts"]["path"] == str(in_tmp / "nightly.jsonl")
    suite.write_text(SUITE.replace("contains: 您好", "contains: 在"), encoding="utf-8")  # a rule both now pass

    code, out = invoke("grade", "run.json")
    assert code == 0, out
    assert "no longer in the suite" not in out, out
    graded = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    assert {r["test_id"]: r["status"] for r in graded["results"]} == {"夜间-1": "passed", "夜间-2": "passed"}
    assert graded["transcripts"] == data["transcripts"]


def test_the_inputs_digest_reads_the_files_in_blocks_and_is_the_digest_of_their_bytes(tmp_path: Path) -> None:
    """A million recorded conversations are a 400 MB file: hashing it read whole was a recorded run's peak."""
    logs = tmp_path / "logs"
    logs.mkdir()
    with (logs / "default.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(40_000):
            fh.write(line(f"会话-{i}", "您好" * 40))
    (tmp_path / "rules.yaml").write_text(SUITE, encoding="utf-8")
    suite = load_suite(tmp_path / "rules.yaml")
    tracemalloc.start()
    try:
        found = recorded_inputs([suite], None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    name = str((logs / "default.jsonl").resolve())
    whole = hashlib.sha256(name.encode() + b"\0" + hashlib.sha256((logs / "default.jsonl").read_bytes()).digest())
    assert found is not None and found["sha256"] == whole.hexdigest()  # what an interrupted run recorded
    assert (logs / "default.jsonl").stat().st_size > 8_000_000 and peak < 3_000_000, peak
