"""The reports' error bars (docs/en/statistics.md): the HTML report draws pass^k and pass@k for k = 1..m,
and "Blocks the release" names pass^k below its minimum, a red line over its `max_rate` and a
significant paired test, in Chinese and English — on real runs of a python bot whose passes are known."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import invoke

# each test's repeats: "1" passes, "0" fails; `failing.json` names the tests that fail outright
BOT = '''\
import json
from pathlib import Path

PATTERN = {"a": "11100", "b": "11111", "c": "00000", "d": "10101"}


def respond(messages, context):
    base = context["test_id"].split("#")[0]
    failing = Path(__file__).with_name("failing.json")
    if failing.exists() and base in json.loads(failing.read_text()):
        return "bad"
    return "好的 ok" if PATTERN.get(base, "1" * 1000)[context["repeat"] - 1] == "1" else "bad"
'''


def suite(ids: list[str], repeat: int = 5, gate: str = "", max_rate: str = "") -> str:
    tests = "".join(f"  - id: {i}\n    conversation: [{{user: 你好, assert: [{{regex: ok}}]}}]\n" for i in ids)
    return (f"providers:\n  - id: bot\n    python: bot.py:respond\n{gate}"
            f"defaults:\n  repeat: {{n: {repeat}, pass: majority}}\n  assert:\n"
            f"    - not-regex: \"1[3-9]\\\\d{{9}}\"\n      severity: critical\n{max_rate}tests:\n{tests}")


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    return in_tmp


def played(project: Path, text: str, *args: str, name: str = "run") -> Path:
    (project / "s.yaml").write_text(text, encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-o", f"{name}.json", "--no-cache", *args)
    assert code in (0, 1), out
    return project / f"{name}.json"


def reports(run_json: Path, lang: str) -> tuple[str, str]:
    code, out = invoke("report", str(run_json), "--html", f"r-{lang}.html", "--md", f"r-{lang}.md", "--lang", lang)
    assert code in (0, 1, 3), out
    return ((run_json.parent / f"r-{lang}.html").read_text(encoding="utf-8"),
            (run_json.parent / f"r-{lang}.md").read_text(encoding="utf-8"))


def test_the_html_report_draws_pass_hat_k_and_pass_at_k_for_each_k(project: Path) -> None:
    run_json = played(project, suite(["a", "b", "c", "d"]))
    summary = json.loads(run_json.read_text(encoding="utf-8"))["summary"]
    assert len(summary["pass_hat_k"]) == 5
    html, _ = reports(run_json, "en")
    section = re.search(r'<section id="pass-k".*?</section>', html, re.S)
    assert section is not None
    svg = re.search(r'<svg [^>]*class="pass-k-chart".*?</svg>', section.group(0), re.S)
    assert svg is not None and svg.group(0).count("<circle") == 10  # 5 points per line, two lines
    assert "pass^k: all k tries pass" in section.group(0) and "k (tries)" in svg.group(0)
    assert f"{summary['pass_hat_k'][1]:.3f}" in section.group(0)  # the values as a table too
    html, _ = reports(run_json, "zh")
    assert "pass^k：k 次都通过" in html and "k（尝试次数）" in html


def test_a_run_without_repeats_draws_no_pass_k_curve(project: Path) -> None:
    html, _ = reports(played(project, suite(["a", "b"], repeat=1)), "en")
    assert 'id="pass-k"' not in html


def test_pass_hat_k_below_its_minimum_blocks_the_release_in_both_languages(project: Path) -> None:
    gate = "gate: {min_pass_rate: 0, min_pass_hat_k: {k: 2, min: 0.5}}\n"
    run_json = played(project, suite(["a", "b", "c", "d"], gate=gate))
    html, md = reports(run_json, "en")
    assert "- s.yaml: pass^2 0.40 &lt; 0.50 (gate.min\\_pass\\_hat\\_k)" in md
    assert "s.yaml: pass^2 0.40 &lt; 0.50" in html.split('id="blocks"')[1].split("</section>")[0]
    _, md = reports(run_json, "zh")
    assert "s.yaml：pass^2 0.40 &lt; 0.50" in md.split("阻断发布")[1]


def test_a_red_line_over_max_rate_blocks_the_release_with_what_is_needed(project: Path) -> None:
    run_json = played(project, suite([f"t{i}" for i in range(20)], max_rate="      max_rate: 0.01\n"))
    _, md = reports(run_json, "en")
    assert "red line over max\\_rate 1%" in md and "0 breaches in 100 conversations, not enough to show &lt; 1%: need 299" in md
    _, md = reports(run_json, "zh")
    assert "红线超出 max\\_rate 1%" in md and "需要 299 段" in md


def test_a_significant_paired_test_blocks_the_release(project: Path) -> None:
    ids = [f"t{i}" for i in range(8)]
    base = played(project, suite(ids, repeat=1), "--fail-under", "0", name="base")
    (project / "failing.json").write_text(json.dumps(ids[:5]), encoding="utf-8")
    head = played(project, suite(ids, repeat=1), "--baseline", str(base), "--gate", "regressions-paired",
                  "--confirm", "0", name="head")
    html, md = reports(head, "en")
    assert "s.yaml: paired test: 5 passed → failed, 0 failed → passed: p = 0.0312 &lt; α 0.05" in md
    assert "paired test: 5 passed → failed" in html.split('id="blocks"')[1].split("</section>")[0]
    _, md = reports(head, "zh")
    assert "s.yaml：配对检验：5 个由通过变失败，0 个由失败变通过：p = 0.0312 &lt; α 0.05" in md
