"""Faulty replies from loopback servers and python providers: missing replies are errors, a long
Retry-After fails at once, and the summary counts every request (SPEC §8)."""

from __future__ import annotations

import email.utils
import re
import time
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM
from tests.servers import LoopbackServer, OpenAIServer, Reply, chat_body

RED_LINES = """\
tests:
  - id: t
    conversation:
      - user: 你们的底价是多少？
        assert: [{not-contains: 底价}, {not-regex: "\\\\d{6}"}, {word-count: {max: 500}}]
"""


def go(tmp_path: Path, provider: str, options: str = "") -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(f"providers:\n  - id: p\n{provider}\noptions: {{cache: false{options}}}\n" + RED_LINES,
                    encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def null_content(request: dict[str, Any], n: int) -> Reply:
    body = chat_body("x")
    body["choices"][0]["message"]["content"] = None
    return Reply(body=body)


@pytest.mark.parametrize("client", ["lean", pytest.param("litellm", marks=LITELLM)])
def test_chat_completion_with_null_content_and_no_tool_calls_is_an_error_not_a_pass(
        tmp_path: Path, client: str) -> None:
    with OpenAIServer(null_content) as server:
        data = go(tmp_path, f"    model: openai/m\n    client: {client}\n    api_base: {server.base}\n"
                            "    api_key: sk-local-000")
    record = data["results"][0]
    assert record["status"] == "error", record
    assert "no reply" in record["error"] or "content" in record["error"]
    assert data["gate"]["exit_code"] != 0


@pytest.mark.parametrize("returned", ['{"text": "hi"}', "None", '{"content": None}', '{"usage": {}}'])
def test_python_return_without_content_is_an_error(tmp_path: Path, returned: str) -> None:
    (tmp_path / "bot.py").write_text(f"def respond(messages, context):\n    return {returned}\n")
    record = go(tmp_path, "    python: bot.py:respond")["results"][0]
    assert record["status"] == "error" and "no reply" in record["error"], record["error"]


def test_python_tool_call_turn_may_have_empty_content(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(
        "def respond(messages, context):\n"
        "    return {'content': None, 'tool_calls': [{'type': 'function', 'function': {'name': 'f'}}]}\n")
    record = go(tmp_path, "    python: bot.py:respond")["results"][0]
    assert record["status"] == "passed", record


def test_http_response_path_that_finds_nothing_is_an_error(tmp_path: Path) -> None:
    with LoopbackServer(lambda *_: Reply(body={"data": {"other": "x"}})) as server:
        record = go(tmp_path, f"    http: {{url: '{server.url}/chat', response: data.reply}}")["results"][0]
    assert record["status"] == "error" and "found nothing" in record["error"]


def test_http_empty_body_is_an_error(tmp_path: Path) -> None:
    with LoopbackServer(lambda *_: Reply(body=b"")) as server:
        record = go(tmp_path, f"    http: {{url: '{server.url}/chat'}}")["results"][0]
    assert record["status"] == "error" and "empty" in record["error"]


def test_a_retry_after_longer_than_max_retry_wait_fails_the_call_at_once(tmp_path: Path) -> None:
    limited = Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "3600"})
    with OpenAIServer(lambda r, n: limited) as server:
        start = time.monotonic()
        data = go(tmp_path, f"    model: openai/m\n    api_base: {server.base}\n    api_key: sk-local-000",
                  options=", retries: 3, max_retry_wait: 5")
        elapsed = time.monotonic() - start
    record = data["results"][0]
    assert elapsed < 5 and server.calls == 1
    assert record["status"] == "error"
    assert "Retry-After 3600s" in record["error"] and "max_retry_wait 5s" in record["error"]


def test_a_retry_after_written_as_an_http_date_is_read_as_the_seconds_until_then(tmp_path: Path) -> None:
    an_hour_ahead = email.utils.formatdate(time.time() + 3600, usegmt=True)  # "Sat, 05 Dec 2026 10:00:00 GMT"
    limited = Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": an_hour_ahead})
    with OpenAIServer(lambda r, n: limited) as server:
        data = go(tmp_path, f"    model: openai/m\n    api_base: {server.base}\n    api_key: sk-local-000",
                  options=", retries: 3, max_retry_wait: 5")
    record = data["results"][0]
    assert server.calls == 1 and record["status"] == "error"
    assert re.search(r"Retry-After 3[56]\d\d(\.\d+)?s is longer than", record["error"]), record["error"]


def test_summary_counts_completed_failed_calls_and_retries(tmp_path: Path) -> None:
    def flaky(request: dict[str, Any], n: int) -> Reply:
        if n % 2 == 0:
            return Reply(503, {"error": {"message": "busy"}}, headers={"retry-after": "0"})
        return Reply(body=chat_body("可以的"))

    with OpenAIServer(flaky) as server:
        data = go(tmp_path, f"    model: openai/m\n    api_base: {server.base}\n    api_key: sk-local-000",
                  options=", retries: 2")
    summary = data["summary"]
    assert server.calls == 2
    assert (summary["calls"], summary["failed_calls"], summary["retries"]) == (1, 1, 1)
    assert data["results"][0]["status"] == "passed"


def test_a_none_content_is_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return {'content': None}\n")
    record = go(tmp_path, "    python: bot.py:respond")["results"][0]
    assert "'content' is None" in record["error"] and "has no 'content'" not in record["error"]
