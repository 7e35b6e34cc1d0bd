"""The response cache never changes a verdict (SPEC §17): its key holds everything a call depends on, and
a cache that cannot be used is skipped with one warning."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.servers import LoopbackServer, Reply


def echo_body(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
    return Reply(body={"reply": json.dumps({"path": path, "body": body, "h": headers.get("x-who")},
                                           ensure_ascii=False)})


def replies(data: dict[str, Any]) -> dict[str, str]:
    return {r["test_id"]: r["transcript"][1]["content"] for r in data["results"]}


def test_a_python_provider_reading_vars_gets_one_call_per_test_vars(in_tmp: Path) -> None:
    (in_tmp / "bot.py").write_text("def respond(messages, context):\n"
                                   "    return messages[-1]['content'] + ' as ' + context['vars']['who']\n")
    (in_tmp / "s.yaml").write_text("""\
providers: [{id: b, python: bot.py:respond}]
tests:
  - id: a
    vars: {who: 小明}
    conversation: [{user: hi, assert: [{contains: 小明}]}]
  - id: b
    vars: {who: bob}
    conversation: [{user: hi, assert: [{contains: bob}]}]
""", encoding="utf-8")
    for run_dir in ("r1", "r2"):  # the first run (both live) and the cached rerun agree
        data = run([in_tmp / "s.yaml"], options=RunOptions(run_dir=in_tmp / run_dir, concurrency=1)).data
        assert replies(data) == {"a": "hi as 小明", "b": "hi as bob"}
        assert [r["status"] for r in data["results"]] == ["passed", "passed"]
    assert data["summary"]["calls"] == 0 and data["summary"]["cached_calls"] == 2


def test_an_http_request_templated_from_test_vars_is_its_own_cache_entry(in_tmp: Path) -> None:
    with LoopbackServer(echo_body) as server:
        (in_tmp / "s.yaml").write_text(f"""\
providers:
  - id: h
    http:
      url: "{server.url}/{{{{ lang }}}}"
      headers: {{x-who: "{{{{ who }}}}"}}
      body: {{text: "{{{{ message }}}}", tone: "{{{{ tone }}}}", thread: "{{{{ thread_id }}}}"}}
      response: reply
vars: {{lang: en, who: w, tone: calm}}
tests:
  - id: plain
    conversation: [{{user: hi}}]
  - id: tone
    vars: {{tone: angry}}
    conversation: [{{user: hi}}]
  - id: url
    vars: {{lang: zh}}
    conversation: [{{user: hi}}]
  - id: header
    vars: {{who: carol}}
    conversation: [{{user: hi}}]
""", encoding="utf-8")
        first = run([in_tmp / "s.yaml"], options=RunOptions(run_dir=in_tmp / "r1", concurrency=1)).data
        assert [r.get("error") for r in first["results"]] == [None] * 4
        assert len(server.requests) == 4  # before: one call, the other three tests got its reply
        got = {k: json.loads(v) for k, v in replies(first).items()}
        assert got["tone"]["body"]["tone"] == "angry" and got["plain"]["body"]["tone"] == "calm"
        assert got["url"]["path"] == "/zh" and got["header"]["h"] == "carol"
        second = run([in_tmp / "s.yaml"], options=RunOptions(run_dir=in_tmp / "r2", concurrency=1)).data
        assert len(server.requests) == 4  # the thread id differs per run but is not part of the key
        assert second["summary"]["calls"] == 0 and second["summary"]["cached_calls"] == 4
        assert {k: json.loads(v)["body"]["tone"] for k, v in replies(second).items()} == {
            k: v["body"]["tone"] for k, v in got.items()}


BOT = "def respond(messages, context):\n    return 'ok ' + messages[-1]['content']\n"
SUITE = "providers: [{id: b, python: bot.py:respond}]\ntests:\n  - id: t\n    conversation: [{user: hi}]\n"


def run_cli(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml"], cwd=where, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def test_a_corrupt_cache_file_is_skipped_with_one_warning(in_tmp: Path) -> None:
    (in_tmp / "bot.py").write_text(BOT)
    (in_tmp / "s.yaml").write_text(SUITE)
    cache = in_tmp / ".evalspec" / "cache" / "responses.sqlite"
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"this is not a database\n" * 400)
    proc = run_cli(in_tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # before: a sqlite3.DatabaseError traceback
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("warning: the response cache") == 1 and str(cache) in proc.stderr
    assert "passed" in proc.stdout and "run.json" in proc.stdout


def test_a_cache_locked_by_another_process_is_skipped_with_one_warning(in_tmp: Path) -> None:
    (in_tmp / "bot.py").write_text(BOT)
    (in_tmp / "s.yaml").write_text(SUITE.replace("conversation: [{user: hi}]",
                                                 "conversation: [{user: hi}, {user: again}]"))
    cache = in_tmp / ".evalspec" / "cache" / "responses.sqlite"
    cache.parent.mkdir(parents=True)
    holder = sqlite3.connect(cache, isolation_level=None)  # another evalspec mid-transaction, never finishing
    holder.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        proc = run_cli(in_tmp)  # before: 30 s of waiting, then a "database is locked" traceback
    finally:
        holder.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("warning: the response cache") == 1 and "locked" in proc.stderr


def test_a_reply_holding_a_secret_is_cached_masked_and_never_served(in_tmp: Path) -> None:
    """The cache file holds no secret; a reply that held one is stored masked and is a miss, so a check
    of the live reply (`not-contains` the token) is never graded on `***` (docs/en/suite-format.md#secrets)."""
    def leaky(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        said = body.get("text")
        return Reply(body={"reply": f"token is {headers.get('x-auth-token')}" if said == "leak" else f"ok {said}"})

    with LoopbackServer(leaky) as server:
        (in_tmp / "s.yaml").write_text(f"""\
providers:
  - id: h
    http:
      url: "{server.url}/chat"
      headers: {{X-Auth-Token: tok-cached-24680}}
      body: {{text: "{{{{ message }}}}"}}
      response: reply
tests:
  - id: leak
    conversation: [{{user: leak, assert: [{{not-contains: tok-cached-24680}}]}}]
  - id: plain
    conversation: [{{user: hi, assert: [{{contains: ok}}]}}]
""", encoding="utf-8")
        for run_dir in ("r1", "r2"):
            data = run([in_tmp / "s.yaml"], options=RunOptions(run_dir=in_tmp / run_dir, concurrency=1)).data
            assert [r["status"] for r in data["results"]] == ["failed", "passed"]
        assert len(server.requests) == 3  # the leaking reply was asked again, the plain one came from the cache
    assert data["summary"]["cached_calls"] == 1
    stored = [row[0] for row in sqlite3.connect(in_tmp / ".evalspec" / "cache" / "responses.sqlite").execute(
        "SELECT value FROM responses")]
    assert len(stored) == 2 and not any("tok-cached-24680" in value for value in stored)
    assert any("token is ***" in value for value in stored)
