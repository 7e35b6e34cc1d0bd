"""The embedder closes its HTTP client when the run ends, and is retried like any call."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalspec.app.api import load
from evalspec.providers.factory import ProviderPool
from tests.servers import OpenAIServer, Reply, echo

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def test_an_embedder_run_leaves_no_unclosed_client_session(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        path = tmp_path / "s.yaml"
        path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
embedder: {{model: openai/embed, api_base: "{server.base}"}}
tests: [{{id: t, conversation: [{{user: 你好}}, {{user: 再见}}], assert: [{{similar: 你好, threshold: 0}}]}}]
""", encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "evalspec.app.cli.main", "run", str(path), "--no-cache", "-q",
                               "-o", str(tmp_path / "run.json")], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120)
    assert done.returncode == 0, done.stderr
    assert any("/embeddings" in p for p in server.paths)
    assert "Unclosed" not in done.stderr


@pytest.mark.parametrize("status", [503, 429])
def test_an_embedder_call_is_retried_on_a_busy_answer_like_a_chat_call(tmp_path: Path, status: int) -> None:
    """The embedder goes through `ProviderCaller` (limits, time-out, retries): a 503/429 is asked again."""
    def busy_once(request: dict[str, Any], n: int) -> Reply:
        if n == 0:
            return Reply(status, {"error": {"message": "busy"}}, headers={"Retry-After": "0"})
        return echo(request, n)

    with OpenAIServer(busy_once) as server:
        path = tmp_path / "s.yaml"
        path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
embedder: {{model: openai/embed, api_base: "{server.base}"}}
tests: [{{id: t, conversation: [{{user: 你好}}], assert: [{{similar: 你好, threshold: 0}}]}}]
""", encoding="utf-8")
        suites = load([path])

        async def go() -> list[list[float]]:
            pool = ProviderPool(suites, None)
            try:
                embed = pool.embed_fn(suites[0])
                assert embed is not None
                return await embed(["你好", "再见"])
            finally:
                await pool.aclose()

        vectors = asyncio.run(go())
    assert len(vectors) == 2 and vectors[0] != vectors[1]
    assert [p for p in server.paths if p.endswith("/embeddings")] == ["/v1/embeddings"] * 2
