"""Writing every report (console, Markdown, HTML, JUnit) of a streamed run takes memory that does not grow
with its conversations (docs/en/scale-and-ray.md#memory): the reporters' fixed run copied a few times and
ten times as often, measured with tracemalloc."""

from __future__ import annotations

import copy
import io
import tracemalloc
from pathlib import Path
from typing import Any

from rich.console import Console

from evalspec.reporters.console import print_summary
from evalspec.reporters.formats import ReportSettings, write_reports
from evalspec.results.runjson import read_run, write_json
from tests.reporters.golden import fixed


def copied(times: int) -> dict[str, Any]:
    """The fixed run with each test instance `times` times over (`[copy=k]`), verdicts beside records."""
    run = fixed()
    results, verdicts = run["results"], run["verdicts"]
    run["results"], run["verdicts"] = [], []
    for k in range(times):
        for r in results:
            r = copy.deepcopy(r)
            r["base_id"] += f"[copy={k}]"
            r["test_id"] += f"[copy={k}]"
            run["results"].append(r)
        for v in verdicts:
            run["verdicts"].append({**v, "test_id": v["test_id"] + f"[copy={k}]"})
    return run


def peak_kb(folder: Path, times: int) -> float:
    folder.mkdir()
    write_json(folder / "run.json", copied(times))
    tracemalloc.start()
    try:
        run = read_run(folder / "run.json", stream=True)
        paths = {name: str(folder / f"r.{name}") for name in ("junit", "markdown", "html")}
        write_reports(run, paths, ReportSettings(max_failures=5))
        print_summary(Console(file=io.StringIO(), width=120), run, paths, max_failures=5)
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


def test_the_reports_of_a_streamed_run_take_memory_that_does_not_grow(tmp_path: Path) -> None:
    peak_kb(tmp_path / "first", 1)  # what the first report imports and caches is not per conversation
    small, large = peak_kb(tmp_path / "small", 3), peak_kb(tmp_path / "large", 30)
    conversations = len(fixed()["results"]) * 27
    per_conversation = (large - small) / conversations
    # holding every conversation's testcase, index entry and anchor cost ~5 KB each here; what is left is
    # two 8-byte offsets a conversation (and the measure's noise)
    assert per_conversation < 2, f"{small:.0f} KB → {large:.0f} KB: {per_conversation:.2f} KB a conversation"
