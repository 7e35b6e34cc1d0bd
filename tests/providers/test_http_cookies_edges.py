"""An `http:` bot's cookies as browsers keep them (docs/en/providers.md#cookies), under what real bots send:
several cookies in one answer, a deletion, a cookie on a retried 429, a host named `localhost`, a value
in UTF-8, a GET bot, a stateful one, a rerun from the cache, and a turn added to a cached conversation
(played again live from its start: the cached answers' session is gone)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.servers import LoopbackServer, Reply

Handle = Callable[[int, dict[str, str]], Reply]


def bot(answer: Handle, seen: list[str | None]) -> LoopbackServer:
    """A bot that notes the `Cookie` each call carried and answers the n-th call (from 1) with `answer`."""

    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        seen.append(headers.get("cookie"))
        return answer(len(seen), headers)

    return LoopbackServer(handle)


def play(tmp_path: Path, port: int, host: str = "127.0.0.1", http: str = "", turns: int = 3,
         cache: bool = False, run_dir: str = "run") -> dict[str, Any]:
    suite = tmp_path / "s.yaml"
    conversation = ", ".join(f"{{user: 第{i}句}}" for i in range(1, turns + 1))
    suite.write_text(f"""\
providers:
  - id: web
    http: {{url: "http://{host}:{port}/chat", response: reply{http}}}
options: {{retries: 2, max_retry_wait: 0.01}}
tests:
  - id: 会话
    conversation: [{conversation}]
""", encoding="utf-8")
    return dict(run([suite], options=RunOptions(run_dir=tmp_path / run_dir, use_cache=cache)).data)


def replies(data: dict[str, Any]) -> list[str]:
    [record] = data["results"]
    assert record["status"] == "passed", record
    return [m["content"] for m in record["transcript"] if m["role"] == "assistant"]


def test_several_cookies_of_one_answer_are_all_sent_back(tmp_path: Path) -> None:
    seen: list[str | None] = []
    two = {"Set-Cookie": "sid=1; Path=/", "set-cookie": "lang=zh; Path=/"}  # two headers of one answer
    with bot(lambda n, h: Reply(body={"reply": "好"}, headers=two if n == 1 else {}), seen) as server:
        replies(play(tmp_path, server.port))
    assert seen[0] is None and seen[1:] == ["sid=1; lang=zh"] * 2


def test_a_cookie_the_bot_deletes_is_not_sent_again(tmp_path: Path) -> None:
    seen: list[str | None] = []
    sets = {1: "sid=1; Path=/", 2: "sid=; Path=/; Max-Age=0"}
    with bot(lambda n, h: Reply(body={"reply": "好"}, headers={"Set-Cookie": sets[n]} if n in sets else {}), seen) as server:
        replies(play(tmp_path, server.port))
    assert seen == [None, "sid=1", None]


def test_a_cookie_set_on_a_retried_429_is_kept(tmp_path: Path) -> None:
    seen: list[str | None] = []

    def answer(n: int, headers: dict[str, str]) -> Reply:
        if n == 1:
            return Reply(status=429, body={"error": "slow down"}, headers={"Set-Cookie": "sid=7", "Retry-After": "0"})
        return Reply(body={"reply": "好"})

    with bot(answer, seen) as server:
        replies(play(tmp_path, server.port, turns=2))
    assert seen == [None, "sid=7", "sid=7"]


@pytest.mark.parametrize(("host", "cookie"), [("localhost", "sid=1; Domain=localhost; Path=/"),  # (a one-word host)
                                           ("localhost", "sid=1; Path=/"), ("127.0.0.1", "sid=1; Domain=127.0.0.1"),
                                           ("127.0.0.1", "sid=1; Secure; HttpOnly; SameSite=None")])  # (as browsers)
def test_a_cookie_of_the_bots_own_host_comes_back(tmp_path: Path, host: str, cookie: str) -> None:
    seen: list[str | None] = []
    with bot(lambda n, h: Reply(body={"reply": "好"}, headers={"Set-Cookie": cookie} if n == 1 else {}), seen) as server:
        replies(play(tmp_path, server.port, host=host))
    assert seen == [None, "sid=1", "sid=1"]


@pytest.mark.parametrize("value", ["张三".encode(), "café".encode()])
def test_a_cookie_value_in_utf8_goes_back_byte_for_byte(tmp_path: Path, value: bytes) -> None:
    seen: list[str | None] = []
    raw = (b"name=" + value + b"; Path=/").decode("latin-1")  # (the test server writes each character as a byte)
    with bot(lambda n, h: Reply(body={"reply": "好"}, headers={"Set-Cookie": raw} if n == 1 else {}), seen) as server:
        replies(play(tmp_path, server.port, turns=2))
    assert seen[0] is None and seen[1] is not None and seen[1].encode("latin-1") == b"name=" + value


def test_a_cookie_with_a_control_character_is_dropped_as_browsers_drop_it(tmp_path: Path) -> None:
    seen: list[str | None] = []
    sets = {"Set-Cookie": "bad=\x01x", "set-cookie": "sid=1"}
    with bot(lambda n, h: Reply(body={"reply": "好"}, headers=sets if n == 1 else {}), seen) as server:
        replies(play(tmp_path, server.port, turns=2))
    assert seen == [None, "sid=1"]


@pytest.mark.parametrize("http", [", method: GET", ", stateful: true"])
def test_get_and_stateful_bots_keep_their_cookies(tmp_path: Path, http: str) -> None:
    seen: list[str | None] = []
    with bot(lambda n, h: Reply(body={"reply": "好"}, headers={"Set-Cookie": "sid=1"} if n == 1 else {}), seen) as server:
        replies(play(tmp_path, server.port, http=http))
    assert seen == [None, "sid=1", "sid=1"]


def test_a_rerun_from_the_cache_answers_as_the_first_run(tmp_path: Path) -> None:
    seen: list[str | None] = []

    def answer(n: int, headers: dict[str, str]) -> Reply:
        return Reply(body={"reply": f"第{n}答 {headers.get('cookie')}"}, headers={"Set-Cookie": f"sid={n}"})

    with bot(answer, seen) as server:
        first = replies(play(tmp_path, server.port, cache=True))
        again = replies(play(tmp_path, server.port, cache=True, run_dir="again"))
    assert len(seen) == 3 and again == first


def test_a_turn_added_to_a_cached_conversation_still_carries_its_cookie(tmp_path: Path) -> None:
    seen: list[str | None] = []

    def answer(n: int, headers: dict[str, str]) -> Reply:
        return Reply(body={"reply": f"会话 {headers.get('cookie')}"}, headers={} if headers.get("cookie") else {"Set-Cookie": f"sid={n}"})

    with bot(answer, seen) as server:
        replies(play(tmp_path, server.port, cache=True, turns=2))
        third = replies(play(tmp_path, server.port, cache=True, turns=3, run_dir="again"))
    assert third[2] == f"会话 {third[1].removeprefix('会话 ')}", (third, seen)  # the session of turns 1-2


def test_a_simulated_conversation_longer_than_its_cached_one_is_played_again_with_one_session(tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text("def next_turn(transcript, context):\n    return f\"第{context['turn']}句\"\n",
                                      encoding="utf-8")
    seen: list[str | None] = []

    def answer(n: int, headers: dict[str, str]) -> Reply:
        return Reply(body={"reply": f"会话 {headers.get('cookie')}"}, headers={} if headers.get("cookie") else {"Set-Cookie": f"sid={n}"})

    def simulated(port: int, turns: int, run_dir: str) -> list[str]:
        (tmp_path / "s.yaml").write_text(f"""\
providers:
  - id: web
    http: {{url: "http://127.0.0.1:{port}/chat", response: reply}}
tests:
  - id: 模拟
    simulate: {{python: "user.py:next_turn", max_turns: {turns}}}
    assert: [{{turn-count: {{min: 1}}}}]
""", encoding="utf-8")
        return replies(dict(run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / run_dir, use_cache=True)).data))

    with bot(answer, seen) as server:
        simulated(server.port, 2, "run")
        longer = simulated(server.port, 3, "again")
    assert len(longer) == 3 and longer[0] == "会话 None" and longer[1] == longer[2] != "会话 None", (longer, seen)
