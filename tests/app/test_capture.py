"""`capture: NAME` on a user turn (SPEC §19): the turn's reply becomes the var NAME for the later turns
and the test's assertions; a capture that finds nothing is an error at its own turn."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from tests import ROOT
from tests.helpers import invoke
from tests.servers import LoopbackServer, Reply

BOT = '''\
def call(messages, context=None):
    last = messages[-1]["content"]
    if "下单" in last:
        return "订单号 ORD-4711"
    if "empty" in last:
        return ""
    return "收到：" + last
'''

SUITE = """\
providers:
  - id: bot
    python: bot.py:call
tests:
  - id: order
    conversation:
      - user: 我要下单
        capture: order
      - user: "查询 {{ order }} 的状态"
        assert:
          - contains: "查询 {{ order }}"
    assert:
      - contains: "{{ order }}"
        scope: last_response
"""


def go(tmp_path: Path, suite: str, bot: str = BOT) -> dict[str, Any]:
    (tmp_path / "bot.py").write_text(bot, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(suite, encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def test_a_captured_reply_fills_the_later_turn_and_the_tests_assertions(tmp_path: Path) -> None:
    record = go(tmp_path, SUITE)["results"][0]
    assert record["status"] == "passed", record
    users = [m for m in record["transcript"] if m["role"] == "user"]
    assert users[1]["content"] == "查询 订单号 ORD-4711 的状态"
    assert users[0]["capture"] == "order"
    assert record["transcript"][-1]["content"] == "收到：查询 订单号 ORD-4711 的状态"
    schema = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(json.loads(next((tmp_path / "run").rglob("run.json")).read_text(encoding="utf-8")), schema)
    assert "capture" in schema["$defs"]["message"]["properties"]


def test_a_capture_that_finds_nothing_is_an_error_at_its_turn(tmp_path: Path) -> None:
    suite = SUITE.replace("我要下单", "empty please")
    record = go(tmp_path, suite)["results"][0]
    assert record["status"] == "error"
    assert record["error"].startswith("turn 1: capture 'order' found nothing")
    assert [m["role"] for m in record["transcript"]] == ["user", "assistant"]  # turn 2 was never sent


def test_a_turn_that_errored_leaves_the_capture_undefined(tmp_path: Path) -> None:
    bot = BOT.replace('    if "下单" in last:', '    if "下单" in last:\n        raise RuntimeError("down")')
    record = go(tmp_path, SUITE, bot)["results"][0]
    assert record["status"] == "error" and record["error"].startswith("turn 1:")
    assert len([m for m in record["transcript"] if m["role"] == "user"]) == 1


def test_a_stateful_http_bot_gets_the_captured_reply(tmp_path: Path) -> None:
    numbers = itertools.count(1000)

    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        text = str(body.get("text"))
        if text.startswith("book"):
            return Reply(body={"reply": f"BK-{next(numbers)}"})
        return Reply(body={"reply": f"cancelled {text.removeprefix('cancel ')}"})

    with LoopbackServer(handle) as server:
        data = go(tmp_path, f"""\
providers:
  - id: shop
    http:
      url: {server.url}/chat
      body: {{session: "{{{{ thread_id }}}}", text: "{{{{ message }}}}"}}
      response: reply
      stateful: true
tests:
  - id: booking
    repeat: 2
    conversation:
      - user: book a table
        capture: booking
      - user: "cancel {{{{ booking }}}}"
    assert:
      - equals: "cancelled {{{{ booking }}}}"
        scope: last_response
""")
    assert [r["status"] for r in data["results"]] == ["passed", "passed"]
    sent = [r["text"] for r in server.requests]
    # each repeat captured its own booking: the template is rendered per conversation, not once per plan
    assert sorted(sent) == ["book a table", "book a table", "cancel BK-1000", "cancel BK-1001"]


@pytest.mark.parametrize(("turn", "message"), [
    ("- assistant: hi\n        capture: x", "'capture' goes with a 'user' turn, not 'assistant'"),
    ("- user: hi\n        capture: 1x", "capture '1x' is not a variable name"),
    ("- user: hi\n        capture: x\n      - user: again\n        capture: x", "capture 'x' is already set at line"),
])
def test_a_bad_capture_is_refused_at_load(tmp_path: Path, turn: str, message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"providers: [{{id: e, python: 'bot.py:call'}}]\ntests:\n  - id: t\n    conversation:\n"
                    f"      {turn}\n      - user: bye\n    assert: [{{contains: a}}]\n", encoding="utf-8")
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False))
    assert message in str(err.value) and "s.yaml:" in str(err.value)


def test_a_template_naming_an_unknown_var_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    path.write_text(SUITE.replace("查询 {{ order }} 的状态", "查询 {{ ordr }} 的状态"), encoding="utf-8")
    code, out = invoke("validate", str(path))
    assert code == 2 and "'ordr' is undefined" in out
