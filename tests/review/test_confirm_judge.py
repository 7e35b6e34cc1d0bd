"""Confirmation replays bypass the judge's cache too: a judge that said 'fail' once is asked again, live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalspec.app.cli.main import main
from tests.servers import OpenAIServer, Reply, chat_body

PASS = '{"reason": "answered the year", "pass": true}'
FAIL = '{"reason": "no year given", "pass": false}'


def test_a_judge_verdict_that_flips_on_replay_makes_the_test_flaky_not_regressed(in_tmp: Path) -> None:
    fails_left = {"n": 0}

    def judge(request: dict[str, Any], n: int) -> Reply:
        if fails_left["n"]:
            fails_left["n"] -= 1
            return Reply(body=chat_body(FAIL))
        return Reply(body=chat_body(PASS))

    (in_tmp / "bot.py").write_text("def respond(messages, context):\n    return 'It is a 2024 car.'\n")
    with OpenAIServer(judge) as server:
        (in_tmp / "s.yaml").write_text(f"""\
providers:
  - id: bot
    python: bot.py:respond
judge: {{model: openai/judge-model, api_base: "{server.base}"}}
tests:
  - id: year
    conversation:
      - user: Which year is this car?
        assert: [{{llm-rubric: says which year the car is from}}]
""", encoding="utf-8")
        runner = CliRunner()
        base = runner.invoke(main, ["run", "s.yaml", "-o", "base.json", "--no-cache"])
        assert base.exit_code == 0, base.output
        fails_left["n"] = 1  # HEAD's judge call fails (and is cached); a replay through the cache would too
        head = runner.invoke(main, ["run", "s.yaml", "-o", "head.json", "--baseline", "base.json",
                                    "--gate", "regressions", "--confirm", "2"])
        calls = len(server.chats())
    data = json.loads((in_tmp / "head.json").read_text(encoding="utf-8"))
    (row,) = data["baseline"]["rows"]
    assert (row["category"], row["replays"]) == ("flaky", ["passed", "passed"])
    assert head.exit_code == 0, head.output
    assert calls == 4  # base, HEAD, and two live replays
