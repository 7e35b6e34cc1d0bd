"""`topic-coherence`: whose messages (`include`), head–tail similarity, and `max_adjacent` for repetition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.servers import OpenAIServer

BOT = "def respond(messages, context):\n    return '请问还有什么可以帮您？'\n"


def go(tmp_path: Path, server: OpenAIServer, check: str) -> dict[str, Any]:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(f"""\
providers:
  - id: bot
    python: bot.py:respond
embedder: {{model: openai/embed, api_base: "{server.base}"}}
tests:
  - id: t
    conversation:
      - user: 瑶光的续航是多少？
      - user: 瑶光的价格呢？
      - user: 今天天气怎么样？
    assert:
      - topic-coherence: {check}
""", encoding="utf-8")
    data = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return dict(data["results"][0]["assertions"][0])


def embedded(server: OpenAIServer) -> list[str]:
    return [t for r in server.requests if "input" in r for t in r["input"]]


def test_a_bot_repeating_itself_fails_max_adjacent_with_the_repeated_reply_as_evidence(tmp_path: Path, echo_server: OpenAIServer) -> None:
    result = go(tmp_path, echo_server, "{max_adjacent: 0.95}")
    assert result["pass"] is False and "repetition" in result["reason"]
    assert result["details"]["max_adjacent"] > 0.99 and result["details"]["head_tail"] > 0.99
    assert result["evidence"][0]["turn"] == 2 and "请问" in result["evidence"][0]["text"]
    assert embedded(echo_server) == ["请问还有什么可以帮您？"] * 3


def test_include_user_reads_what_the_user_said_and_records_head_tail(tmp_path: Path, echo_server: OpenAIServer) -> None:
    result = go(tmp_path, echo_server, "{include: user, max_adjacent: 0.95}")
    assert embedded(echo_server) == ["瑶光的续航是多少？", "瑶光的价格呢？", "今天天气怎么样？"]
    details = result["details"]
    assert result["pass"] is True and details["include"] == "user"
    assert details["head_tail"] < details["adjacent"][0]  # the weather question drifts from the first request
    assert details["drift"] == 1 - details["head_tail"]


def test_include_both_reads_both_sides_in_order(tmp_path: Path, echo_server: OpenAIServer) -> None:
    result = go(tmp_path, echo_server, "{include: both}")
    texts = embedded(echo_server)
    assert len(texts) == 6 and texts[0] == "瑶光的续航是多少？" and texts[1] == "请问还有什么可以帮您？"
    assert len(result["details"]["adjacent"]) == 5
