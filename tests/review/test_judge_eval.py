"""`evalspec judge-eval`: a loopback judge graded against a labelled file whose figures were computed by hand."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evalspec.review.judge_eval import kappa
from tests import ROOT
from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body


def item(reply: str, label: Any, assertion: dict[str, Any] | None = None) -> str:
    transcript = [{"role": "user", "content": "能分期吗？"}, {"role": "assistant", "content": reply}]
    return json.dumps({"transcript": transcript, "assert": assertion or {"llm-rubric": "回答了分期问题"},
                       "label": label}, ensure_ascii=False)


def by_marker(request: dict[str, Any], n: int) -> Reply:
    """Passes a reply that carries [ok]; answers a level named in the reply after 'level='."""
    prompt = request["messages"][-1]["content"]
    if "level=" in prompt:
        level = prompt.split("level=", 1)[1].split()[0]
        return Reply(body=chat_body(json.dumps({"reason": "r", "level": level}, ensure_ascii=False)))
    return Reply(body=chat_body(json.dumps({"reason": "r", "pass": "[ok]" in prompt})))


# 10 items: (label, judge) = 5 × (T, T), 1 × (T, F), 3 × (F, F), 1 × (F, T)
# agreement 8/10 = 0.8; chance = (6·6 + 4·4) / 100 = 0.52; kappa = (0.8 - 0.52) / 0.48 = 0.583333
HAND = [item("[ok] 可以分期", True)] * 5 + [item("不知道", True)] + [item("不知道", False)] * 3 + [item("[ok]", False)]


def judge_arg(server: OpenAIServer) -> str:
    return f'{{model: openai/judge, api_base: "{server.base}"}}'


def test_kappa_matches_the_hand_computed_value() -> None:
    pairs = [(True, True)] * 5 + [(True, False)] + [(False, False)] * 3 + [(False, True)]
    assert kappa(pairs) == pytest.approx(0.583333, abs=1e-6)
    assert kappa([("a", "a"), ("b", "b")]) == 1.0 and kappa([]) is None


def test_judge_eval_reports_agreement_kappa_and_confusion(in_tmp: Path) -> None:
    labels = in_tmp / "labels.jsonl"
    labels.write_text("\n".join(HAND) + "\n", encoding="utf-8")
    with OpenAIServer(by_marker) as server:
        code, out = invoke("judge-eval", str(labels), "--judge", judge_arg(server), "-o", "eval.json")
    assert code == 0, out
    report = json.loads((in_tmp / "eval.json").read_text(encoding="utf-8"))
    assert report["agreement"] == 0.8 and report["kappa"] == pytest.approx(0.583333, abs=1e-6)
    assert report["confusion"] == {"true": {"true": 5, "false": 1}, "false": {"false": 3, "true": 1}}
    assert report["by_type"]["llm-rubric"] == {"items": 10, "answered": 10, "agreement": 0.8}
    assert "agreement 80.0%" in out and "kappa 0.583" in out


def test_min_agreement_not_reached_exits_1(in_tmp: Path) -> None:
    labels = in_tmp / "labels.jsonl"
    labels.write_text("\n".join(HAND), encoding="utf-8")
    with OpenAIServer(by_marker) as server:
        assert invoke("judge-eval", str(labels), "--judge", judge_arg(server), "--min-agreement", "0.9")[0] == 1
        assert invoke("judge-eval", str(labels), "--judge", judge_arg(server), "--min-agreement", "0.8")[0] == 0


def test_levels_are_categories_and_a_non_level_answer_is_an_error(in_tmp: Path) -> None:
    graded = {"follows-correction": None, "levels": "default"}
    lines = [item("level=立即纠正", "立即纠正", graded), item("level=部分纠正", "确认后纠正", graded),
             item("level=大概吧", "不纠正", graded)]
    (in_tmp / "labels.jsonl").write_text("\n".join(lines), encoding="utf-8")
    with OpenAIServer(by_marker) as server:
        code, out = invoke("judge-eval", "labels.jsonl", "--judge", judge_arg(server), "-o", "eval.json")
    report = json.loads((in_tmp / "eval.json").read_text(encoding="utf-8"))
    assert code == 0, out
    assert report["answered"] == 2 and report["errors"] == 1 and report["agreement"] == 0.5
    assert report["confusion"]["确认后纠正"] == {"部分纠正": 1} and report["confusion"]["不纠正"] == {"error": 1}
    assert "not one of" in report["results"][2]["error"]


def test_self_consistency_is_the_share_of_items_whose_samples_all_agree(in_tmp: Path) -> None:
    seen: Counter[str] = Counter()

    def wavering(request: dict[str, Any], n: int) -> Reply:
        prompt = request["messages"][-1]["content"]
        seen[prompt] += 1
        passed = "[ok]" in prompt if "[flip]" not in prompt else seen[prompt] % 2 == 1
        return Reply(body=chat_body(json.dumps({"reason": "r", "pass": passed})))

    lines = [item("[ok] 可以", True), item("不行", False), item("[flip]", True), item("[ok] 好", True)]
    (in_tmp / "labels.jsonl").write_text("\n".join(lines), encoding="utf-8")
    with OpenAIServer(wavering) as server:
        code, _ = invoke("judge-eval", "labels.jsonl", "--judge", judge_arg(server), "--samples", "3", "-o", "e.json")
    report = json.loads((in_tmp / "e.json").read_text(encoding="utf-8"))
    assert code == 0 and report["self_consistency"] == 0.75 and report["samples"] == 3
    assert report["results"][2]["answers"] == [True, False, True]


def test_a_suite_supplies_the_judge_and_bad_lines_are_named(in_tmp: Path) -> None:
    with OpenAIServer(by_marker) as server:
        (in_tmp / "s.yaml").write_text(f"providers: [{{id: bot, python: 'x.py:respond'}}]\njudge: {judge_arg(server)}\n"
                                       "tests: [{id: t, conversation: [{user: hi}]}]\n", encoding="utf-8")
        (in_tmp / "ok.jsonl").write_text(HAND[0], encoding="utf-8")
        code, out = invoke("judge-eval", "ok.jsonl", "--suite", "s.yaml")
        assert code == 0 and "agreement 100.0%" in out, out
    (in_tmp / "bad.jsonl").write_text(HAND[0] + "\n" + item("x", "maybe") + "\n{oops\n", encoding="utf-8")
    code, out = invoke("judge-eval", "bad.jsonl", "--judge", "openai/whatever")
    assert code == 2
    assert "bad.jsonl:2" in out and "no such level" in out and "bad.jsonl:3" in out and "not JSON" in out


def test_the_committed_mtbench101_label_set_loads() -> None:
    from evalspec.review.judge_eval import load_labels

    path = ROOT / "examples" / "judge-eval" / "mtbench101-labels.jsonl"
    items = load_labels(path)
    assert len(items) >= 40 and {i.label for i in items} == {True, False}
    assert all(i.transcript[-1]["role"] == "assistant" for i in items)


def test_examples_of_a_suite_s_judged_rules_are_graded_by_its_judge(in_tmp: Path) -> None:
    with OpenAIServer(by_marker) as server:
        suite = in_tmp / "s.yaml"
        text = (f"providers: [{{id: bot, python: bot.py:respond}}]\njudge: {judge_arg(server)}\ntests:\n"
                "  - id: t\n    conversation:\n      - user: 能分期吗？\n    assert:\n"
                "      - llm-rubric: 回答了分期问题\n        examples:\n"
                "          fail: [不知道]\n          pass: ['[ok] 可以分期', [{user: 能分期吗, label: q}, "
                "{assistant: '[ok] 首付两成'}]]\n"
                "      - not-contains: 电话\n        examples: {fail: [打我电话]}\n")
        suite.write_text(text, encoding="utf-8")
        code, out = invoke("judge-eval", "--examples", str(suite), "-o", "eval.json")
        assert code == 0, out
        report = json.loads((in_tmp / "eval.json").read_text(encoding="utf-8"))
        assert report["items"] == 3 and report["agreement"] == 1.0  # the deterministic rule is validate's
        assert report["results"][0]["example"] == f"{suite}:10: tests[0].assert[0].examples.fail[0]: fail example 1"
        suite.write_text(text.replace("fail: [不知道]", "fail: ['[ok] 不知道']"), encoding="utf-8")
        code, out = invoke("judge-eval", "--examples", str(suite))
    assert code == 1
    assert (f"wrong: {suite}:10: tests[0].assert[0].examples.fail[0]: fail example 1: the judge passed it — the rule "
            "does not catch this") in out


def test_judge_eval_needs_labels_or_examples(in_tmp: Path) -> None:
    code, out = invoke("judge-eval")
    assert code == 2 and "give LABELS.jsonl or --examples SUITE" in out
