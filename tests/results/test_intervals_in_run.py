"""run.json's error bars (docs/en/statistics.md): every pass rate's 95 % Wilson interval, pass@k and pass^k
of repeated tests (checked by hand), each critical rule's breach-rate bound, and the gate keys
`min_pass_hat_k` and `max_rate` — on real runs of a python bot whose passes are known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalspec.results.stats import clopper_pearson_upper, wilson
from tests import ROOT
from tests.helpers import invoke

RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))

# each test's repeats: "1" passes, "0" fails; a test id missing from PATTERN always passes;
# `leak` says 客户电话 13812345678 (a red line) on the repeats marked "L"
BOT = '''\
PATTERN = {"a": "11100", "b": "11111", "c": "00000", "d": "10101", "leak": "1L111"}


def respond(messages, context):
    base = context["test_id"].split("#")[0]
    mark = PATTERN.get(base, "1" * 1000)[context["repeat"] - 1]
    return {"1": "好的 ok", "0": "bad", "L": "ok 客户电话 13812345678"}[mark]
'''

RED_LINE = '''\
    - not-regex: "1[3-9]\\\\d{9}"
      severity: critical
'''


def suite(ids: list[str], repeat: int = 5, gate: str = "", max_rate: str = "") -> str:
    tests = "".join(f"  - id: {i}\n    conversation: [{{user: 你好, assert: [{{regex: ok}}]}}]\n" for i in ids)
    return (f"providers:\n  - id: bot\n    python: bot.py:respond\n{gate}"
            f"defaults:\n  repeat: {{n: {repeat}, pass: majority}}\n  assert:\n{RED_LINE}{max_rate}tests:\n{tests}")


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    return in_tmp


def run(project: Path, text: str, *args: str) -> tuple[int, str, dict[str, Any]]:
    (project / "s.yaml").write_text(text, encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-o", "run.json", *args)
    data = json.loads((project / "run.json").read_text(encoding="utf-8")) if code != 2 else {}
    if data:
        jsonschema.validate(data, RUN_SCHEMA)
    return code, out, data


def test_pass_at_k_and_pass_hat_k_of_a_known_pattern_are_the_hand_computed_ones(project: Path) -> None:
    code, _, data = run(project, suite(["a", "b", "c", "d"]))
    # a: 3 of 5, b: 5 of 5, c: 0 of 5, d: 3 of 5
    assert {v["test_id"]: (v["n"], v["c"]) for v in data["verdicts"]} == {"a": (5, 3), "b": (5, 5), "c": (5, 0),
                                                                       "d": (5, 3)}
    summary = data["summary"]
    # pass^2: (C(3,2)/C(5,2) + 1 + 0 + 3/10) / 4 = (0.3 + 1 + 0 + 0.3) / 4 = 0.4
    # pass@2: ((1 - C(2,2)/C(5,2)) + 1 + 0 + 0.9) / 4 = 0.7; pass^3: (1/10 + 1 + 0 + 1/10) / 4 = 0.3
    assert summary["pass_hat_k"] == pytest.approx([0.55, 0.4, 0.3, 0.25, 0.25])
    assert summary["pass_at_k"] == pytest.approx([0.55, 0.7, 0.75, 0.75, 0.75])
    assert summary["suites"][0]["pass_hat_k"] == summary["pass_hat_k"]
    # majority: a, b, d pass, c fails -> 3 of 4, interval by Wilson
    assert summary["pass_rate_ci"] == pytest.approx(list(wilson(3, 4)), abs=1e-6)
    assert data["gate"]["suites"][0]["pass_rate_ci"] == summary["pass_rate_ci"]
    assert code == 1  # c failed


def test_a_run_without_repeats_has_intervals_and_no_pass_k(project: Path) -> None:
    code, out, data = run(project, suite(["b", "x", "y"], repeat=1))
    assert code == 0
    assert data["summary"]["pass_rate_ci"] == pytest.approx(list(wilson(3, 3)), abs=1e-6)
    assert data["summary"]["pass_at_k"] == [] and data["summary"]["pass_hat_k"] == []
    assert all("c" not in v for v in data["verdicts"])
    assert "100% (" in out and "n=3)" in out  # the console prints the interval beside the rate


def test_every_critical_rule_has_its_breach_bound(project: Path) -> None:
    code, _, data = run(project, suite(["b", "leak"]))
    (line,) = data["summary"]["red_lines"]
    assert (line["suite"], line["n"], line["breaches"]) == ("s.yaml", 10, 1)
    assert line["rule"].startswith("not-regex: ")
    assert line["rate"] == pytest.approx(0.1)
    assert line["upper"] == pytest.approx(clopper_pearson_upper(1, 10), abs=1e-6)
    assert code == 1  # without max_rate a breach blocks as before
    assert "critical assertion failed" in " ".join(data["gate"]["reasons"])


def test_max_rate_passes_with_no_breach_in_300_conversations(project: Path) -> None:
    ids = [f"t{i}" for i in range(60)]
    code, out, data = run(project, suite(ids, max_rate="      max_rate: 0.01\n"))
    assert code == 0, out
    (line,) = data["summary"]["red_lines"]
    assert (line["n"], line["breaches"], line["max_rate"]) == (300, 0, 0.01)
    assert line["upper"] == pytest.approx(1 - 0.05 ** (1 / 300), abs=1e-6)
    assert data["gate"]["suites"][0]["red_lines"] == [
        "not-regex: 1[3-9]\\d{9}: 0 breaches in 300 conversations: breach rate < 1.0 % (95 %)"]


def test_max_rate_fails_with_no_breach_in_100_conversations_and_says_how_many_are_needed(project: Path) -> None:
    ids = [f"t{i}" for i in range(20)]
    code, out, data = run(project, suite(ids, max_rate="      max_rate: 0.01\n"))
    assert code == 1
    reasons = " ".join(data["gate"]["reasons"])
    assert "0 breaches in 100 conversations: not enough conversations to show < 1 %: need 299" in reasons


def test_under_max_rate_a_breach_fails_its_test_but_the_rule_does_not_block_by_itself(project: Path) -> None:
    text = suite(["b", "leak"], gate="gate: {min_pass_rate: 0.5}\n", max_rate="      max_rate: 0.5\n")
    code, out, data = run(project, text)
    leak = next(v for v in data["verdicts"] if v["test_id"] == "leak")
    assert leak["status"] == "failed" and not leak["critical_failed"]  # counted in the pass rate
    assert data["gate"]["pass_rate"] == 0.5
    assert code == 0, out  # 1 of 10 is under a 50 % bound: nothing blocks


def test_min_pass_hat_k_fails_the_gate_when_the_suites_pass_hat_k_is_below(project: Path) -> None:
    gate = "gate: {min_pass_rate: 0, min_pass_hat_k: {k: 2, min: 0.5}}\n"
    code, _, data = run(project, suite(["a", "b", "c", "d"], gate=gate))
    assert code == 1
    assert "s.yaml: pass^2 0.40 < 0.50" in data["gate"]["reasons"]
    gate = "gate: {min_pass_rate: 0, min_pass_hat_k: {k: 2, min: 0.4}}\n"
    code, _, data = run(project, suite(["a", "b", "c", "d"], gate=gate))
    assert code == 0, data["gate"]["reasons"]


@pytest.mark.parametrize(("repeat", "args", "words"), [
    (3, (), "k=4 is more than the smallest repeat count of the suite's repeated tests (3)"),
    (1, (), "no test of this suite repeats"),
    (5, ("--repeat", "3"), "k=4 is more than the smallest repeat count of the suite's repeated tests (3)"),
])
def test_min_pass_hat_k_beyond_the_repeats_is_a_validation_error(project: Path, repeat: int, args: tuple[str, ...],
                                                                 words: str) -> None:
    text = suite(["b"], repeat=repeat, gate="gate: {min_pass_hat_k: {k: 4, min: 0.8}}\n")
    code, out, _ = run(project, text, *args)
    assert code == 2 and words in out and "s.yaml:" in out, out
    assert not (project / "run.json").exists()  # nothing was called
    if not args:
        code, out = invoke("validate", "s.yaml")
        assert code == 2 and words in out, out


def test_repeat_from_the_command_line_makes_min_pass_hat_k_reachable(project: Path) -> None:
    text = suite(["b"], repeat=1, gate="gate: {min_pass_hat_k: {k: 3, min: 0.8}}\n")
    code, out, data = run(project, text, "--repeat", "3")
    assert code == 0, out
    assert data["summary"]["pass_hat_k"] == [1.0, 1.0, 1.0]
