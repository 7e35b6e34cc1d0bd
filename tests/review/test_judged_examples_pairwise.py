"""`doctor --rules` on a `pairwise` rule: its examples are compared with its reference, each grading asked in
both orders, and the rule's position consistency is reported (docs/en/judges.md#comparing-two-bot-versions-pairwise)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body


def judge(pick: Callable[[dict[str, str]], str]) -> Callable[[dict[str, Any], int], Reply]:
    def script(request: dict[str, Any], n: int) -> Reply:
        sides = dict(re.findall(r'<side label="([AB])">\n(.*?)\n</side>', request["messages"][-1]["content"], re.S))
        return Reply(body=chat_body(json.dumps({"reason": "r", "winner": pick(sides)})))
    return script


def write(tmp: Path, server: OpenAIServer) -> Path:
    suite = tmp / "s.yaml"
    suite.write_text(f"""\
providers: [{{id: bot, model: openai/bot, api_base: "{server.base}"}}]
judge: {{model: openai/judge, api_base: "{server.base}"}}
tests:
  - id: t
    conversation:
      - user: 能分期吗？
    assert:
      - pairwise: {{reference: 可以分期, pass_if: better}}
        examples:
          pass: ['可以分期，首付两成，最长 36 期']
          fail: ['不知道']
""", encoding="utf-8")
    return suite


def test_a_judge_that_prefers_the_longer_side_is_position_consistent_and_grades_the_examples(in_tmp: Path) -> None:
    longer = judge(lambda s: "A" if len(s["A"]) > len(s["B"]) else "B")
    with OpenAIServer(longer) as server:
        code, out = invoke("doctor", "--rules", str(write(in_tmp, server)), "-o", "rules.json")
        assert len(server.chats()) == 8  # 2 examples x 2 gradings x 2 orders, never the bot
    assert code == 0, out
    [rule] = json.loads((in_tmp / "rules.json").read_text(encoding="utf-8"))["rules"]
    assert rule["position_consistency"] == 1.0
    assert "position consistency 100% of 4 gradings asked in both orders" in out


def test_a_judge_that_always_prefers_the_first_position_is_reported_inconsistent(in_tmp: Path) -> None:
    with OpenAIServer(judge(lambda s: "A")) as server:
        code, out = invoke("doctor", "--rules", str(write(in_tmp, server)), "-o", "rules.json")
    [rule] = json.loads((in_tmp / "rules.json").read_text(encoding="utf-8"))["rules"]
    assert rule["position_consistency"] == 0.0 and code == 1  # its pass example ties: it fails `better`
    assert "position consistency 0% of 4 gradings" in out and "pass example 1 of 'pairwise" in out
