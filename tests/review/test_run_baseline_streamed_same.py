"""`run --baseline` of a large run (rows on disk, the baseline read one record at a time,
docs/en/scale-and-ray.md#memory) writes what the same run writes when small: the same diff in run.json,
the same Markdown and HTML reports, the same exit code — with repeats, a matrix, ids that are prefixes of
each other and Chinese ids."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalspec.play import runner
from tests.helpers import invoke

BOT = '''\
from pathlib import Path


def respond(messages, context):
    head = (Path(__file__).parent / "mode.txt").read_text().strip() == "head"
    flips = {"问": head, "问2": not head, "ask[lang=zh]": head}
    return "坏" if flips.get(context["test_id"].split("#")[0], False) else "好"
'''
SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: 问
    repeat: 2
    conversation: [{user: 你好, assert: [{equals: 好}]}]
  - id: 问2
    conversation: [{user: 你好, assert: [{equals: 好}]}]
  - id: ask
    matrix: {lang: [zh, en]}
    conversation: [{user: hi, assert: [{equals: 好}]}]
  - id: 稳定
    conversation: [{user: 你好, assert: [{equals: 好}]}]
"""
# latencies, run ids, the report's local time (two runs a second apart), JUnit times
TIMED = re.compile(r"\d+(\.\d+)? ?(ms|s)\b|\(\s*[+-]\d+\)|\d{8}-\d{6}-[0-9a-f]{6}|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|"
                   r"time=\"[\d.]+\"")


def head_run(project: Path, monkeypatch: pytest.MonkeyPatch, above: int, name: str) -> tuple[int, dict[str, Any], str]:
    monkeypatch.setattr(runner, "STREAM_ABOVE", above)
    (project / "mode.txt").write_text("head")
    code, out = invoke("run", "s.yaml", "--no-cache", "-o", f"{name}.json", "--baseline", "base.json",
                       "--confirm", "1", "--md", f"{name}.md", "--html", f"{name}.html")
    assert code in (0, 1), out
    diff = json.loads((project / f"{name}.json").read_text(encoding="utf-8"))["baseline"]
    for volatile in ("head", "providers"):  # its run id and time, latencies
        diff.pop(volatile)
    reports = "".join(TIMED.sub("#", (project / f"{name}.{ext}").read_text(encoding="utf-8")) for ext in ("md", "html"))
    return code, diff, reports


def test_a_large_run_against_a_baseline_writes_what_a_small_one_writes(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    (in_tmp / "s.yaml").write_text(SUITE, encoding="utf-8")
    (in_tmp / "mode.txt").write_text("base")
    assert invoke("run", "s.yaml", "--no-cache", "-o", "base.json")[0] == 1
    small = head_run(in_tmp, monkeypatch, 5000, "small")
    large = head_run(in_tmp, monkeypatch, 2, "large")
    assert '"rows": [\n' in (in_tmp / "large.json").read_text(encoding="utf-8")  # its rows were on disk
    assert {r["test_id"]: r["category"] for r in large[1]["rows"]} == {
        "问": "regressed", "问2": "fixed", "ask[lang=zh]": "regressed", "ask[lang=en]": "unchanged", "稳定": "unchanged"}
    assert large == small
