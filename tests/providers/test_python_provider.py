"""`python:` providers: sync and async functions, dict results with usage and cost, bad results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions

BOTS = '''
import asyncio

async def priced(messages, context):
    await asyncio.sleep(0)
    return {"content": f"turn {context['turn']} of {context['test_id']} ({context['vars']['brand']})",
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}, "cost": 0.002,
            "tool_calls": [{"type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}

def wrong(messages, context):
    return 42
'''


def go(tmp_path: Path, fn: str, asserts: str = "") -> dict[str, Any]:
    (tmp_path / "bots.py").write_text(BOTS)
    (tmp_path / "s.yaml").write_text(f"""\
vars: {{brand: 星途}}
providers:
  - id: p
    python: bots.py:{fn}
tests:
  - id: t
    conversation: [{{user: 一}}, {{user: 二}}]
    assert:
      - {{cost: 0.004, scope: conversation}}
      - {{tokens: 20, scope: conversation}}
      - {{not-cost: 0.003, scope: conversation}}
{asserts}""", encoding="utf-8")
    return run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def test_async_function_with_usage_cost_and_tool_calls(tmp_path: Path) -> None:
    record = go(tmp_path, "priced")["results"][0]
    replies = [m for m in record["transcript"] if m["role"] == "assistant"]
    assert replies[1]["content"] == "turn 2 of t (星途)"
    assert replies[0]["tokens"] == 10 and replies[0]["cost"] == 0.002
    assert replies[0]["tool_calls"] == [{"id": "call_1_1", "name": "lookup", "arguments": {}}]
    assert record["tokens"] == 20 and record["cost"] == 0.004
    assert record["status"] == "passed", record["assertions"]


def test_a_result_that_is_not_text_is_an_error(tmp_path: Path) -> None:
    record = go(tmp_path, "wrong")["results"][0]
    assert record["status"] == "error" and "returned int" in record["error"]


def test_siblings_import_without_pythonpath_and_editing_one_is_a_cache_miss(tmp_path: Path) -> None:
    bot_dir = tmp_path / "bots"
    (bot_dir / "lib").mkdir(parents=True)
    (bot_dir / "bot.py").write_text("from lib.answers import answer\n\ndef respond(messages, context):\n"
                                    "    return answer()\n")
    (bot_dir / "lib" / "answers.py").write_text("def answer():\n    return '旧的回答'\n")
    (tmp_path / "s.yaml").write_text("providers: [{id: p, python: bots/bot.py:respond}]\n"
                                     "tests:\n  - id: t\n    conversation: [{user: 你好}]\n", encoding="utf-8")
    script = ("import sys, json; from pathlib import Path; from evalspec import run; "
              "from evalspec.play.runner import RunOptions; "
              "r = run([Path('s.yaml')], options=RunOptions(run_dir=Path(sys.argv[1]))); "
              "print(json.dumps(r.results[0]['transcript'][1]['content']))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    first = subprocess.run([sys.executable, "-c", script, "r1"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=60)
    assert json.loads(first.stdout.strip().splitlines()[-1]) == "旧的回答", first.stderr
    # an edit of another size: Python takes a cached .pyc of the same size and second for the source as current
    (bot_dir / "lib" / "answers.py").write_text("def answer():\n    return '改过的新回答'\n")
    second = subprocess.run([sys.executable, "-c", script, "r2"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=60)
    assert json.loads(second.stdout.strip().splitlines()[-1]) == "改过的新回答", second.stderr


def test_two_providers_each_import_their_own_sibling_of_the_same_name(tmp_path: Path) -> None:
    for folder, answer in (("shop", "商店的回答"), ("bank", "bank answer")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "agent.py").write_text(f"ANSWER = {answer!r}\n", encoding="utf-8")
        (tmp_path / folder / "bot.py").write_text("from agent import ANSWER\n\ndef respond(messages, context):\n"
                                                  "    return ANSWER\n")
    (tmp_path / "s.yaml").write_text("providers: [{id: shop, python: shop/bot.py:respond},\n"
                                     "            {id: bank, python: bank/bot.py:respond}]\n"
                                     "tests:\n  - id: t\n    conversation: [{user: 你好}]\n", encoding="utf-8")
    results = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "r", use_cache=False)).results
    replies = {record["provider"]: record["transcript"][1]["content"] for record in results}
    assert replies == {"shop": "商店的回答", "bank": "bank answer"}


def test_replies_longer_than_max_reply_chars_are_stored_cut_but_graded_whole(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return 'x' * 5000 + '结尾'\n")
    (tmp_path / "s.yaml").write_text("""\
providers: [{id: p, python: bot.py:respond}]
options: {max_reply_chars: 100, cache: false}
tests:
  - id: t
    conversation:
      - user: 你好
        assert: [{contains: 结尾}]
""", encoding="utf-8")
    record = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "r", use_cache=False)).results[0]
    reply = record["transcript"][1]
    assert record["status"] == "passed"
    assert reply["content"].startswith("x" * 100) and "5,002 characters" in reply["content"]
    assert len(reply["content"]) < 200 and reply["original_chars"] == 5002
