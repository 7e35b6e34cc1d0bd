"""Simulated users written in Python: fn(transcript, context) -> the next message, or None to stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalspec import run
from evalspec.app.cli.main import main
from evalspec.play.runner import RunOptions
from tests import ROOT

BOT = ROOT / "providers" / "demo_bot.py"
USER = '''\
SCRIPT = ["我叫张三，在北京做测试工程师。", "瑶光的续航是多少？", "你还记得我叫什么吗？"]
seen = []


def next_turn(transcript, context):
    seen.append((len(transcript), context["turn"], context["goal"]))
    replies = [m["content"] for m in transcript if m["role"] == "assistant"]
    if replies and "张三" in replies[-1]:
        return None  # the bot remembered: done
    return SCRIPT[min(context["turn"] - 1, len(SCRIPT) - 1)]


async def forever(transcript, context):
    return f"再说一遍？（第{context['turn']}次）"  # never the same message twice: that is a simulator fault


def broken(transcript, context):
    raise SystemExit(3)


def wrong(transcript, context):
    return 42
'''


def go(tmp_path: Path, simulate: str) -> dict[str, Any]:
    (tmp_path / "user.py").write_text(USER, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(f"""\
providers:
  - id: bot
    python: {BOT}:respond
tests:
  - id: scripted
    simulate:
{simulate}
    assert:
      - memory-recall: {{name: 张三}}
""", encoding="utf-8")
    data = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return dict(data["results"][0])


def test_a_python_user_talks_until_it_returns_none(tmp_path: Path) -> None:
    record = go(tmp_path, "      python: user.py:next_turn\n      max_turns: 6")
    users = [m["content"] for m in record["transcript"] if m["role"] == "user"]
    assert users == ["我叫张三，在北京做测试工程师。", "瑶光的续航是多少？", "你还记得我叫什么吗？"]
    assert record["stop_reason"] == "user_says" and record["status"] == "passed", record["error"]


def test_max_turns_caps_a_python_user_and_persona_and_goal_are_optional(tmp_path: Path) -> None:
    record = go(tmp_path, "      python: user.py:forever\n      max_turns: 3\n      goal: 问到底")
    assert record["stop_reason"] == "max_turns"
    assert sum(1 for m in record["transcript"] if m["role"] == "user") == 3


def test_a_python_user_that_raises_or_returns_garbage_is_that_tests_error(tmp_path: Path) -> None:
    record = go(tmp_path, "      python: user.py:broken\n      max_turns: 3")
    assert record["status"] == "error" and "SystemExit" in record["error"]
    record = go(tmp_path, "      python: user.py:wrong\n      max_turns: 3")
    assert record["status"] == "error" and "returned 42" in record["error"]


def test_a_missing_python_user_or_a_model_user_without_persona_stops_before_any_call(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(f"""\
providers:
  - id: bot
    python: {BOT}:respond
tests:
  - id: missing
    simulate: {{python: nowhere.py:next_turn, max_turns: 2}}
  - id: no-persona
    simulate: {{goal: 买车, max_turns: 2}}
""", encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "s.yaml")])
    assert result.exit_code == 2
    assert "needs 'persona'" in result.output and "s.yaml:8" in result.output
    (tmp_path / "s.yaml").write_text((tmp_path / "s.yaml").read_text().split("  - id: no-persona")[0])
    result = CliRunner().invoke(main, ["run", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "run.json")])
    assert result.exit_code == 2 and "nowhere.py" in result.output and "s.yaml:6" in result.output
    assert not (tmp_path / "run.json").exists()
