"""`doctor --rules` with a jury: each member's answers, wrong answers, abstentions and leniency on the rule's
examples (docs/en/judges.md#juries), beside the jury's own verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body


def members(request: dict[str, Any], n: int) -> Reply:
    """`honest` fails a reply that does not know, `lenient` passes everything, `down` is down."""
    model, shown = request["model"], request["messages"][-1]["content"]
    if model == "down":
        return Reply(status=500, body={"error": {"message": "down is down"}})
    passed = model == "lenient" or "不知道" not in shown
    return Reply(body=chat_body(json.dumps({"reason": "看回答", "pass": passed}, ensure_ascii=False), model=model))


def test_doctor_rules_reports_each_member_of_a_jury(in_tmp: Path) -> None:
    with OpenAIServer(members) as server:
        judges = ", ".join(f'{{model: openai/{m}, api_base: "{server.base}", retries: 0}}'
                           for m in ("honest", "lenient", "down"))
        (in_tmp / "s.yaml").write_text(f"""\
providers: [{{id: bot, python: bot.py:respond}}]
judge: [{judges}]
jury: {{quorum: 2}}
tests:
  - id: t
    conversation: [{{user: 能分期吗？}}]
    assert:
      - llm-rubric: 助手回答了能不能分期
        examples:
          pass: ['可以分期，首付两成起。']
          fail: ['我不知道。']
""", encoding="utf-8")
        code, out = invoke("doctor", "s.yaml", "--rules", "-o", "rules.json")
    assert code == 0, out  # the honest member and the lenient one tie on the fail example: a tie fails
    [rule] = json.loads((in_tmp / "rules.json").read_text(encoding="utf-8"))["rules"]
    assert rule["problems"] == [] and rule["leniency"] == 0
    assert rule["members"] == [
        {"judge": "openai/honest", "answers": 4, "wrong": 0, "abstained": 0, "leniency": 0},
        {"judge": "openai/lenient", "answers": 4, "wrong": 2, "abstained": 0, "leniency": 1},
        {"judge": "openai/down", "answers": 0, "wrong": 0, "abstained": 4, "leniency": None},
    ]
    assert "openai/lenient: 4 answers, 2 wrong, 0 abstained; leniency 100%" in out
    assert "openai/down: 0 answers, 0 wrong, 4 abstained; leniency —" in out


def test_doctor_rules_with_one_judge_lists_no_members(in_tmp: Path) -> None:
    with OpenAIServer(members) as server:
        (in_tmp / "s.yaml").write_text(f"""\
providers: [{{id: bot, python: bot.py:respond}}]
judge: {{model: openai/honest, api_base: "{server.base}"}}
tests:
  - id: t
    conversation: [{{user: 能分期吗？}}]
    assert:
      - llm-rubric: 助手回答了能不能分期
        examples: {{fail: ['我不知道。']}}
""", encoding="utf-8")
        code, out = invoke("doctor", "s.yaml", "--rules", "-o", "rules.json")
    assert code == 0, out
    [rule] = json.loads((in_tmp / "rules.json").read_text(encoding="utf-8"))["rules"]
    assert "members" not in rule
