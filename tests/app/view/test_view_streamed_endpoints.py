"""Every page and review endpoint of `evalspec view` answers the same for a run.json read one record at a
time (over `LARGE_RUN_BYTES`, docs/en/scale-and-ray.md#memory) as for the same run read whole, and a run.json
replaced on disk while it is served is read afresh."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from evalspec.app.view import runs
from evalspec.app.view.server import make_app
from evalspec.results.runjson import read_run, write_json
from evalspec.review.triage import triage
from tests.app.view.project import REVIEWER, Project

TOKEN = "t0ken"
WHEN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\+00:00|Z)?")


def answers(root: Path, run_ids: list[str]) -> list[tuple[int, str]]:
    """(status, text) of every page and endpoint of the view served from `root`; the project's folder and
    the time of day taken out."""
    base, head = run_ids
    asks: list[tuple[str, str, object]] = [
        ("GET", "/", None), ("GET", f"/run/{head}", None), ("GET", f"/run/{base}", None),
        ("GET", f"/diff?base={base}&head={head}", None), ("GET", "/api/runs", None),
        ("POST", "/api/label", {"run": head, "test": "polite", "provider": "bot", "assertion": 0, "verdict": "wrong",
                                "note": "其实不礼貌"}),
        ("POST", "/api/approve", {"suite": "suites/sales.yaml", "test": "hours", "run": head}),  # 409: it failed
        ("POST", "/api/approve", {"suite": "suites/sales.yaml", "test": "hours"}),  # the newest run holding it
        ("POST", "/api/approve", {"suite": "suites/sales.yaml", "test": "refund", "run": base}),
        ("POST", "/api/make-test", {"run": base, "test": "greeting", "provider": "bot", "suite": "suites/new.yaml"}),
        ("POST", "/api/triage", {"run": base, "test": "price", "provider": "bot", "attribution": "bot_defect",
                                 "note": "大运行"}),
        ("GET", f"/run/{base}", None),  # with its triage
    ]

    async def ask() -> list[tuple[int, str]]:
        app = make_app(root, [], REVIEWER, TOKEN, "127.0.0.1", "zh")
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            out = []
            for method, path, body in asks:
                response = await client.request(method, path, json=body, headers={"X-Evalspec-Token": TOKEN})
                out.append((response.status, WHEN.sub("WHEN", (await response.text()).replace(str(root), "ROOT"))))
            return out

    return asyncio.run(ask())


def copied(project: Project, to: Path) -> Path:
    shutil.copytree(project.root, to, ignore=shutil.ignore_patterns("*.lock"))
    return to


def test_every_page_and_endpoint_answers_the_same_for_a_run_read_streamed(
        project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = answers(copied(project, tmp_path / "whole"), project.runs)
    monkeypatch.setattr(runs, "LARGE_RUN_BYTES", 0)  # every run.json read as a large one is
    streamed = answers(copied(project, tmp_path / "streamed"), project.runs)
    assert [s for s, _ in whole] == [200, 200, 200, 200, 200, 200, 409, 409, 200, 200, 200, 200]
    for asked, (one, other) in enumerate(zip(whole, streamed, strict=True)):
        assert one == other, asked


def served_streamed(project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, runs.RunStore]:
    """A copy of the project served with every run.json read as a large one is: its first run's run.json,
    and the store serving it."""
    monkeypatch.setattr(runs, "LARGE_RUN_BYTES", 0)
    root = copied(project, tmp_path / "p")
    return root / ".evalspec" / "runs" / project.runs[0] / "run.json", runs.RunStore(root)


def test_a_run_json_replaced_while_it_is_served_is_read_as_it_was_then_afresh(
        project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, store = served_streamed(project, tmp_path, monkeypatch)
    served = store.load(project.runs[0])[0]["results"]
    before = read_run(path)["results"]
    changed = read_run(path)
    triage(changed, "greeting", "bot", "bot_defect", "一条很长的备注，" * 20, path=tmp_path / "triage.jsonl", who=REVIEWER)
    write_json(path, changed)  # `evalspec triage` meanwhile: the records after it move
    assert list(served) == before  # a page being made reads the file it began with, not the one now there
    assert store.load(project.runs[0])[0]["results"][0]["triage"]["who"] == REVIEWER

    renamed = read_run(path)  # the same size, the same modification time: another file all the same
    stat = path.stat()
    price = next(r for r in renamed["results"] if r["test_id"] == "price")
    price["name"] = price["name"].replace("手机", "电话")
    write_json(path, renamed)
    assert path.stat().st_size == stat.st_size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = store.load(project.runs[0])[0]["results"]
    assert next(r for r in again if r["test_id"] == "price")["name"] == price["name"]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files in /proc")
def test_a_large_run_rewritten_again_and_again_leaves_no_file_open(
        project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, store = served_streamed(project, tmp_path, monkeypatch)
    store.load(project.runs[0])
    opened = len(list(Path("/proc/self/fd").iterdir()))
    for note in ("一", "二", "三", "四"):
        changed = read_run(path)
        triage(changed, "greeting", "bot", "bot_defect", note * 3, path=tmp_path / "triage.jsonl", who=REVIEWER)
        write_json(path, changed)
        assert store.load(project.runs[0])[0]["results"][0]["triage"]["note"] == note * 3
    assert len(list(Path("/proc/self/fd").iterdir())) == opened
