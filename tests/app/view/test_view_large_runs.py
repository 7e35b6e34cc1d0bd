"""A large run.json in `evalspec view` is read one record at a time (docs/en/scale-and-ray.md#memory):
its pages are the ones it gets read whole, and a triage still writes into its records."""

from __future__ import annotations

import json

import pytest

from evalspec.app.view import runs
from evalspec.app.view.actions import Reviewer, record_triage
from evalspec.app.view.pages import diff_page, run_page
from evalspec.app.view.runs import RunStore
from evalspec.results.compare import compare_runs
from evalspec.results.stream import JournalRecords
from tests.app.view.project import REVIEWER, Project


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs, "LARGE_RUN_BYTES", 0)  # every run.json read as a large one is


def pages_of(store: RunStore, project: Project) -> tuple[str, str, list[object]]:
    (base, _), (head, head_path) = store.load(project.runs[0]), store.load(project.runs[1])
    page = run_page(project.runs[1], head, "token", REVIEWER, project.runs[0], "zh", project.root, head_path)
    diff = diff_page(project.runs[0], project.runs[1], compare_runs(base, head), "zh")
    return page, diff, list(store.summaries())


def test_a_large_run_is_read_streamed_and_shown_as_when_read_whole(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = pages_of(RunStore(project.root), project)
    assert isinstance(RunStore(project.root).load(project.runs[1])[0]["results"], list)
    monkeypatch.setattr(runs, "LARGE_RUN_BYTES", 0)
    store = RunStore(project.root)
    assert isinstance(store.load(project.runs[1])[0]["results"], JournalRecords)
    assert pages_of(store, project) == whole


def test_a_triage_on_a_large_run_is_written_into_its_records(project: Project, streamed: None) -> None:
    store = RunStore(project.root)
    store.load(project.runs[0])  # served, and cached, streamed
    answer = record_triage(Reviewer(project.root, REVIEWER, store), {
        "run": project.runs[0], "test": "price", "provider": "bot", "attribution": "bot_defect", "note": "大运行"})
    assert answer["records"][0]["triage"]["note"] == "大运行"
    record = next(r for r in project.run_json(project.runs[0])["results"] if r["test_id"] == "price")
    assert record["attribution"] == "bot_defect" and record["triage"]["who"] == REVIEWER
    assert json.loads(project.lines("triage.jsonl")[-1])["note"] == "大运行"
    reread = store.load(project.runs[0])[0]  # the file changed: read again, with its attribution
    assert next(r for r in reread["results"] if r["test_id"] == "price")["attribution"] == "bot_defect"
