"""The embedder closes its HTTP client when the run ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.servers import OpenAIServer

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
