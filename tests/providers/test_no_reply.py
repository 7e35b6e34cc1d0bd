"""No reply is never an empty reply (docs/en/providers.md#no-reply): every reply source's silence —
null content without tool calls, a path that finds nothing, `[]`, `{"messages": []}`, parts without
text or buttons — is an error of its turn (exit 3), so a red line cannot pass on nothing; a turn that
says `no_reply: ok` records an empty reply instead, and an explicit "" is a reply whose text is empty."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM
from tests.servers import LoopbackServer, OpenAIServer, Reply, chat_body

# never give a phone number: passes on "" — so a silent bot must not reach it as ""
RED_LINE = '[{not-regex: "1[3-9]\\\\d{9}"}]'
EMPTY = '[{not-regex: "1[3-9]\\\\d{9}"}, {regex: "^$"}]'  # the reply is empty, and seen as such


def go(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def played(provider: str, no_reply: str = "", checks: str = RED_LINE) -> str:
    return (f"providers:\n  - id: bot\n{provider}\noptions: {{cache: false}}\ntests:\n  - id: t\n"
            f"    conversation:\n      - user: 你的电话是多少？\n{no_reply}        assert: {checks}\n")


OK = "        no_reply: ok\n"


def assert_no_reply_error(data: dict[str, Any]) -> None:
    record = data["results"][0]
    assert record["status"] == "error", record
    assert record["error"].startswith("turn 1: ") and "no reply" in record["error"], record["error"]
    assert not [m for m in record["transcript"] if m["role"] == "assistant"]
    assert data["gate"]["exit_code"] == 3


def assert_silent_pass(data: dict[str, Any]) -> dict[str, Any]:
    record = data["results"][0]
    assert record["status"] == "passed", record
    reply = [m for m in record["transcript"] if m["role"] == "assistant"][-1]
    assert reply["content"] == "" and reply["no_reply"] is True
    assert data["gate"]["exit_code"] == 0
    return reply


# -- http and rasa bots on loopback -----------------------------------------------------------------

HTTP_SILENCES = [
    pytest.param({"messages": []}, "response: 'messages[].text'", id="messages-empty-list"),
    pytest.param([], "", id="bare-empty-list"),
    pytest.param([], "response: '[].text'", id="bare-empty-list-path"),
    pytest.param({"data": {}}, "response: data.reply", id="path-finds-nothing"),
    pytest.param({"messages": [None, None]}, "response: 'messages'", id="only-nulls"),
    pytest.param({"messages": [{"image": "https://example.invalid/a.png"}]},
                 "response: 'messages[].text', parts: messages", id="parts-without-text-or-buttons"),
    pytest.param({"status": "ok"}, "", id="no-guess-finds-a-reply"),
]


def http(server: LoopbackServer, keys: str) -> str:
    return f"    http: {{url: '{server.url}/chat'{', ' + keys if keys else ''}}}"


@pytest.mark.parametrize(("answer", "keys"), HTTP_SILENCES)
def test_an_http_bot_that_answers_nothing_is_an_error_of_its_turn_not_a_pass(
        tmp_path: Path, answer: Any, keys: str) -> None:
    with LoopbackServer(lambda *_: Reply(body=answer)) as server:
        assert_no_reply_error(go(tmp_path, played(http(server, keys))))


@pytest.mark.parametrize(("answer", "keys"), HTTP_SILENCES)
def test_no_reply_ok_makes_an_http_bots_silence_an_empty_reply(tmp_path: Path, answer: Any, keys: str) -> None:
    with LoopbackServer(lambda *_: Reply(body=answer)) as server:
        assert_silent_pass(go(tmp_path, played(http(server, keys), OK, EMPTY)))


def test_an_explicit_empty_string_is_a_reply_whose_text_is_empty(tmp_path: Path) -> None:
    with LoopbackServer(lambda *_: Reply(body={"reply": ""})) as server:
        record = go(tmp_path, played(http(server, "response: reply"), checks=EMPTY))["results"][0]
    assert record["status"] == "passed", record
    assert [m["content"] for m in record["transcript"]] == ["你的电话是多少？", ""]
    assert "no_reply" not in record["transcript"][1]


def test_buttons_without_text_are_a_reply(tmp_path: Path) -> None:
    answer = {"messages": [{"buttons": [{"title": "周六", "payload": "/sat"}]}]}
    with LoopbackServer(lambda *_: Reply(body=answer)) as server:
        record = go(tmp_path, played(http(server, "response: 'messages[].text', parts: messages"),
                                     checks=EMPTY))["results"][0]
    assert record["status"] == "passed", record
    assert record["transcript"][1]["parts"][0]["buttons"] == [{"title": "周六", "payload": "/sat"}]


@contextmanager
def rasa_answering(messages: list[dict[str, Any]]) -> Iterator[LoopbackServer]:
    """A Rasa-shaped server whose REST channel answers `messages` and whose tracker holds one slot."""
    def handle(method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
        if path.startswith("/webhooks/rest/webhook"):
            return Reply(body=messages)
        return Reply(body={"sender_id": "x", "slots": {"city": "北京"}, "events": [], "latest_message": {}})

    with LoopbackServer(handle) as server:
        yield server


@pytest.mark.parametrize("messages", [[], [{"recipient_id": "x", "image": "https://example.invalid/a.png"}]],
                         ids=["empty-list", "image-only"])
def test_a_rasa_bot_that_answers_no_message_is_an_error_not_a_pass(tmp_path: Path,
                                                                     messages: list[dict[str, Any]]) -> None:
    with rasa_answering(messages) as server:
        assert_no_reply_error(go(tmp_path, played(f"    rasa: {{url: '{server.url}'}}")))


def test_no_reply_ok_keeps_a_silent_rasa_turns_state(tmp_path: Path) -> None:
    with rasa_answering([]) as server:
        reply = assert_silent_pass(go(tmp_path, played(f"    rasa: {{url: '{server.url}'}}", OK, EMPTY)))
    assert reply["state"]["slots"] == {"city": "北京"} and reply["parts"] == []


# -- python and model providers --------------------------------------------------------------------

def test_a_python_bot_returning_none_is_an_error_and_no_reply_ok_makes_it_silent(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return None\n", encoding="utf-8")
    assert_no_reply_error(go(tmp_path, played("    python: bot.py:respond")))
    assert_silent_pass(go(tmp_path, played("    python: bot.py:respond", OK, EMPTY)))


def test_a_python_bot_whose_parts_carry_text_replies_with_that_text(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(
        "def respond(messages, context):\n"
        "    return {'content': None, 'parts': [{'text': '您好'}, {'text': '请问哪天？'}]}\n", encoding="utf-8")
    record = go(tmp_path, played("    python: bot.py:respond", checks='[{contains: "您好\\n请问哪天"}]'))["results"][0]
    assert record["status"] == "passed", record


def silent_model(content: Any) -> Callable[[dict[str, Any], int], Reply]:
    def answer(request: dict[str, Any], n: int) -> Reply:
        body = chat_body("x")
        body["choices"][0]["message"]["content"] = content
        return Reply(body=body)
    return answer


def model(server: OpenAIServer, client: str) -> str:
    return f"    model: openai/m\n    client: {client}\n    api_base: {server.base}\n    api_key: sk-local-000"


CLIENTS = ["lean", pytest.param("litellm", marks=LITELLM)]
# litellm itself refuses a list as the message's content (an error of its own): the lean client reads it
SILENT_CONTENTS = [pytest.param(None, "lean", id="null-lean"), pytest.param(None, "litellm", id="null-litellm",
                                                                           marks=LITELLM),
    pytest.param([], "lean", id="empty-parts-lean"),
    pytest.param([{"type": "image_url", "image_url": {"url": "x"}}], "lean", id="parts-without-text-lean")]


@pytest.mark.parametrize(("content", "client"), SILENT_CONTENTS)
def test_a_model_answering_no_content_and_no_tool_calls_is_an_error(tmp_path: Path, client: str,
                                                                     content: Any) -> None:
    with OpenAIServer(silent_model(content)) as server:
        assert_no_reply_error(go(tmp_path, played(model(server, client))))


@pytest.mark.parametrize("client", CLIENTS)
def test_no_reply_ok_makes_a_models_null_content_an_empty_reply(tmp_path: Path, client: str) -> None:
    with OpenAIServer(silent_model(None)) as server:
        reply = assert_silent_pass(go(tmp_path, played(model(server, client), OK, EMPTY)))
    assert reply["tokens"] == 15  # what came with the silence is kept


# -- recorded conversations ------------------------------------------------------------------------

RULES = """\
transcripts:
  path: {path}
defaults:
  assert:
    - not-regex: "1[3-9]\\\\d{{9}}"
      scope: each_turn
      severity: critical
"""


def graded(tmp_path: Path, name: str, text: str) -> dict[str, Any]:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return go(tmp_path, RULES.format(path=name))


def jsonl(*messages: dict[str, Any]) -> str:
    return json.dumps({"id": "c1", "messages": [{"role": "user", "content": "你的电话是多少？"}, *messages]},
                      ensure_ascii=False) + "\n"


@pytest.mark.parametrize("assistant", [{"role": "assistant", "content": None}, {"role": "assistant"},
                                       {"role": "assistant", "content": []}],
                         ids=["null", "absent", "empty-parts"])
def test_a_recorded_assistant_message_without_content_is_an_error_of_its_turn(tmp_path: Path,
                                                                              assistant: dict[str, Any]) -> None:
    data = graded(tmp_path, "log.jsonl", jsonl(assistant))
    assert_no_reply_error(data)
    assert "message 2" in data["results"][0]["error"]


def test_a_recorded_silence_keeps_the_other_turns_graded(tmp_path: Path) -> None:
    data = graded(tmp_path, "log.jsonl", jsonl({"role": "assistant", "content": None},
                                               {"role": "user", "content": "那微信呢"},
                                               {"role": "assistant", "content": "您好"}))
    record = data["results"][0]
    assert record["status"] == "error" and record["error"].startswith("turn 1: no reply"), record
    assert [m["content"] for m in record["transcript"] if m["role"] == "assistant"] == ["您好"]


def test_a_recorded_empty_string_and_a_tool_call_without_text_are_replies(tmp_path: Path) -> None:
    call = [{"id": "c", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]
    data = graded(tmp_path, "log.jsonl", jsonl({"role": "assistant", "content": None, "tool_calls": call},
                                               {"role": "tool", "tool_call_id": "c", "content": "{}"},
                                               {"role": "assistant", "content": ""}))
    assert data["results"][0]["status"] == "passed", data["results"][0]


def test_no_reply_ok_on_a_recorded_user_message(tmp_path: Path) -> None:
    line = json.dumps({"id": "c1", "messages": [{"role": "user", "content": "再见", "no_reply": "ok"},
                                                {"role": "assistant", "content": None}]}, ensure_ascii=False)
    assert_silent_pass(graded(tmp_path, "log.jsonl", line + "\n"))


def test_an_empty_assistant_cell_of_a_csv_is_no_reply(tmp_path: Path) -> None:
    data = graded(tmp_path, "log.csv", "conversation_id,turn,role,content\nc1,1,user,你的电话是多少？\nc1,2,assistant,\n")
    assert_no_reply_error(data)


INLINE = """\
tests:
  - id: t
    transcript:
      - user: 你的电话是多少？
{ok}        assert: [{{not-regex: "1[3-9]\\\\d{{9}}"}}]
      - assistant:
"""


def test_an_empty_inline_assistant_entry_is_no_reply_unless_the_turn_says_no_reply_ok(tmp_path: Path) -> None:
    assert_no_reply_error(go(tmp_path, INLINE.format(ok="")))
    assert_silent_pass(go(tmp_path, INLINE.format(ok=OK)))


def test_no_reply_goes_with_a_user_turn(tmp_path: Path) -> None:
    from evalspec.config.loader import load_suite
    from evalspec.core.errors import ConfigError

    path = tmp_path / "s.yaml"
    path.write_text("providers: [{id: p, python: bot.py:f}]\ntests:\n  - id: t\n    conversation:\n"
                    "      - user: 嗯\n      - assistant: 好\n        no_reply: ok\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="'no_reply' goes with a 'user' turn"):
        load_suite(path)
    path.write_text("providers: [{id: p, python: bot.py:f}]\ntests:\n  - id: t\n    conversation:\n"
                    "      - user: 嗯\n        no_reply: yes\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no_reply"):
        load_suite(path)
