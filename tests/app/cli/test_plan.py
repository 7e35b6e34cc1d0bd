"""`evalspec plan` (docs/en/statistics.md#how-much-is-enough): what a plan can show, offline. Figures are
checked by hand and against tests/results/test_stats.py's published values (Connor 1987; Hanley &
Lippman-Hand 1983)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalspec.app.cli.plan import verdict_discordance, verdict_flip, verdict_pass_chance
from evalspec.results.stats import detectable_drop
from tests.helpers import invoke

BOT = """\
def respond(messages, context):
    # the first two repeats of an instance pass, the others do not: 2 of 4 passed
    return "ok" if context["repeat"] <= 2 else "no"
"""

SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
defaults:
  assert:
    - not-regex: "1[3-9]\\\\d{9}"
      severity: critical
tests:
  - id: greet
    repeat: 5
    conversation:
      - user: hello there
  - id: sizes
    matrix: {size: [s, m, l, xl, xxl]}
    conversation:
      - user: "size {{ size }} please"
  - id: wip
    draft: true
    repeat: 3
    conversation:
      - user: a draft
"""


def write(tmp: Path, text: str = SUITE, name: str = "s.yaml") -> Path:
    (tmp / "bot.py").write_text(BOT, encoding="utf-8")
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def test_plan_counts_what_is_planned_and_what_it_can_show(in_tmp: Path) -> None:
    """greet × 5 + sizes × 5 values + a draft × 3: 7 instances, 13 conversations; a pair is a gated instance's
    verdict, as the paired gate compares them: 6 pairs (greet's 5 repeats make one verdict). The critical rule
    is decided on the 10 gated conversations: with no breach its bound is 1 − 0.05^(1/10) = 25.9 % (Hanley &
    Lippman-Hand: 0.26). A drop of 10 points needs 122 pairs with ψ = 0.2 (by hand:
    (1.6449·√0.2 + 0.8416·√0.19)²/0.01 = 121.5): 122 instances, 116 more than planned."""
    path = write(in_tmp)
    code, out = invoke("plan", str(path), "-o", "plan.json", "--lang", "en")
    assert code == 0, out
    assert "7 instances × 1–5 repeats = 13 conversations (6 paired against a baseline)" in out, out
    assert "122 instances needed, 6 planned — add 116 instances (more repeats add no pair)" in out, out
    assert "breach rate < 25.9% (95%) over 10 conversations" in out and "s.yaml:6" in out, out
    assert "discordance: assumed 2 × the drop" in out
    report = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    (suite,) = report["suites"]
    assert (suite["instances"], suite["conversations"], suite["pairs"]) == (7, 13, 6)
    assert suite["needed"] == {"detect": 0.1, "instances": 122, "enough": False}
    assert suite["detectable_drop"] == detectable_drop(6)
    assert suite["with_repeats"] == []  # without a baseline repeats change nothing the plan can know
    assert f"detects: {suite['detectable_drop'] * 100:.3g} percentage points (power 80%, one-sided α 0.05)" in out
    assert suite["red_lines"][0]["upper"] == pytest.approx(0.259, abs=5e-4)


def test_plan_says_enough_when_the_planned_instances_suffice(in_tmp: Path) -> None:
    """sizes over 125 values: 126 gated instances ≥ 122; --repeat 25 on 6 instances is still 6 pairs."""
    code, out = invoke("plan", str(write(in_tmp)), "--repeat", "25", "--lang", "en")
    assert code == 0, out
    assert "122 instances needed, 6 planned — add 116 instances" in out, out
    many = SUITE.replace("[s, m, l, xl, xxl]", "[" + ", ".join(f"v{i}" for i in range(125)) + "]")
    code, out = invoke("plan", str(write(in_tmp, many)), "--lang", "en")
    assert code == 0, out
    assert "122 instances needed, 126 planned — enough" in out, out


def test_plan_reads_the_discordance_from_the_baseline(in_tmp: Path) -> None:
    """A baseline played for real: greet passes 2 of its 4 repeats, so a play passes with p = 0.5 and its verdict
    (rule `all`, 4 repeats) with q = 0.5⁴ = 0.0625: it flips between two runs 2q(1 − q) = 11.7 % of the time
    (the sizes verdicts did not repeat: they tell nothing). ψ = 0.1172 + 0.1; by hand
    (1.6449·√0.2172 + 0.8416·√0.2072)²/0.01 = 132.2 → 133 instances (4 plays cannot make two runs of 4
    without replacement: q comes from p = c/n). At 1 repeat two of greet's 4 plays differ 2·2·2/(4·3) = 2/3
    of the time: ψ = 0.7667 → (1.6449·√0.7667 + 0.8416·√0.7567)²/0.01 = 471.9 → 472; at 3: q = 0.125, flips 21.9 %, → 195; at 5: q = 1/32, 6.05 %, → 98; at 10:
    q = 1/1024, 0.195 %, → 61."""
    path = write(in_tmp, SUITE.replace("repeat: 5", "repeat: 4").replace("- user: hello there",
                                                                         "- user: hello there\n        assert: [{contains: ok}]"))
    code, out = invoke("run", str(path), "-o", "base.json", "--no-cache", "-q")
    assert code == 1, out
    code, out = invoke("plan", str(path), "--baseline", "base.json", "-o", "plan.json", "--lang", "en")
    assert code == 0, out
    assert "verdict flips between two runs 11.7% of the time" in out, out
    assert "133 instances needed, 6 planned — add 127 instances" in out, out
    assert "with 3 repeats per test: verdicts flip 21.9% of the time, 195 instances needed" in out, out
    (suite,) = json.loads(Path("plan.json").read_text(encoding="utf-8"))["suites"]
    assert suite["discordance"] == {"source": "baseline", "noise": pytest.approx(2 * 0.0625 * 0.9375)}
    assert suite["needed"]["instances"] == 133
    assert [(o["repeat"], o["instances"]) for o in suite["with_repeats"]] == [(1, 472), (3, 195), (5, 98), (10, 61)]
    assert suite["with_repeats"][2]["noise"] == pytest.approx(2 * (1 / 32) * (31 / 32))


@pytest.mark.parametrize(("p", "repeats", "rule", "chance"), [
    (0.9, 2, "all", 0.81),                  # both plays pass
    (0.8, 3, "majority", 0.896),            # 3·0.8²·0.2 + 0.8³ = 0.384 + 0.512
    (0.8, 4, "majority", 0.8192),           # more than half of 4 is 3 or 4: 4·0.8³·0.2 + 0.8⁴ = 0.4096 + 0.4096
    (0.5, 3, "any", 0.875),                 # 1 − 0.5³
    (0.5, 5, 0.6, 0.5),                     # at least 3 of 5: (10 + 5 + 1)/32
])
def test_a_verdicts_pass_chance_follows_its_repeat_rule(p: float, repeats: int, rule: str | float,
                                                        chance: float) -> None:
    assert verdict_pass_chance(p, repeats, rule) == pytest.approx(chance)


@pytest.mark.parametrize(("n", "c", "repeats", "rule", "flip"), [
    (4, 2, 1, "all", 2 / 3),        # 2c(n − c)/(n(n − 1)): 2·2·2/12
    (5, 4, 2, "all", 0.8),          # 4 of 5 plays drawn, 2 and 2: the runs differ iff the one failed play is drawn
    (10, 7, 2, "all", 0.6),         # 2 · C(7,2)/C(10,2) · (1 − C(5,2)/C(8,2)) = 2 · 21/45 · 18/28
    (6, 3, 3, "majority", 1.0),     # 3 passes split 2–1 or 3–0: one run's majority is always the other's minority
])
def test_a_verdicts_flip_is_drawn_from_the_baseline_plays(n: int, c: int, repeats: int, rule: str,
                                                          flip: float) -> None:
    assert verdict_flip(n, c, repeats, rule) == pytest.approx(flip)


def test_the_discordance_is_of_verdicts_not_of_plays() -> None:
    """Two plays of an instance with p = 0.8 disagree 32 % of the time, but its majority-of-3 verdict
    (q = 0.896) flips only 2·0.896·0.104 = 18.6 %; a verdict that did not repeat tells nothing."""
    assert verdict_discordance([(5, 4, 3, "majority"), (1, 1, 3, "majority")]) == pytest.approx(2 * 0.896 * 0.104)
    assert verdict_discordance([(1, 0, 1, "all")]) is None


def test_plan_speaks_the_suites_language(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSPEC_LANG")  # tests/conftest.py sets it
    path = write(in_tmp, SUITE.replace("hello there", "你好，请问周末营业吗？")
                 .replace("size {{ size }} please", "请问 {{ size }} 码还有货吗？").replace("a draft", "草稿"))
    code, out = invoke("plan", str(path))
    assert code == 0, out
    assert "计划：7 个实例 × 重复 1–5 次 = 13 段对话" in out and "需要 122 个实例" in out, out
    assert "违规率 < 25.9%（95%），共 10 段对话" in out, out
    assert "planned" not in out
    code, out = invoke("plan", str(path), "--lang", "en")
    assert "planned: 7 instances" in out, out
    monkeypatch.setenv("EVALSPEC_LANG", "en")
    assert "planned: 7 instances" in invoke("plan", str(path))[1]
    code, out = invoke("plan", str(write(in_tmp, SUITE + "report: {lang: zh}\n")))  # the suite's report.lang wins
    assert "计划：7 个实例" in out, out


def test_plan_shows_a_dash_where_there_is_no_verdict(in_tmp: Path) -> None:
    path = write(in_tmp, SUITE.replace("  - id: greet\n", "  - id: greet\n    draft: true\n")
                 .replace("  - id: sizes\n", "  - id: sizes\n    draft: true\n"))
    code, out = invoke("plan", str(path), "--lang", "en", "-o", "plan.json")
    assert code == 0, out
    assert "paired test detects: — (too few pairs)" in out, out
    assert "the suite plans no gated conversation" in out and "critical rules: none" in out, out
    (suite,) = json.loads(Path("plan.json").read_text(encoding="utf-8"))["suites"]
    assert suite["detectable_drop"] is None and suite["pairs"] == 0


@pytest.mark.parametrize("args", [("--detect", "0"), ("--power", "1"), ("--alpha", "1.5")])
def test_plan_refuses_a_level_outside_zero_to_one(in_tmp: Path, args: tuple[str, str]) -> None:
    code, out = invoke("plan", str(write(in_tmp)), *args)
    assert code == 2 and "not in the range 0<x<1" in out, out


def test_plan_exits_2_on_a_bad_suite_or_baseline_naming_it(in_tmp: Path) -> None:
    code, out = invoke("plan", "missing.yaml")
    assert code == 2 and "missing.yaml" in out, out
    path = write(in_tmp)
    Path("broken.json").write_text('{"results": [', encoding="utf-8")
    code, out = invoke("plan", str(path), "--baseline", "broken.json")
    assert code == 2 and "broken.json" in out and "not a readable run.json" in out, out
    assert "Traceback" not in out
