"""`evalspec plan` (docs/en/statistics.md#how-much-is-enough): what a plan can show, offline. Figures are
checked by hand and against tests/results/test_stats.py's published values (Connor 1987; Hanley &
Lippman-Hand 1983)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    """greet × 5 + sizes × 5 values + a draft × 3: 7 instances, 13 conversations, 10 gated pairs. The
    critical rule is decided on those 10: with no breach its bound is 1 − 0.05^(1/10) = 25.9 % (Hanley &
    Lippman-Hand: 0.26). A drop of 10 points needs 122 pairs with ψ = 0.2 (by hand:
    (1.6449·√0.2 + 0.8416·√0.19)²/0.01 = 121.5), so --repeat ⌈122/6⌉ = 21, or ⌈122/(10/6)⌉ = 74 instances."""
    path = write(in_tmp)
    code, out = invoke("plan", str(path), "-o", "plan.json", "--lang", "en")
    assert code == 0, out
    assert "7 instances × 1–5 repeats = 13 conversations (10 paired against a baseline)" in out, out
    assert "122 pairs needed, 10 planned — --repeat 21, or 74 instances at the current repeats" in out, out
    assert "breach rate < 25.9% (95%) over 10 conversations" in out and "s.yaml:6" in out, out
    assert "discordance: assumed 2 × the drop" in out
    report = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    (suite,) = report["suites"]
    assert (suite["instances"], suite["conversations"], suite["pairs"]) == (7, 13, 10)
    assert suite["needed"] == {"detect": 0.1, "pairs": 122, "enough": False, "repeat": 21, "instances": 74}
    assert suite["detectable_drop"] == detectable_drop(10)
    assert f"detects: {suite['detectable_drop'] * 100:.3g} percentage points (power 80%, one-sided α 0.05)" in out
    assert suite["red_lines"][0]["upper"] == pytest.approx(0.259, abs=5e-4)


def test_plan_says_enough_when_the_planned_pairs_suffice(in_tmp: Path) -> None:
    """--repeat 25: 6 gated instances × 25 = 150 pairs ≥ 122."""
    code, out = invoke("plan", str(write(in_tmp)), "--repeat", "25", "--lang", "en")
    assert code == 0, out
    assert "122 pairs needed, 150 planned — enough" in out, out


def test_plan_reads_the_discordance_from_the_baseline(in_tmp: Path) -> None:
    """A baseline played for real: of greet's 4 repeats 2 pass and 2 fail, so: 4 of the 6 pairs of repeats disagree
    (noise 2/3). ψ = 2/3 + 0.1; by hand (1.6449·√0.7667 + 0.8416·√0.7567)²/0.01 = 471.9 → 472 pairs."""
    path = write(in_tmp, SUITE.replace("repeat: 5", "repeat: 4").replace("- user: hello there",
                                                                         "- user: hello there\n        assert: [{contains: ok}]"))
    code, out = invoke("run", str(path), "-o", "base.json", "--no-cache", "-q")
    assert code == 1, out
    code, out = invoke("plan", str(path), "--baseline", "base.json", "-o", "plan.json", "--lang", "en")
    assert code == 0, out
    assert "disagree 66.7% of the time in the baseline" in out, out
    (suite,) = json.loads(Path("plan.json").read_text(encoding="utf-8"))["suites"]
    assert suite["discordance"] == {"source": "baseline", "noise": pytest.approx(2 / 3)}
    assert suite["needed"]["pairs"] == 472


def test_plan_speaks_the_suites_language(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSPEC_LANG")  # tests/conftest.py sets it
    path = write(in_tmp, SUITE.replace("hello there", "你好，请问周末营业吗？")
                 .replace("size {{ size }} please", "请问 {{ size }} 码还有货吗？").replace("a draft", "草稿"))
    code, out = invoke("plan", str(path))
    assert code == 0, out
    assert "计划：7 个实例 × 重复 1–5 次 = 13 段对话" in out and "需要 122 对" in out, out
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
