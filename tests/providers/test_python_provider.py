"""`python:` providers: sync and async functions, dict results with usage and cost, bad results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.runner import RunOptions

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
    assert replies[0]["tool_calls"][0]["function"]["name"] == "lookup"
    assert record["tokens"] == 20 and record["cost"] == 0.004
    assert record["status"] == "passed", record["assertions"]


def test_a_result_that_is_not_text_is_an_error(tmp_path: Path) -> None:
    record = go(tmp_path, "wrong")["results"][0]
    assert record["status"] == "error" and "returned int" in record["error"]
