"""`gate.use_corrected` and the corrected pass rate of `summary.corrected`, against hand-computed Rogan–Gladen
values (docs/en/reports-and-gate.md#corrected-pass-rate, docs/en/judges.md#labels-flow-back).

The worked example is the one of quadernodiepidemiologia.it (q1106r5): a test with sensitivity 18/20 = 0.9
and specificity 64/80 = 0.8 finds 34 % positive; the true prevalence is (0.34 + 0.8 − 1) / (0.9 + 0.8 − 1)
= 0.2. Here the test is the judge, the 100 animals of the validation study are 100 human labels, and the
apparent prevalence is 17 passed conversations of 50."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"
ASKED = re.compile(r"能分期吗？(\d+)")
INSTALMENTS = {"llm-rubric": "回答了分期问题"}
POLITE = {"llm-rubric": "语气礼貌"}
# the hand-computed 95 % Wilson interval of 17 in 50 (z = 1.959964), each end mapped by Rogan–Gladen
WILSON_17_OF_50 = (0.224370, 0.478462)
MAPPED = tuple((x + 0.8 - 1) / 0.7 for x in WILSON_17_OF_50)  # (0.034814, 0.397803)


def judged_pass_below(passing: int) -> Any:
    """A judge that passes the conversations asked `能分期吗？i` with i < `passing`, whatever the order."""
    def script(body: dict[str, Any], n: int) -> Reply:
        asked = ASKED.search(body["messages"][-1]["content"])
        return Reply(body=chat_body(json.dumps({"reason": "r", "pass": asked is not None and int(asked[1]) < passing})))
    return script


def label_lines(rule: dict[str, str], positives: tuple[int, int], negatives: tuple[int, int]) -> list[str]:
    """Labels of `rule`: (right, wrong) marks on conversations that should pass, then on ones that should fail."""
    def line(label: bool, verdict: str) -> str:
        return json.dumps({"transcript": [{"role": "user", "content": "能分期吗？"}, {"role": "assistant", "content": "可以"}],
                           "assert": rule, "label": label, "verdict": verdict}, ensure_ascii=False)
    return ([line(True, "right")] * positives[0] + [line(True, "wrong")] * positives[1]
            + [line(False, "right")] * negatives[0] + [line(False, "wrong")] * negatives[1])


def write_labels(folder: Path, lines: list[str]) -> None:
    (folder / ".evalspec").mkdir(exist_ok=True)
    (folder / ".evalspec" / "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_suite(folder: Path, server: OpenAIServer, gate: str, rules: tuple[dict[str, str], ...] = (INSTALMENTS,),
                n: int = 50, lang: str = "en") -> None:
    """`n` tests asking `能分期吗？i`, the rules taking turns."""
    tests = "".join(f"  - id: t{i}\n    conversation: [{{user: 能分期吗？{i}}}]\n"
                    f"    assert: [{json.dumps(rules[i % len(rules)], ensure_ascii=False)}]\n" for i in range(n))
    (folder / "s.yaml").write_text(f"""\
options: {{cache: false}}
report: {{lang: {lang}}}
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge, api_base: "{server.base}"}}
gate: {gate}
tests:
{tests}""", encoding="utf-8")


def test_the_published_example_corrects_the_rule_and_the_gate_to_its_hand_computed_values(in_tmp: Path) -> None:
    write_labels(in_tmp, label_lines(INSTALMENTS, (18, 2), (64, 16)))  # sensitivity 0.9, specificity 0.8
    with OpenAIServer(judged_pass_below(17)) as server:
        write_suite(in_tmp, server, "{min_pass_rate: 0.3}")
        raw_code, raw_out = invoke("run", "s.yaml", "-o", "raw.json")
        write_suite(in_tmp, server, "{min_pass_rate: 0.3, use_corrected: true}")
        code, out = invoke("run", "s.yaml", "-o", "run.json")
    raw, data = (json.loads((in_tmp / name).read_text(encoding="utf-8")) for name in ("raw.json", "run.json"))
    # summary.corrected: the rule's own correction, with or without the gate key
    (line,) = data["summary"]["corrected"]
    assert (line["labels"], line["n"], line["passed"], line["raw"]) == (100, 50, 17, 0.34)
    assert (line["sensitivity"], line["specificity"]) == (0.9, 0.8)
    assert line["corrected"] == pytest.approx(0.2, abs=1e-6)
    assert line["interval"] == [pytest.approx(x, abs=1e-4) for x in MAPPED]
    assert raw["summary"]["corrected"] == data["summary"]["corrected"]
    # the gate keeps the raw rate unless asked: 34 % passes 30 %, the corrected 20 % does not
    assert raw_code == 0 and raw["gate"]["passed"] and "corrected" not in raw["gate"]["suites"][0], raw_out
    assert code == 1, out
    (suite,) = data["gate"]["suites"]
    assert suite["pass_rate"] == 0.34  # the raw rate stays what the verdicts say
    assert suite["corrected"]["labels"] == 100
    assert suite["corrected"]["corrected"] == pytest.approx(0.2, abs=1e-6)
    assert suite["corrected"]["interval"] == [pytest.approx(x, abs=1e-4) for x in MAPPED]
    assert suite["reasons"] == ["corrected pass rate 20.00% < 30.00% (raw 34.00%, corrected from 100 labels)"]
    assert "corrected pass rate 20.00% < 30.00% (raw 34.00%, corrected from 100 labels)" in out
    assert "compared the pass rate corrected from 100 labels, 20%" in out
    from evalspec.reporters.markdown import render_markdown
    from evalspec.results.runjson import run_schema_problem

    assert run_schema_problem(data) is None

    report = render_markdown(data, lang="en")  # the worked example of docs/en/judges.md#labels-flow-back
    assert ("34% raw → 20% (3%–40%), corrected from 100 labels (judge sensitivity 90%, specificity 80%)" in report
            and "compared the pass rate corrected from 100 labels, 20% (raw 34%" in report)


def test_the_suites_rate_is_corrected_with_the_accuracy_pooled_over_its_judged_rules(in_tmp: Path) -> None:
    # one rule: sensitivity 1, specificity 0.75; the other 0.8 and 0.85; pooled 18/20 = 0.9 and 64/80 = 0.8
    write_labels(in_tmp, label_lines(INSTALMENTS, (10, 0), (30, 10)) + label_lines(POLITE, (8, 2), (34, 6)))
    with OpenAIServer(judged_pass_below(17)) as server:
        write_suite(in_tmp, server, "{min_pass_rate: 0.1, use_corrected: true}", rules=(INSTALMENTS, POLITE))
        code, out = invoke("run", "s.yaml", "-o", "run.json")
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    assert code == 0, out
    corrected = data["gate"]["suites"][0]["corrected"]
    assert (corrected["labels"], corrected["sensitivity"], corrected["specificity"]) == (100, 0.9, 0.8)
    assert corrected["corrected"] == pytest.approx(0.2, abs=1e-6)
    rules = {x["rule"]: x for x in data["summary"]["corrected"]}  # each rule corrected on its own labels
    assert (rules["llm-rubric: 回答了分期问题"]["sensitivity"], rules["llm-rubric: 回答了分期问题"]["specificity"]) == (1.0, 0.75)
    assert (rules["llm-rubric: 语气礼貌"]["sensitivity"], rules["llm-rubric: 语气礼貌"]["specificity"]) == (0.8, 0.85)


@pytest.mark.parametrize(("positives", "negatives", "reason", "said"), [
    ((10, 10), (10, 10), "pass rate 40.00% < 50.00% (not corrected: on its 40 labels the judge is no better than chance)",
     "在 40 条人工标注上评审不比随机猜测好"),
    ((10, 0), (9, 0), "pass rate 40.00% < 50.00% (not corrected: 19 labels; at least 20, some that pass and some "
                      "that fail, are needed)", "只有 19 条人工标注"),
])
def test_without_a_correction_the_gate_compares_the_raw_rate_and_says_why(
        in_tmp: Path, positives: tuple[int, int], negatives: tuple[int, int], reason: str, said: str) -> None:
    write_labels(in_tmp, label_lines(INSTALMENTS, positives, negatives))
    with OpenAIServer(judged_pass_below(4)) as server:
        write_suite(in_tmp, server, "{min_pass_rate: 0.5, use_corrected: true}", n=10, lang="zh")
        code, out = invoke("run", "s.yaml", "-o", "run.json")
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    assert code == 1, out
    (suite,) = data["gate"]["suites"]
    assert suite["reasons"] == [reason]
    assert suite["corrected"].get("corrected") is None and suite["corrected"]["raw"] == 0.4
    assert said in out  # the console, in the report's language


def test_grade_corrects_the_rate_with_the_labels_file_as_it_is_now(in_tmp: Path) -> None:
    with OpenAIServer(judged_pass_below(17)) as server:
        write_suite(in_tmp, server, "{min_pass_rate: 0.3, use_corrected: true}", lang="zh")
        code, out = invoke("run", "s.yaml", "-o", "run.json")
        before = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
        assert code == 0 and "corrected" not in before["summary"], out  # no labels yet: the raw 34 %
        assert before["gate"]["suites"][0]["corrected"] == {"labels": 0, "raw": 0.34}
        write_labels(in_tmp, label_lines(INSTALMENTS, (18, 2), (64, 16)))
        code, out = invoke("grade", "run.json", "-o", "graded.json")
    graded = json.loads((in_tmp / "graded.json").read_text(encoding="utf-8"))
    assert code == 1, out
    assert graded["summary"]["corrected"][0]["corrected"] == pytest.approx(0.2, abs=1e-6)
    assert graded["gate"]["suites"][0]["corrected"]["corrected"] == pytest.approx(0.2, abs=1e-6)
    assert graded["gate"]["exit_code"] == 1
    assert "校正后的通过率 20.00% < 30.00%（原始 34.00%，据 100 条人工标注校正）" in out
    assert "比较的是据 100 条人工标注校正后的通过率 20%" in out
