"""Why the model stopped, recorded on each assistant reply: from a loopback OpenAI-compatible server (the
lean client and litellm), an http bot's `finish_reason:` path, a python provider's dict, recorded
transcripts; a provider that reports none leaves `finish-reason` an error naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM, invoke
from tests.servers import LoopbackServer, OpenAIServer, Reply, chat_body, tool_call_body

CLIENTS = ["lean", pytest.param("litellm", marks=LITELLM)]


def go(tmp_path: Path, text: str, cache: bool = False) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    options = RunOptions(run_dir=tmp_path / "run", use_cache=cache, cache_dir=tmp_path / "cache")
    record: dict[str, Any] = run([path], options=options).data["results"][0]
    return record


def stopping(request: dict[str, Any], n: int) -> Reply:
    """`长一点` is cut at the token limit (Anthropic's word for it), `查库存` calls a tool first, the rest stop."""
    messages = request["messages"]
    last = messages[-1]
    if last["role"] == "user" and last["content"] == "查库存":
        return Reply(body=tool_call_body([("lookup_stock", {"model": "瑶光"})]))
    body = chat_body(f"echo: {next(m['content'] for m in reversed(messages) if m['role'] == 'user')}")
    body["choices"][0]["finish_reason"] = "max_tokens" if last["content"] == "长一点" else "stop"
    return Reply(body=body)


def model_suite(server: OpenAIServer, client: str) -> str:
    return f"""\
providers:
  - id: agent
    model: openai/test-model
    client: {client}
    api_base: {server.base}
    api_key: sk-test-123
    tools: [{{type: function, function: {{name: lookup_stock, parameters: {{type: object}}}}}}]
    tool_results: {{lookup_stock: 有现车}}
tests:
  - id: t
    conversation:
      - user: 你好
        assert: [{{finish-reason: stop}}]
      - user: 长一点
        assert: [{{finish-reason: length}}, {{not-finish-reason: stop}}]
      - user: 查库存
    assert:
      - finish-reason: stop
"""


@pytest.mark.parametrize("client", CLIENTS)
def test_a_models_finish_reason_is_recorded_on_each_reply_in_openais_words(tmp_path: Path, client: str) -> None:
    with OpenAIServer(stopping) as server:
        record = go(tmp_path, model_suite(server, client))
    assert record["status"] == "passed", record["assertions"]
    replies = [(m["turn"], m["finish_reason"], bool(m.get("intermediate")))
               for m in record["transcript"] if m["role"] == "assistant"]
    assert replies == [(1, "stop", False), (2, "length", False), (3, "tool_calls", True), (3, "stop", False)]
    evidence = [a["evidence"] for a in record["assertions"]]
    assert evidence[0] == [{"turn": 1, "text": "stop"}] and evidence[1] == [{"turn": 2, "text": "length"}]


def test_a_cached_reply_keeps_its_finish_reason(tmp_path: Path) -> None:
    with OpenAIServer(stopping) as server:
        go(tmp_path, model_suite(server, "lean"), cache=True)
        server.reset()
        record = go(tmp_path, model_suite(server, "lean"), cache=True)
        assert server.calls == 0
    assert record["status"] == "passed", record["assertions"]
    assert [m.get("finish_reason") for m in record["transcript"] if m["role"] == "assistant"] == \
        ["stop", "length", "tool_calls", "stop"]


def test_a_model_server_that_gives_no_finish_reason_leaves_the_check_an_error(tmp_path: Path) -> None:
    def silent(request: dict[str, Any], n: int) -> Reply:
        body = chat_body("好的")
        body["choices"][0]["finish_reason"] = None
        return Reply(body=body)

    with OpenAIServer(silent) as server:
        record = go(tmp_path, f"""\
providers: [{{id: local, model: openai/test-model, api_base: {server.base}, api_key: sk-test}}]
tests:
  - id: t
    conversation: [{{user: 你好}}]
    assert: [{{not-finish-reason: length}}]
""")
    assert "finish_reason" not in record["transcript"][1]
    assert record["status"] == "error"
    assert record["assertions"][0]["error"] == ("turn 1: no finish reason recorded for the reply "
                                                "(provider 'local' reported none)")


def bot() -> LoopbackServer:
    """An http bot that says why its model stopped under `meta.stop` (none when asked `不说`)."""
    def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        text = body["text"]
        meta = {} if text == "不说" else {"stop": "END_TURN" if text == "你好" else "max_tokens"}
        return Reply(body={"reply": f"收到 {text}", "meta": meta})

    return LoopbackServer(handle)


def http_suite(url: str, path: str = "meta.stop") -> str:
    return f"""\
providers:
  - id: shop
    http: {{url: {url}, body: {{text: "{{{{ message }}}}"}}, response: reply, finish_reason: "{path}"}}
tests:
  - id: t
    conversation:
      - user: 你好
        assert: [{{finish-reason: stop}}]
      - user: 讲个长故事
        assert: [{{finish-reason: length}}]
      - user: 不说
        assert: [{{finish-reason: stop}}]
"""


def test_an_http_bot_reports_it_through_a_jmespath_and_a_missing_key_is_a_reply_without_one(tmp_path: Path) -> None:
    with bot() as server:
        record = go(tmp_path, http_suite(server.url))
    assert [m.get("finish_reason") for m in record["transcript"] if m["role"] == "assistant"] == \
        ["stop", "length", None]
    first, second, third = record["assertions"]
    assert first["pass"] is True and second["pass"] is True
    assert third["pass"] is None and third["error"] == ("turn 3: no finish reason recorded for the reply "
                                                        "(provider 'shop' reported none)")


def test_an_http_finish_reason_path_whose_holder_is_missing_is_an_error_naming_it(tmp_path: Path) -> None:
    with bot() as server:
        record = go(tmp_path, http_suite(server.url, "metadata.stop"))
    assert record["status"] == "error"
    assert record["error"].startswith("turn 1: shop: finish_reason path 'metadata.stop' found nothing")


PYTHON_BOT = """\
def respond(messages, context):
    text = messages[-1]["content"]
    if text == "字符串":
        return "只有文字"
    if text == "数字":
        return {"content": "好", "finish_reason": 3}
    return {"content": "好的", "finish_reason": "tool_use" if text == "查" else "stop"}
"""


def test_a_python_provider_returns_it_in_its_dict(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(PYTHON_BOT, encoding="utf-8")
    record = go(tmp_path, """\
providers: [{id: py, python: bot.py:respond}]
tests:
  - id: t
    conversation:
      - user: 你好
        assert: [{finish-reason: stop}]
      - user: 查
        assert: [{finish-reason: tool_calls}]
      - user: 字符串
        assert: [{finish-reason: stop}]
""")
    assert [a["pass"] for a in record["assertions"]] == [True, True, None]
    assert record["assertions"][2]["error"] == ("turn 3: no finish reason recorded for the reply "
                                                "(provider 'py' reported none)")


def test_a_python_provider_whose_finish_reason_is_not_text_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(PYTHON_BOT, encoding="utf-8")
    record = go(tmp_path, """\
providers: [{id: py, python: bot.py:respond}]
tests:
  - id: t
    conversation: [{user: 数字}]
    assert: [{finish-reason: stop}]
""")
    assert record["status"] == "error" and "returned 'finish_reason' as int; expected a string" in record["error"]


def test_recorded_transcripts_carry_it_inline_and_in_jsonl(tmp_path: Path) -> None:
    lines = [{"id": "c1", "messages": [{"role": "user", "content": "你好"},
                                      {"role": "assistant", "content": "您好", "finish_reason": "end_turn"}]},
             {"id": "c2", "messages": [{"role": "user", "content": "你好"},
                                      {"role": "assistant", "content": "您", "finish_reason": "max_tokens"}]},
             {"id": "c3", "messages": [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "您"}]}]
    (tmp_path / "logs.jsonl").write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), encoding="utf-8")
    path = tmp_path / "rules.yaml"
    path.write_text("transcripts: {path: logs.jsonl}\ndefaults:\n  assert: [{finish-reason: stop}]\n",
                    encoding="utf-8")
    results = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data["results"]
    assert [r["assertions"][0]["pass"] for r in results] == [True, False, None]
    assert results[1]["transcript"][1]["finish_reason"] == "length"
    assert results[2]["assertions"][0]["error"] == ("turn 1: no finish reason recorded for the reply "
                                                    "(provider 'recorded' reported none)")
    record = go(tmp_path, """\
tests:
  - id: inline
    transcript:
      - user: 你好
        assert: [{finish-reason: length}]
      - assistant: 您
        finish_reason: MAX_TOKENS
""")
    assert record["status"] == "passed", record["assertions"]
    assert record["transcript"][1]["finish_reason"] == "length"


def test_a_finish_reason_on_a_user_entry_or_a_non_word_in_jsonl_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("""\
tests:
  - id: inline
    transcript:
      - user: 你好
        finish_reason: stop
      - assistant: 您好
    assert: [{contains: 您}]
""", encoding="utf-8")
    code, out = invoke("validate", str(path))
    assert code == 2 and "'finish_reason' goes with an 'assistant' entry, not 'user'" in out, out
    (tmp_path / "logs.jsonl").write_text(json.dumps({"id": "c1", "messages": [
        {"role": "user", "content": "你好"}, {"role": "assistant", "content": "您", "finish_reason": 1}]}),
        encoding="utf-8")
    path.write_text("transcripts: {path: logs.jsonl}\ndefaults:\n  assert: [{finish-reason: stop}]\n",
                    encoding="utf-8")
    code, out = invoke("validate", str(path))
    assert code == 2 and "message 2: finish_reason 1 is not a word" in out, out
