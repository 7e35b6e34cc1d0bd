"""Curves: charts shared across tests and suites, tokens and cost per point, stable_until, the summary term."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.config.loader import load_suites
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from evalspec.reporters.html import render_html
from evalspec.results.curves import stable_until, terms_text

BOT = """\
def respond(messages, context):
    users = [m['content'] for m in messages if m['role'] == 'user']
    remembers = any('Alice' in u for u in users[:-1])
    reply = 'Alice' if remembers else 'no idea'
    words = sum(len(m['content'].split()) for m in messages)
    return {'content': reply, 'usage': {'prompt_tokens': words, 'completion_tokens': 2, 'total_tokens': words + 2},
            'cost': 0.001}
"""


def suite_text(test_id: str, x: str = "distance", chart: str = "dims", summary: str = "stable_range") -> str:
    return f"""\
providers:
  - id: window-1
    python: bot.py:respond
    history: {{mode: window, turns: 1}}
  - id: full
    python: bot.py:respond
tests:
  - id: {test_id}
    matrix: {{{x}: [0, 1, 3]}}
    curve: {{x: {x}, chart: {chart}, summary: {summary}}}
    sla: [{{at: 1, min_score: 0.9}}]
    conversation:
      - user: I am Alice
      - filler: {{count: "{{{{ {x} }}}}", pool: [one two three]}}
      - user: who am I?
        assert:
          - contains: Alice
"""


@pytest.fixture(scope="module")
def two_suites(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("curves")
    (tmp / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp / "a.yaml").write_text(suite_text("memory"), encoding="utf-8")
    (tmp / "b.yaml").write_text(suite_text("recall", summary="half_life"), encoding="utf-8")
    data = run([tmp / "a.yaml", tmp / "b.yaml"], options=RunOptions(run_dir=tmp / "run", use_cache=False)).data
    return tmp, data


def test_curves_with_one_chart_name_share_it_across_suites(two_suites: tuple[Path, dict[str, Any]]) -> None:
    _, data = two_suites
    assert [(c["test"], c["provider"], c["chart"]) for c in data["curves"]] == [
        ("memory", "window-1", "dims"), ("memory", "full", "dims"), ("recall", "window-1", "dims"),
        ("recall", "full", "dims")]
    assert data["curves"][0]["describe"] == ["stable_range"] and data["curves"][2]["describe"] == ["half_life"]


def test_each_point_records_mean_tokens_and_cost_per_conversation(two_suites: tuple[Path, dict[str, Any]]) -> None:
    _, data = two_suites
    window, full = data["curves"][0], data["curves"][1]
    assert [p["mean"] for p in window["points"]] == [1.0, 0.0, 0.0]
    assert [p["mean"] for p in full["points"]] == [1.0, 1.0, 1.0]
    # each turn of the full history costs more than the last; a window's turns cost the same once it is full
    full_prompt = [p["prompt_tokens"] for p in full["points"]]
    window_prompt = [p["prompt_tokens"] for p in window["points"]]
    assert full_prompt[0] < full_prompt[1] < full_prompt[2]
    assert window_prompt[2] - window_prompt[1] < full_prompt[2] - full_prompt[1]
    for p in full["points"]:
        assert p["completion_tokens"] == 2 * (p["value"] + 2)
        assert p["tokens"] == p["prompt_tokens"] + p["completion_tokens"]
        assert p["cost"] == pytest.approx(0.001 * (p["value"] + 2))
    assert window["stable_until"] == 0 and window["stable_range"] == [0, 0]
    assert full["stable_until"] == 3 and terms_text(full) == "stable range 0–3"


def chromium_dom(html: Path) -> str:
    browser = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(browser).exists():
        pytest.skip("headless Chromium (/usr/bin/chromium) is not installed")
    profile = html.parent / "profile"
    out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}",
                          "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120)
    return out.stdout


def test_the_html_draws_one_chart_with_a_line_per_test_and_provider(two_suites: tuple[Path, dict[str, Any]]) -> None:
    tmp, data = two_suites
    html = tmp / "report.html"
    html.write_text(render_html(data), encoding="utf-8")
    dom = chromium_dom(html)
    charts = re.findall(r'<svg[^>]*class="curve-chart".*?</svg>', dom, re.S)
    assert len(charts) == 1
    assert len(re.findall(r'<polyline class="line"', charts[0])) == 4
    tokens = re.findall(r'<svg[^>]*class="token-chart".*?</svg>', dom, re.S)
    assert len(tokens) == 1 and len(re.findall(r'<polyline class="line"', tokens[0])) == 4
    assert 'data-line="memory @ full"' in charts[0] and 'data-line="recall @ window-1"' in charts[0]


def test_curves_on_one_chart_must_share_their_x(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "a.yaml").write_text(suite_text("memory"), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(suite_text("recall", x="gap"), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_suites([tmp_path / "a.yaml", tmp_path / "b.yaml"])
    assert "b.yaml:10" in str(err.value) and "chart 'dims' plots 'distance'" in str(err.value)


@pytest.mark.parametrize(("means", "slas", "expected"), [
    ([0.9, 0.85, 0.7], [], 2),                                          # 0.8 without an SLA
    ([0.9, 0.85, 0.7], [{"at": 2, "min_score": 0.9}], 1),               # the SLA covering x=2 asks for 0.9
    ([0.9, 0.6, 0.9], [{"at": 2, "min_score": 0.5}], 3),
    ([0.7, 0.9], [], None),                                             # the first point is already below
])
def test_stable_until_is_the_last_x_before_the_score_drops_under_its_floor(
        means: list[float], slas: list[dict[str, float]], expected: Any) -> None:
    points = [{"value": x, "mean": m} for x, m in zip([1, 2, 3], means, strict=False)]
    assert stable_until(points, slas) == expected


def test_the_console_names_the_stable_range_of_a_curve_described_by_it(two_suites: tuple[Path, dict[str, Any]]) -> None:
    from evalspec.reporters.vocabulary import curve_text

    _, data = two_suites
    stable, half = data["curves"][1], data["curves"][3]
    assert "stable until 3" in curve_text(stable)
    assert "stable" not in curve_text(half) and "half-life" in curve_text(half)
