"""Labels flow back (docs/en/judges.md#labels-flow-back): `few_shot: labels` shows a rule's human labels to its
judge; the judge's sensitivity and specificity on them correct a pass rate (Rogan–Gladen)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.assertions.labels import Label, accuracy
from evalspec.play.runner import RunOptions
from evalspec.results.corrected import corrected_rate, rogan_gladen
from tests.servers import OpenAIServer, Reply, chat_body

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def test_rogan_gladen_matches_a_published_example() -> None:
    # quadernodiepidemiologia.it (q1106r5): 100 sows, Se 18/20 = 0.9, Sp 64/80 = 0.8, apparent prevalence 0.34
    # -> real prevalence 0.2
    assert rogan_gladen(0.34, 0.9, 0.8) == pytest.approx(0.2)
    assert rogan_gladen(0.05, 0.9, 0.8) == 0.0 and rogan_gladen(0.99, 0.9, 0.8) == 1.0  # clipped
    assert rogan_gladen(0.5, 0.5, 0.5) is None  # no better than chance: no correction


def test_the_interval_is_the_wilson_interval_mapped_the_same_way() -> None:
    from evalspec.results.stats import wilson

    out = corrected_rate(34, 100, 0.9, 0.8)
    low, high = wilson(34, 100)  # type: ignore[misc]
    assert out["corrected"] == pytest.approx(0.2)
    assert out["interval"] == [pytest.approx((low + 0.8 - 1) / 0.7, abs=1e-6), pytest.approx((high + 0.8 - 1) / 0.7, abs=1e-6)]
    assert corrected_rate(5, 10, 0.4, 0.5)["no_better_than_chance"] is True


def test_sensitivity_and_specificity_come_from_what_the_person_said_of_the_judge() -> None:
    labels = [Label([], True, True)] * 9 + [Label([], True, False)] + [Label([], False, False)] * 8 + \
        [Label([], False, True)] * 2 + [Label([], True, None)]  # a line without `verdict` does not count
    assert accuracy(labels) == (0.9, 0.8, 20)


def label_line(reply: str, label: bool, verdict: str | None, rule: dict[str, Any]) -> str:
    line = {"transcript": [{"role": "user", "content": "能分期吗？"}, {"role": "assistant", "content": reply}],
            "assert": rule, "label": label, **({"verdict": verdict} if verdict else {})}
    return json.dumps(line, ensure_ascii=False)


def test_few_shot_labels_shows_the_rules_newest_six_labels_to_its_judge(in_tmp: Path) -> None:
    rule = {"llm-rubric": "回答了分期问题", "scope": "conversation"}
    lines = [label_line(f"回答{i}", i % 2 == 0, "right", rule) for i in range(8)]
    lines.append(label_line("别的规则", True, "right", {"llm-rubric": "礼貌"}))
    (in_tmp / ".evalspec").mkdir()
    (in_tmp / ".evalspec" / "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with OpenAIServer(lambda r, n: Reply(body=chat_body(json.dumps({"reason": "r", "pass": True})))) as server:
        suite = in_tmp / "s.yaml"
        suite.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge, api_base: "{server.base}"}}
tests:
  - id: t
    conversation: [{{user: 能分期吗？}}]
    assert:
      - llm-rubric: 回答了分期问题
        few_shot: labels
        description: 分期问题要答
        severity: critical
      - llm-rubric: 回答了分期问题
""", encoding="utf-8")
        run([suite], options=RunOptions(run_dir=in_tmp / "run", use_cache=False))
        shown, plain = (c["messages"][-1]["content"] for c in server.chats())
    if "Worked example" in plain:
        shown, plain = plain, shown
    assert "Worked example" not in plain
    assert [f"回答{i}" in shown for i in range(8)] == [False, False, True, True, True, True, True, True]
    assert shown.index("回答7") < shown.index("回答2")  # the newest first
    assert "Assistant: 回答7\nThe right answer: fail" in shown and "别的规则" not in shown


def test_a_rule_with_20_labels_gets_its_corrected_pass_rate_in_the_run(in_tmp: Path) -> None:
    from evalspec.reporters.markdown import render_markdown
    from evalspec.results.runjson import run_schema_problem

    rule = {"llm-rubric": "回答了分期问题"}
    lines = [label_line("对", True, "right", rule)] * 9 + [label_line("对", True, "wrong", rule)] + \
        [label_line("错", False, "right", rule)] * 8 + [label_line("错", False, "wrong", rule)] * 2
    (in_tmp / ".evalspec").mkdir()
    labels = in_tmp / ".evalspec" / "labels.jsonl"
    labels.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # 19 labels: not yet
    tests = "".join(f"  - id: t{i}\n    conversation: [{{user: 能分期吗？{i}}}]\n    assert: [{{llm-rubric: 回答了分期问题}}]\n"
                    for i in range(10))
    with OpenAIServer(lambda r, n: Reply(body=chat_body(json.dumps({"reason": "r", "pass": n % 2 == 0})))) as server:
        suite = in_tmp / "s.yaml"
        suite.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge, api_base: "{server.base}"}}
tests:
{tests}""", encoding="utf-8")
        before = run([suite], options=RunOptions(run_dir=in_tmp / "run1", use_cache=False)).data
        labels.write_text("\n".join(lines) + "\n", encoding="utf-8")
        server.reset()
        data = run([suite], options=RunOptions(run_dir=in_tmp / "run2", use_cache=False)).data
    assert "corrected" not in before["summary"]
    (line,) = data["summary"]["corrected"]
    assert (line["rule"], line["labels"], line["n"], line["passed"]) == ("llm-rubric: 回答了分期问题", 20, 10, 5)
    assert (line["sensitivity"], line["specificity"]) == (0.9, 0.8)
    assert line["corrected"] == pytest.approx((0.5 + 0.8 - 1) / 0.7, abs=1e-6)
    assert run_schema_problem(data) is None
    assert "corrected from 20 labels" in render_markdown(data, lang="en")
    assert "据 20 条人工标注校正" in render_markdown(data, lang="zh")
