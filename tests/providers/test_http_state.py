"""`http:` providers' `state:` and `parts:` paths, and a `response:` that finds a list (SPEC §24)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.servers import LoopbackServer, Reply


def go(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def shop() -> LoopbackServer:
    """A bot that answers two messages (the second with buttons) and its tracker; `seen` echoes the
    `state` the request body carried."""
    turns: dict[str, int] = {}

    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        n = turns[body["session"]] = turns.get(body["session"], 0) + 1
        return Reply(body={"messages": [{"text": f"第{n}轮：收到 {body['text']}"},
                                        {"text": "要预约吗？", "buttons": [{"title": "好", "payload": "/yes"}]}],
                           "tracker": {"slots": {"turns": n, "seed": body.get("seed")}, "flow": "chat"}})

    return LoopbackServer(handle)


def provider(url: str, state: str = "tracker", body: str = '{session: "{{ thread_id }}", text: "{{ message }}"}') -> str:
    return f"""\
providers:
  - id: shop
    http:
      url: {url}
      body: {body}
      response: messages[].text
      parts: messages
      state: {state}
      stateful: true
"""


def test_a_list_reply_is_joined_and_the_state_and_parts_are_on_the_assistant_message(tmp_path: Path) -> None:
    with shop() as server:
        data = go(tmp_path, provider(server.url) + """\
tests:
  - id: t
    conversation: [{user: 你好}, {user: 再见}]
""")
    record = data["results"][0]
    assert record["status"] == "passed", record.get("error")
    last = record["transcript"][-1]
    assert last["content"] == "第2轮：收到 再见\n要预约吗？"
    assert last["state"] == {"slots": {"turns": 2, "seed": None}, "flow": "chat"}
    assert last["parts"] == [
        {"text": "第2轮：收到 再见", "buttons": None, "image": None, "custom": None},
        {"text": "要预约吗？", "buttons": [{"title": "好", "payload": "/yes"}], "image": None, "custom": None}]


def test_a_typo_in_the_state_paths_holder_is_an_error_naming_the_turn_and_the_path(tmp_path: Path) -> None:
    with shop() as server:
        data = go(tmp_path, provider(server.url, state="trackr.slots") + """\
tests:
  - id: t
    conversation: [{user: 你好}]
""")
    record = data["results"][0]
    assert record["status"] == "error"
    assert record["error"].startswith("turn 1: shop: state path 'trackr.slots' found nothing: "
                                      "the object holding its last key is not in ")


def test_a_state_key_the_holder_lacks_is_a_turn_without_state(tmp_path: Path) -> None:
    with shop() as server:
        data = go(tmp_path, provider(server.url, state="tracker.missing") + """\
tests:
  - id: t
    conversation: [{user: 你好}]
""")
    record = data["results"][0]
    assert record["status"] == "passed" and "state" not in record["transcript"][-1]


def test_a_tests_state_renders_as_the_state_template_var(tmp_path: Path) -> None:
    body = '{session: "{{ thread_id }}", text: "{{ message }}", seed: "{{ state.slots.city }}"}'
    with shop() as server:
        data = go(tmp_path, provider(server.url, body=body) + """\
tests:
  - id: t
    state: {slots: {city: 北京}}
    conversation: [{user: 你好}]
""")
        assert server.requests[0]["seed"] == "北京"
    assert data["results"][0]["transcript"][-1]["state"]["slots"]["seed"] == "北京"
