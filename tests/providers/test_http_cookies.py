"""An `http:` bot's cookies belong to one conversation (docs/en/providers.md#cookies): what it sets is
sent back on that conversation's later turns, and never to another conversation, concurrent or next."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.servers import LoopbackServer, Reply


def session_bot(seen: list[str | None] | None = None) -> LoopbackServer:
    """A web bot keyed by a session cookie: a request without one gets a new session (`Set-Cookie`) and
    the answer names it; a request with one is answered with the cookie it carried (noted in `seen`)."""
    sessions = itertools.count(1)

    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        cookie = headers.get("cookie")
        if seen is not None:
            seen.append(cookie)
        if cookie is not None:
            return Reply(body={"reply": f"收到 {cookie}"})
        sid = next(sessions)
        return Reply(body={"reply": f"新会话 sid={sid}"}, headers={"Set-Cookie": f"sid={sid}; Path=/"})

    return LoopbackServer(handle)


def played(tmp_path: Path, host: str, port: int, headers: str = "") -> list[list[str]]:
    suite = tmp_path / "s.yaml"
    suite.write_text(f"""\
providers:
  - id: web
    http: {{url: "http://{host}:{port}/chat", response: reply{headers}}}
options: {{concurrency: 4}}
tests:
  - id: 会话
    repeat: 6
    conversation: [{{user: 你好}}, {{user: 续航多少？}}, {{user: 再见}}]
""", encoding="utf-8")
    data = run([suite], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return [[m["content"] for m in r["transcript"] if m["role"] == "assistant"] for r in data["results"]]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])  # (aiohttp keeps cookies of a named host only)
def test_each_conversation_starts_without_cookies_and_keeps_its_own(tmp_path: Path, host: str) -> None:
    with session_bot() as server:
        replies = played(tmp_path, host, server.port)
    assert len(replies) == 6
    sessions = set()
    for first, *later in replies:
        assert first.startswith("新会话 sid="), replies  # no cookie from another conversation
        sid = first.removeprefix("新会话 ")
        assert later == [f"收到 {sid}", f"收到 {sid}"], replies  # its own, on each later turn
        sessions.add(sid)
    assert len(sessions) == 6


def test_a_cookie_written_in_the_suite_is_sent_as_written(tmp_path: Path) -> None:
    seen: list[str | None] = []
    with session_bot(seen) as server:
        replies = played(tmp_path, "127.0.0.1", server.port, ", headers: {Cookie: sid=mine}")
    assert seen == ["sid=mine"] * 18
    assert replies == [["收到 ***"] * 3] * 6  # (a Cookie header is a secret in every output)
