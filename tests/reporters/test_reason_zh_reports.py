"""Chinese reports show each check's reason in Chinese (run.json's `reason_zh`), English ones its
`reason` (SPEC §32): a PM read "2 replies matched (at most 1)" in every Chinese report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import invoke

BOT = "def respond(messages, context):\n    return '收到：' + messages[-1]['content']\n"
SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: repeat
    name: 不要重复套话
    conversation:
      - user: 你好
      - user: 我想看看车
    assert:
      - at-most: {pattern: 收到, count: 1}
"""
ZH, EN = "2 条回复匹配（最多 1）", "2 replies matched (at most 1)"


@pytest.fixture
def run_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("EVALSPEC_LANG")  # tests/conftest.py sets it: here the suite's turns decide
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    out = tmp_path / "run.json"
    code, shown = invoke("run", str(tmp_path / "s.yaml"), "-o", str(out), "--no-cache")
    assert code == 1, shown
    assert ZH in shown and EN not in shown  # the console
    return out


def test_run_json_keeps_the_english_reason_and_adds_the_chinese_one(run_json: Path) -> None:
    [a] = json.loads(run_json.read_text(encoding="utf-8"))["results"][0]["assertions"]
    assert a["reason"].startswith(EN) and a["reason_zh"].startswith(ZH)


def test_chinese_reports_show_the_chinese_reason_and_english_ones_the_english(run_json: Path) -> None:
    folder = run_json.parent
    paths = {kind: str(folder / name) for kind, name in [("--html", "r.html"), ("--md", "r.md"), ("--junit", "r.xml")]}
    assert invoke("report", str(run_json), *[x for kv in paths.items() for x in kv])[0] == 0
    for path in paths.values():
        text = Path(path).read_text(encoding="utf-8")
        assert ZH in text and EN not in text, path
    assert invoke("report", str(run_json), "--html", paths["--html"], "--lang", "en")[0] == 0
    text = Path(paths["--html"]).read_text(encoding="utf-8")
    assert EN in text and ZH not in text


def test_a_run_made_before_reason_zh_still_reads_in_chinese_with_its_english_reason(run_json: Path) -> None:
    data = json.loads(run_json.read_text(encoding="utf-8"))
    for record in data["results"]:
        for a in record["assertions"]:
            a.pop("reason_zh")
    old = run_json.with_name("old.json")
    old.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert invoke("report", str(old), "--html", os.fspath(run_json.with_name("old.html")))[0] == 0
    assert EN in run_json.with_name("old.html").read_text(encoding="utf-8")
