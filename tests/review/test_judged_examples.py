"""Judged rules prove themselves before a run: `run --check-judges` and `doctor --rules` grade the `examples:` of
model-graded rules with their own judge, twice, uncached (docs/en/judges.md#examples-of-judged-rules)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body


def judging(verdict: Callable[[str, int], bool]) -> Callable[[dict[str, Any], int], Reply]:
    """The judge (model `judge`) answers `verdict(prompt, n)`; the system under test (model `bot`) says 你好."""
    def script(request: dict[str, Any], n: int) -> Reply:
        if request["model"] == "bot":
            return Reply(body=chat_body("[ok] 可以分期"))
        passed = verdict(request["messages"][-1]["content"], n)
        return Reply(body=chat_body(json.dumps({"reason": "r", "pass": passed})))
    return script


def honest(prompt: str, n: int) -> bool:
    return "[ok]" in prompt


def write(tmp: Path, server: OpenAIServer, fail: str = "[不知道]") -> Path:
    suite = tmp / "s.yaml"
    suite.write_text(f"""\
providers: [{{id: bot, model: openai/bot, api_base: "{server.base}"}}]
judge: {{model: openai/judge, api_base: "{server.base}"}}
tests:
  - id: t
    conversation:
      - user: 能分期吗？
    assert:
      - llm-rubric: 回答了分期问题
        examples:
          fail: {fail}
          pass: ['[ok] 可以分期']
""", encoding="utf-8")
    return suite


def models(server: OpenAIServer) -> list[str]:
    return [c["model"] for c in server.chats()]


def test_check_judges_grades_each_example_twice_uncached_then_runs(in_tmp: Path) -> None:
    with OpenAIServer(judging(honest)) as server:
        suite = write(in_tmp, server)
        code, out = invoke("run", str(suite), "--check-judges", "-o", "run.json")
        assert code == 0, out
        judged = [c for c in server.chats() if c["model"] == "judge"]
        assert len(judged) == 2 * 2 + 1  # two examples twice, then the run's own check
        assert models(server).index("bot") == 4  # every example before the system under test's first call
        server.reset()
        code, out = invoke("run", str(suite), "--check-judges", "-o", "run.json")
        assert code == 0, out
        assert models(server).count("judge") == 4  # the examples again (the run's check is cached)


def test_a_misgraded_example_stops_the_run_before_any_call_to_the_system(in_tmp: Path) -> None:
    with OpenAIServer(judging(lambda prompt, n: True)) as server:  # a judge that passes everything
        suite = write(in_tmp, server)
        code, out = invoke("run", str(suite), "--check-judges")
        assert code == 2
        assert "bot" not in models(server)
    assert (f"{suite}:10: tests[0].assert[0].examples.fail[0]: fail example 1 of 'llm-rubric: 回答了分期问题': the judge "
            "passed it — the rule does not catch this (2 times)") in out


def test_an_inconsistent_example_is_a_config_error(in_tmp: Path) -> None:
    with OpenAIServer(judging(lambda prompt, n: "[ok]" in prompt or n % 2 == 1)) as server:
        code, out = invoke("run", str(write(in_tmp, server)), "--check-judges")
        assert code == 2 and "bot" not in models(server)
    assert "fail example 1 of 'llm-rubric: 回答了分期问题': the judge is inconsistent on it: it failed once and " \
           "passed once" in out


def test_doctor_rules_reports_leniency_and_exits_1_on_a_wrong_example(in_tmp: Path) -> None:
    with OpenAIServer(judging(honest)) as server:
        suite = write(in_tmp, server, fail="[不知道, '[ok] 问问别人']")
        code, out = invoke("doctor", "--rules", str(suite), "-o", "rules.json")
        assert "bot" not in models(server)
    assert code == 1
    report = json.loads((in_tmp / "rules.json").read_text(encoding="utf-8"))["rules"]
    assert report[0]["rule"] == "llm-rubric: 回答了分期问题" and report[0]["leniency"] == 0.5
    assert report[0]["examples"] == 3 and report[0]["fail_examples"] == 2
    assert "WRONG llm-rubric: 回答了分期问题  (3 examples; leniency 50% yes on 2 fail examples)" in out
    assert "fail example 2 of 'llm-rubric: 回答了分期问题': the judge passed it" in out
    with OpenAIServer(judging(honest)) as server:
        code, out = invoke("doctor", "--rules", str(write(in_tmp, server)))
    assert code == 0 and "ok    llm-rubric: 回答了分期问题  (2 examples; leniency 0% yes on 1 fail examples)" in out


def test_a_jury_grades_the_examples_too(in_tmp: Path) -> None:
    with OpenAIServer(judging(honest)) as server:
        suite = write(in_tmp, server)
        judge = f'{{model: openai/judge, api_base: "{server.base}"}}'
        suite.write_text(suite.read_text(encoding="utf-8").replace(
            f"judge: {judge}", f'judge: [{judge}, {{id: second, model: openai/judge, api_base: "{server.base}"}}]'),
            encoding="utf-8")
        code, out = invoke("doctor", "--rules", str(suite))
        assert code == 0, out
        assert models(server).count("judge") == 2 * 2 * 2  # two examples, twice, two members
