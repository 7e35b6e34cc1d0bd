"""An unusable judge answer's error names `evalspec doctor`, which finds a form the model can answer in
(docs/en/review.md: "the judge could not be used")."""

from __future__ import annotations

from pathlib import Path

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.servers import OpenAIServer, Reply, chat_body

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def test_an_unusable_judge_answer_names_evalspec_doctor(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    with OpenAIServer(lambda r, n: Reply(body=chat_body("我觉得回答得不错。"))) as server:
        path.write_text(f"""\
providers:
  - id: bot
    python: {BOT}:respond
judge: {{model: openai/gpt-4o-mini, api_base: "{server.base}", api_key: sk-test}}
tests:
  - id: t
    conversation:
      - user: 能分期吗？
    assert:
      - llm-rubric: 助手回答了分期问题
""", encoding="utf-8")
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    [record] = data["results"]
    error = record["assertions"][0]["error"]
    assert record["status"] == "error" and "a refusal" in error and "`evalspec doctor`" in error, error
