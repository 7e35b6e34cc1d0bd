"""Every report of a run read back streamed (records in the journal, verdicts a `DiskRows`) is the report of
the same run in memory (docs/en/scale-and-ray.md#memory), the JUnit file written one testcase at a time
is the JUnit tree, and the failing tests listed are the top --max-failures."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from evalspec.core.errors import ConfigError
from evalspec.reporters.console import print_summary
from evalspec.reporters.html import render_html
from evalspec.reporters.junit import build_junit, write_junit
from evalspec.reporters.markdown import render_markdown
from evalspec.reporters.verdict_records import RecordCursor, record_key, verdict_finder
from evalspec.reporters.vocabulary import failing_at
from evalspec.results.runjson import read_run, write_json
from evalspec.results.stream import DiskRows, JournalRecords
from tests.reporters.golden import fixed, sections


def _console(run: Any, limit: int = 50) -> str:
    out = io.StringIO()
    print_summary(Console(file=out, width=120, no_color=True, highlight=False, soft_wrap=True), run, {},
                  max_failures=limit)
    return out.getvalue()


def _streamed(run: dict[str, Any], tmp_path: Path) -> Any:
    write_json(tmp_path / "run.json", run)
    data = read_run(tmp_path / "run.json", stream=True)
    assert isinstance(data["results"], JournalRecords)
    assert isinstance(data["verdicts"], DiskRows)  # a verdict per line, read back from disk
    return data


@pytest.mark.parametrize("make", [fixed, sections], ids=["fixed", "sections"])
def test_every_report_of_a_streamed_run_is_the_report_in_memory(make: Any, tmp_path: Path) -> None:
    streamed = _streamed(make(), tmp_path)
    for limit in (50, 1):
        assert _console(streamed, limit) == _console(make(), limit)
        assert render_markdown(streamed, env={}, max_failures=limit) == render_markdown(make(), env={}, max_failures=limit)
    assert render_html(streamed) == render_html(make())


@pytest.mark.parametrize("make", [fixed, sections], ids=["fixed", "sections"])
@pytest.mark.parametrize("stream", [False, True], ids=["list", "streamed"])
def test_junit_written_a_testcase_at_a_time_is_the_tree(make: Any, stream: bool, tmp_path: Path) -> None:
    root = build_junit(make(), "zh")
    ET.indent(root)
    tree = "<?xml version='1.0' encoding='utf-8'?>\n" + ET.tostring(root, encoding="unicode")
    run = _streamed(make(), tmp_path) if stream else make()
    write_junit(run, tmp_path / "junit.xml", "zh")
    assert (tmp_path / "junit.xml").read_text(encoding="utf-8") == tree


def test_the_failures_listed_are_the_first_by_rank_and_position(tmp_path: Path) -> None:
    run = fixed()
    everything = [(i, v["test_id"]) for i, v, _ in failing_at(run)]
    assert len(everything) >= 3
    ranks = [(not run["verdicts"][i]["critical_failed"], run["verdicts"][i]["category"] == "error", i)
             for i, _ in everything]
    assert ranks == sorted(ranks)  # critical first, errors last, run order within each
    streamed = _streamed(fixed(), tmp_path)
    for limit in (1, 2, len(everything) + 5):
        top = [(i, v["test_id"], [r["repeat"] for r in recs]) for i, v, recs in failing_at(streamed, limit)]
        assert top == [(i, v["test_id"], [r["repeat"] for r in recs]) for i, v, recs in failing_at(run)][:limit]


def test_a_cursor_finds_each_verdicts_records_in_run_order_and_out_of_it(tmp_path: Path) -> None:
    run = fixed()
    index: dict[Any, list[int]] = {}
    for i, r in enumerate(run["results"]):
        index.setdefault(record_key(r), []).append(i)
    expected = [index.get((v["suite"], v["test_id"], v["provider"]), []) for v in run["verdicts"]]
    assert all(expected)  # every verdict has its records
    cursor = RecordCursor(_streamed(fixed(), tmp_path)["results"])
    assert [cursor.positions(v) for v in run["verdicts"]] == expected
    backwards = RecordCursor(_streamed(fixed(), tmp_path / "again")["results"])  # asked out of order: still found
    assert [backwards.positions(v) for v in reversed(run["verdicts"])] == expected[::-1]
    assert not backwards.ahead or len(backwards.ahead) < len(run["results"])


def test_a_verdict_that_lists_its_records_is_read_there(tmp_path: Path) -> None:
    run = fixed()
    v = {**run["verdicts"][0], "records": [2, 0]}  # positions in `results`, as a verdict may list them
    assert [r["test_id"] for r in verdict_finder(run)(v)] == [run["results"][2]["test_id"], run["results"][0]["test_id"]]
    streamed = _streamed(fixed(), tmp_path)
    assert RecordCursor(streamed["results"]).positions(v) == [2, 0]


def test_a_broken_verdict_line_is_named_never_streamed_past(tmp_path: Path) -> None:
    write_json(tmp_path / "run.json", fixed())
    text = (tmp_path / "run.json").read_text(encoding="utf-8")
    broken = text.replace('"n":1,', '"n":"one",', 1) if '"n":1,' in text else text.replace('"n": 1,', '"n": "one",', 1)
    assert broken != text
    (tmp_path / "bad.json").write_text(broken, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"verdicts\[0\]"):
        read_run(tmp_path / "bad.json", stream=True)
    with pytest.raises(ConfigError, match=r"verdicts\[0\]"):
        read_run(tmp_path / "bad.json", stream=True, check=True)
