"""`report` and `grade` of a large run read its records from disk one at a time, and the console and
Markdown list at most `--max-failures` failing tests (docs/en/scale-and-ray.md#memory)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalspec.reporters.console import print_summary
from evalspec.reporters.html import render_html, write_html
from evalspec.reporters.markdown import render_markdown
from evalspec.results.runjson import read_run
from evalspec.results.stream import JournalRecords
from tests.helpers import invoke

BOT = ('def respond(messages, context):\n'
       '    text = messages[-1]["content"]\n'
       '    return ("收到：" + text) * 20 if "坏" not in text else "不知道"\n')
DATASET_SUITE = """providers: [{id: bot, python: bot.py:respond}]
options: {cache: false}
tests:
  - id: scale
    dataset: rows.jsonl
    conversation: [{user: "{{ question }}"}, {user: 续航多少？}, {user: 能分期吗？}]
    assert: [{contains: 收到, scope: each_turn}]
"""
MEASURE = ("import resource, subprocess, sys\n"
           "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
           "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def write_dataset(folder: Path, n: int, bad_every: int = 0) -> None:
    (folder / "bot.py").write_text(BOT, encoding="utf-8")
    (folder / "s.yaml").write_text(DATASET_SUITE, encoding="utf-8")
    with (folder / "rows.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            question = "坏问题" if bad_every and i % bad_every == 0 else f"你好，我想看看瑶光（{i}）"
            fh.write(json.dumps({"question": question}, ensure_ascii=False) + "\n")


def peak_rss_kb(folder: Path, *args: str) -> tuple[int, int]:
    """`evalspec ARGS` in a child process: its exit code and peak RSS (KB)."""
    out = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "evalspec", *args], cwd=folder,
                         capture_output=True, text=True, timeout=600, check=True)
    code, rss = out.stdout.split()
    return int(code), int(rss)


def measured(folder: Path, n: int) -> dict[str, int]:
    folder.mkdir()
    write_dataset(folder, n, bad_every=100)
    peaks = {}
    for name, args, exit_code in (("run", ["run", "s.yaml", "-q", "-j", "64", "-o", "run.json"], 1),
                                  ("grade", ["grade", "run.json", "-o", "graded.json"], 1),  # one in 100 fails
                                  ("report", ["report", "run.json", "--html", "r.html", "--md", "r.md"], 0)):
        code, peaks[name] = peak_rss_kb(folder, *args)
        assert code == exit_code, name
    html = (folder / "r.html").read_text(encoding="utf-8")
    assert html.count('<details class="test"') == n and html.rstrip().endswith("</html>")  # every conversation, whole
    return peaks


def test_grade_and_report_memory_does_not_grow_with_the_run(tmp_path: Path) -> None:
    # 1,000 conversations apart: reading them whole grows the peak by ~20 MB, reading one at a time by ~3 MB
    small, large = measured(tmp_path / "small", 100), measured(tmp_path / "large", 1100)
    for name in ("grade", "report"):
        per_conversation_kb = (large[name] - small[name]) / 1000
        # reading the whole run.json cost ~25 KB a conversation (report) and ~20 KB (grade); what is left is
        # a light record and an offset per conversation (~2 KB measured)
        assert per_conversation_kb < 8, f"{name}: {small[name]} KB → {large[name]} KB: {per_conversation_kb:.1f} KB each"


def run_with_failures(folder: Path) -> Path:
    write_dataset(folder, 40, bad_every=8)  # rows 1, 9, 17, 25, 33 fail
    code, _ = invoke("run", str(folder / "s.yaml"), "-q", "-o", str(folder / "run.json"))
    assert code == 1
    return folder / "run.json"


def test_max_failures_lists_that_many_and_says_how_many_more(tmp_path: Path) -> None:
    run_json = run_with_failures(tmp_path)
    md = tmp_path / "r.md"
    code, out = invoke("report", str(run_json), "--md", str(md), "--max-failures", "2", "--lang", "en")
    assert code == 0
    text = md.read_text(encoding="utf-8")
    assert text.count("failed: **scale**") == 2 and "… and 3 more failing tests" in text
    code, out = invoke("grade", str(run_json), "-o", str(tmp_path / "g.json"), "--max-failures", "2")
    assert code == 1
    assert out.count("scale[row=") == 2 and "… and 3 more failing tests" in out
    code, out = invoke("grade", str(run_json), "-o", str(tmp_path / "g.json"))  # default 50: all five
    assert out.count("scale[row=") == 5 and "more failing" not in out


def test_a_streamed_report_is_the_report_of_the_run_read_whole(tmp_path: Path) -> None:
    run_json = run_with_failures(tmp_path)
    whole, streamed = read_run(run_json), read_run(run_json, stream=True)
    assert isinstance(streamed["results"], JournalRecords) and not isinstance(whole["results"], JournalRecords)
    assert list(streamed["results"]) == whole["results"]
    write_html(streamed, tmp_path / "streamed.html")
    assert (tmp_path / "streamed.html").read_text(encoding="utf-8") == render_html(whole)
    assert render_markdown(streamed) == render_markdown(whole)

    from rich.console import Console

    def console_text(run: dict[str, object]) -> str:
        console = Console(record=True, width=120, file=open("/dev/null", "w"))  # noqa: SIM115
        print_summary(console, run, {})
        return console.export_text()

    assert console_text(streamed) == console_text(whole)


def test_a_run_json_not_laid_out_one_record_a_line_is_read_whole(tmp_path: Path) -> None:
    run_json = run_with_failures(tmp_path)
    data = read_run(run_json)
    other = tmp_path / "indented.json"
    other.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    read = read_run(other, stream=True)
    assert isinstance(read["results"], list) and read["results"] == data["results"]
    cut = tmp_path / "cut.json"
    cut.write_bytes(run_json.read_bytes()[:-200])
    code, out = invoke("report", str(cut))
    assert code == 2 and "looks cut short" in out
