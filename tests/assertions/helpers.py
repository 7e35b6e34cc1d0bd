"""What the assertion tests share: a loopback judge with scripted answers and a two-turn suite over the
demo bot graded by it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.servers import OpenAIServer, Reply, chat_body

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def judged(answer: str | list[str]) -> OpenAIServer:
    answers = answer if isinstance(answer, list) else [answer]
    return OpenAIServer(lambda r, n: Reply(body=chat_body(answers[n % len(answers)])))


def go(tmp_path: Path, server: OpenAIServer, asserts: str, extra: str = "") -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers:
  - id: bot
    python: {BOT}:respond
judge: {{model: openai/judge-model, api_base: "{server.base}"}}
embedder: {{model: openai/embed-model, api_base: "{server.base}"}}
{extra}
tests:
  - id: t
    conversation:
      - user: 这台瑶光是哪年的车？
      - user: 能分期吗？
    assert:
{asserts}
""", encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
