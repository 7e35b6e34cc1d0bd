"""What the tool-call tests share: a model provider with two tools (one answered from a template, one by
python), its suite against a loopback OpenAI-compatible server, through the lean client and litellm."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM
from tests.servers import OpenAIServer

CLIENTS = ["lean", pytest.param("litellm", marks=LITELLM)]


TOOLS = """\
    tools:
      - type: function
        function:
          name: lookup_stock
          description: 查询车型库存
          parameters:
            type: object
            properties: {model: {type: string}, city: {type: string}}
            required: [model]
            additionalProperties: false
      - type: function
        function:
          name: book_test_drive
          parameters:
            type: object
            properties: {model: {type: string}, time: {type: string}}
            required: [model, time]
"""


RESULTS = """\
    tool_results:
      lookup_stock: "{{ args.model }}有现车{{ stock }}台"
      book_test_drive: {python: "tools.py:book"}
"""


TOOL_FUNCTIONS = """\
SEEN = []

def book(args, context):
    SEEN.append((args, context["test_id"], context["turn"], context["tool"]))
    return {"booked": True, "model": args["model"], "time": args["time"]}
"""


def agent_suite(tmp_path: Path, server: OpenAIServer, client: str, turns: list[str], extra: str = "",
                asserts: str = "", results: str = RESULTS) -> Path:
    (tmp_path / "tools.py").write_text(TOOL_FUNCTIONS, encoding="utf-8")
    conversation = "\n".join(f"      - user: {t}" for t in turns)
    path = tmp_path / "agent.yaml"
    path.write_text(f"""\
vars: {{stock: 3}}
providers:
  - id: agent
    model: openai/test-model
    client: {client}
    api_base: {server.base}
    api_key: sk-test-123
{TOOLS}{results}{extra}
tests:
  - id: t
    conversation:
{conversation}
{asserts}""", encoding="utf-8")
    return path


def go(path: Path, tmp_path: Path, cache: bool = False) -> dict[str, Any]:
    options = RunOptions(run_dir=tmp_path / "run", use_cache=cache, cache_dir=tmp_path / "cache")
    record: dict[str, Any] = run([path], options=options).data["results"][0]
    return record


def roles(record: dict[str, Any]) -> list[tuple[str, int]]:
    return [(m["role"], m["turn"]) for m in record["transcript"]]
