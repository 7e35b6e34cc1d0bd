"""One reader of run.json (`results.runjson.read_run`, docs/en/troubleshooting.md#a-runjson-that-cannot-be-read):
`report`, `diff`, `grade` and the view's run store meet the same broken or foreign file with the same clear
error (exit 2, the file and the place named, never a traceback), and an older run.json is brought to
today's shape (`migrate`) before any of them reads it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalspec.app.view.runs import RunStore, UnreadableRun
from evalspec.results.runjson import read_run
from evalspec.results.stream import JournalRecords
from tests import ROOT
from tests.helpers import invoke

GOOD = ROOT / "tests" / "reporters" / "fixtures" / "run.json"


def _good() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GOOD.read_text(encoding="utf-8"))
    return data


def _changed(change: str) -> bytes:
    data = _good()
    if change == "a status no run writes":
        data["results"][0]["status"] = "passd"
    elif change == "a gate without its exit code":
        del data["gate"]["exit_code"]
    elif change == "a summary that is a list":
        data["summary"] = []
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


# (the file's bytes, the words every command says about it)
BAD: dict[str, tuple[bytes, str]] = {
    "cut short": (GOOD.read_bytes()[:500], "cut short"),
    "not UTF-8": (b'{"results": [], "note": "caf\xe9"}', "not UTF-8"),
    "another tool's JSON": (b'{"name": "\xe6\x88\x91\xe7\x9a\x84\xe5\x8c\x85", "version": "1.0.0"}', "no 'results' list"),
    "a status no run writes": (_changed("a status no run writes"), "results[0].status"),
    "a gate without its exit code": (_changed("a gate without its exit code"), "exit_code"),
    "a summary that is a list": (_changed("a summary that is a list"), "summary"),
}


def _error_line(out: str, bad: Path) -> str:
    """The error line naming `bad` (the console may wrap it: joined again)."""
    text = " ".join(out.split())
    start = text.index(f"error {bad}")
    return text[start:text.index("problem found", start)]


@pytest.mark.parametrize("case", list(BAD))
def test_every_reader_refuses_the_same_bad_file_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           case: str) -> None:
    monkeypatch.chdir(tmp_path)
    raw, words = BAD[case]
    bad = tmp_path / "坏的 run.json"
    bad.write_bytes(raw)
    good = tmp_path / "good.json"
    good.write_bytes(GOOD.read_bytes())
    said: dict[str, str] = {}
    for name, args in {"report": ["report", str(bad)], "grade": ["grade", str(bad), "-o", str(tmp_path / "out.json")],
                       "diff (head)": ["diff", str(good), str(bad)], "diff (base)": ["diff", str(bad), str(good)],
                       "report (trend)": ["report", str(good), str(bad), "--html", str(tmp_path / "t.html")]}.items():
        code, out = invoke(*args)
        assert code == 2, (name, out)  # docs/en/reports-and-gate.md#exit-codes-and-the-gate: the input is wrong
        assert "Traceback" not in out and words in out, (name, out)
        said[name] = _error_line(out, bad)
    with pytest.raises(UnreadableRun) as caught:  # `evalspec view`: the run's page names what is wrong
        store = RunStore(tmp_path / "project", [bad])
        store.load(next(iter(store.paths())))
    assert words in str(caught.value)
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "t.html").exists()
    # report, grade and a trend read it alike, word for word; diff checks the whole schema (a baseline) and
    # names the same place
    assert said["report"] == said["grade"] == said["report (trend)"], said
    assert said["diff (head)"] == said["diff (base)"], said


def _older() -> tuple[dict[str, Any], dict[str, Any]]:
    """The fixture run, and the same run as an evalspec before the shared report vocabulary and `base_id`
    wrote it. (The fixture is itself from before some summary keys: today's is the fixture worked out again.)"""
    from evalspec.results.aggregate import finalize

    fixture = _good()
    today = finalize(fixture, fixture["gate"].get("fail_under"), bool(fixture["gate"].get("include_drafts")))
    old = copy.deepcopy(today)
    del old["slas"], old["summary"]["measured"]
    for verdict in old["verdicts"]:
        del verdict["category"]
    for record in old["results"]:
        del record["base_id"]
    return today, old


def _write_lines(path: Path, data: dict[str, Any]) -> None:
    """run.json as `write_json` lays it out (one record per line), so a streamed read could take it."""
    from evalspec.results.runjson import write_json

    write_json(path, data)


def test_an_older_run_json_is_read_in_todays_shape(tmp_path: Path) -> None:
    today, old = _older()
    path = tmp_path / "old-run.json"
    _write_lines(path, old)
    for stream in (False, True):
        run = read_run(path, stream=stream)
        assert not isinstance(run["results"], JournalRecords)  # an older file is read whole, then migrated
        assert [r.get("base_id") for r in run["results"]] == [r["test_id"] for r in run["results"]]
        assert run.get("slas") == today["slas"]
        assert run["summary"]["measured"] == today["summary"]["measured"]
        assert [v.get("category") for v in run["verdicts"]] == [v["category"] for v in today["verdicts"]]
        assert run["gate"]["exit_code"] == today["gate"]["exit_code"]
    assert read_run(path, check=True)["summary"]["measured"] == today["summary"]["measured"]  # a baseline too


def test_report_and_diff_read_an_older_run_as_they_read_todays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    today, old = _older()
    _write_lines(tmp_path / "old.json", old)
    _write_lines(tmp_path / "today.json", today)
    code_old, out_old = invoke("report", "old.json", "--md", "old.md")
    code_today, out_today = invoke("report", "today.json", "--md", "today.md")
    assert code_old == code_today, out_old
    assert (tmp_path / "old.md").read_text(encoding="utf-8") == (tmp_path / "today.md").read_text(encoding="utf-8")
    rows = {}
    for base in ("old.json", "today.json"):
        code, out = invoke("diff", base, "today.json", "-o", "diff.json")
        assert code == 0, out
        diff = json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))
        rows[base] = [(r["test_id"], r["category"], r["blocking"]) for r in diff["rows"]]
    assert rows["old.json"] == rows["today.json"]
