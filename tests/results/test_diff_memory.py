"""`evalspec diff` of two large runs reads them one record at a time, checked as they are read, and its diff
is the diff of the runs read whole (docs/en/scale-and-ray.md#memory)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalspec.results.compare import compare_runs
from evalspec.results.runjson import read_run
from evalspec.results.stream import JournalRecords
from tests.helpers import invoke

BOT = ('def respond(messages, context):\n'
       '    text = messages[-1]["content"]\n'
       '    return ("收到：" + text) * 20 if "坏" not in text else "不知道"\n')
SUITE = """providers: [{id: bot, python: bot.py:respond}]
options: {cache: false}
tests:
  - id: scale
    dataset: rows.jsonl
    conversation: [{user: "{{ question }}"}, {user: 续航多少？}, {user: 能分期吗？}]
    assert: [{contains: 收到, scope: each_turn}, {not-contains: 不知道, severity: critical, scope: each_turn}]
"""
MEASURE = ("import resource, subprocess, sys\n"
           "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
           "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def two_runs(folder: Path, n: int) -> tuple[Path, Path]:
    """BASE fails one row in 50, HEAD one in 40: regressions, fixes and failures still failing."""
    folder.mkdir()
    (folder / "bot.py").write_text(BOT, encoding="utf-8")
    (folder / "s.yaml").write_text(SUITE, encoding="utf-8")
    for name, bad_every in (("base", 50), ("head", 40)):
        with (folder / "rows.jsonl").open("w", encoding="utf-8") as fh:
            for i in range(n):
                question = "坏问题" if i % bad_every == 1 else f"你好，我想看看瑶光（{i}）"
                fh.write(json.dumps({"question": question}, ensure_ascii=False) + "\n")
        code, _ = invoke("run", str(folder / "s.yaml"), "-q", "-j", "32", "-o", str(folder / f"{name}.json"))
        assert code == 1
    return folder / "base.json", folder / "head.json"


def peak_rss_kb(folder: Path, *args: str) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "evalspec", *args], cwd=folder,
                         capture_output=True, text=True, timeout=600, check=True)
    code, rss = out.stdout.split()
    return int(code), int(rss)


def test_diff_memory_does_not_grow_with_the_runs(tmp_path: Path) -> None:
    peaks = []
    for n in (100, 1100):
        base, head = two_runs(tmp_path / str(n), n)
        code, peak = peak_rss_kb(base.parent, "diff", "base.json", "head.json", "--md", "d.md", "-o", "d.json")
        assert code == 1  # regressed rows block
        assert json.loads((base.parent / "d.json").read_text(encoding="utf-8"))["counts"]["regressed"] > 0
        peaks.append(peak)
    per_conversation_kb = (peaks[1] - peaks[0]) / 1000
    # reading both runs whole (and validating them whole) cost ~55 KB a conversation; what is left is the
    # diff's own row, what it compares of each run's repeat and an offset per record (~7 KB measured)
    assert per_conversation_kb < 15, f"{peaks[0]} KB → {peaks[1]} KB: {per_conversation_kb:.1f} KB each"


def test_a_streamed_diff_is_the_diff_of_the_runs_read_whole(tmp_path: Path) -> None:
    base, head = two_runs(tmp_path / "runs", 120)
    whole = compare_runs(read_run(base, check=True), read_run(head, check=True), "b", "h")
    streamed_head = read_run(head, check=True, stream=True)
    assert isinstance(streamed_head["results"], JournalRecords)
    streamed = compare_runs(read_run(base, check=True, stream=True), streamed_head, "b", "h")
    assert json.dumps(streamed, ensure_ascii=False) == json.dumps(whole, ensure_ascii=False)
    assert any(r["problem"] for r in streamed["rows"]) and any(r["critical_new"] for r in streamed["rows"])


def test_a_record_breaking_the_schema_far_into_a_streamed_run_is_refused_by_place(tmp_path: Path) -> None:
    base, head = two_runs(tmp_path / "runs", 60)
    lines = base.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith('"results"')) + 1 + 57  # results[57]
    record = json.loads(lines[at].removesuffix(","))
    record["score"] = 1.5  # a type the shape check passes, a range only the whole schema knows
    lines[at] = json.dumps(record, ensure_ascii=False) + ("," if lines[at].endswith(",") else "")
    base.write_text("\n".join(lines), encoding="utf-8")
    code, out = invoke("diff", str(base), str(head))
    assert code == 2
    flat = " ".join(out.split())
    assert "base.json" in flat and "does not validate against schema/run.schema.json: results[57].score" in flat
