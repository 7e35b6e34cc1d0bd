"""`teardown:` runs after each conversation with its context; a failing one is reported, never a verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.reporters.junit import failure_text

BOT = '''
import json, pathlib

def respond(messages, context):
    return "好的" if len(messages) < 3 else "再见"

def undo(context):
    log = pathlib.Path(__file__).with_name("undone.jsonl")
    with log.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"thread_id": context["thread_id"], "test_id": context["test_id"],
                            "turns": [m["content"] for m in context["transcript"] if m["role"] == "assistant"]},
                           ensure_ascii=False) + "\\n")

def broken(context):
    raise RuntimeError("the booking API is down")
'''


def go(tmp_path: Path, teardown: str, expect: str = "好的") -> dict[str, Any]:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(f"""\
providers:
  - id: bot
    python: bot.py:respond
    teardown: bot.py:{teardown}
tests:
  - id: a
    conversation: [{{user: 你好}}, {{user: 再见}}]
    assert: [{{contains: {expect}}}]
  - id: b
    conversation: [{{user: 你好}}]
""", encoding="utf-8")
    return run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def test_teardown_gets_the_thread_test_and_transcript_of_each_conversation(tmp_path: Path) -> None:
    data = go(tmp_path, "undo")
    lines = [json.loads(x) for x in (tmp_path / "undone.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted((x["test_id"], tuple(x["turns"])) for x in lines) == [("a", ("好的", "再见")), ("b", ("好的",))]
    assert len({x["thread_id"] for x in lines}) == 2 and all(len(x["thread_id"]) == 32 for x in lines)
    assert [r["teardown"]["ok"] for r in data["results"]] == [True, True]


def test_a_failing_teardown_is_reported_beside_the_verdict_and_never_changes_it(tmp_path: Path) -> None:
    data = go(tmp_path, "broken", expect="没有这句")
    failed, passed = data["results"]
    assert passed["status"] == "passed" and failed["status"] == "failed"
    assert passed["teardown"] == {"ok": False, "function": "bot.py:broken",
                                  "error": "bot.py:broken raised RuntimeError: the booking API is down"}
    assert data["gate"]["exit_code"] == 1  # the failing assertion, not the teardown
    assert "teardown failed: bot.py:broken raised RuntimeError" in failure_text(failed)


def test_a_failing_teardown_of_a_passing_test_shows_in_the_console_and_markdown(tmp_path: Path) -> None:
    from rich.console import Console

    from evalspec.reporters.console import print_summary
    from evalspec.reporters.markdown import render_markdown

    data = go(tmp_path, "broken", expect="再见")
    assert [r["status"] for r in data["results"]] == ["passed", "passed"]
    markdown = render_markdown(data, env={})
    assert "### Teardowns that failed" in markdown and markdown.count("the booking API is down") == 2
    console = Console(record=True, width=200, color_system=None)
    print_summary(console, data, {})
    assert console.export_text().count("teardown failed: bot.py:broken raised RuntimeError") == 2
