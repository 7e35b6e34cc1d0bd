"""A large run's HTML (SPEC §15): every failing conversation in full, passing ones beyond 1,000 summarised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.reporters import html as html_report
from evalspec.reporters.html import render_html
from tests.helpers import invoke

NOTE = "transcript not embedded in a large report"


def test_passing_conversations_beyond_1000_are_summarised_unless_html_all(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # beyond FULL_PASSING (1,000) passing conversations: the same code with 5, and 8 passing ones
    monkeypatch.setattr(html_report, "FULL_PASSING", 5)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '好的 ' + messages[-1]['content']\n")
    values = ", ".join(str(i) for i in range(8))
    (tmp_path / "s.yaml").write_text("""\
providers: [{id: b, python: bot.py:respond}]
options: {cache: false}
tests:
  - id: many
    matrix: {i: [VALUES]}
    conversation: [{user: "第 {{ i }} 个问题"}]
    assert: [{contains: 好的}]
  - id: broken
    conversation: [{user: 最后一个失败的问题}]
    assert: [{contains: 不会出现}]
""".replace("VALUES", values), encoding="utf-8")
    data = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run")).data
    assert len(data["verdicts"]) == 9
    html = render_html(data)
    assert html.count(NOTE) == 3  # 8 passing: the first 5 in full
    assert "最后一个失败的问题" in html and "第 7 个问题" not in html.split("<h2>Conversations</h2>")[1]
    assert "many[i=7]" in html  # still listed, with its score
    assert NOTE not in render_html(data, html_all=True)
    (tmp_path / "run.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    code, out = invoke("report", "run.json", "--html", "all.html", "--html-all")
    assert code == 0, out
    assert NOTE not in (tmp_path / "all.html").read_text(encoding="utf-8")
    code, out = invoke("report", "run.json", "--html", "some.html")
    assert code == 0, out
    assert (tmp_path / "some.html").read_text(encoding="utf-8").count(NOTE) == 3
