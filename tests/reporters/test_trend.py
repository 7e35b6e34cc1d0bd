"""`evalspec report A.json B.json C.json --html trend.html`: pass rate per suite and per metric, half-life
per curve, over runs in time order; checked in headless Chromium (one point per run)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# remembers the name for `window.txt` user turns: the window grows from run to run
BOT = '''\
from pathlib import Path


def respond(messages, context):
    window = int((Path(__file__).parent / "window.txt").read_text())
    users = [m["content"] for m in messages if m["role"] == "user"]
    if "What is my name?" not in users[-1]:
        return "Nice."
    since = len(users) - 1 - max(i for i, u in enumerate(users) if "My name is Ann" in u)
    return "You are Ann." if since <= window else "I do not know."
'''
ASK = """      - user: My name is Ann.
      - filler: {n}
      - user: What is my name?
        assert: [{{contains: Ann, metric: memory}}]
"""
SUITE_A = "providers:\n  - id: bot\n    python: bot.py:respond\ntests:\n" \
          "  - id: decay\n    matrix: {distance: [1, 2, 4, 8]}\n    curve: distance\n    conversation:\n" \
          + ASK.format(n='"{{ distance }}"') + "  - id: near\n    conversation:\n" + ASK.format(n=2)
SUITE_B = "providers:\n  - id: bot\n    python: bot.py:respond\ntests:\n  - id: far\n    conversation:\n" \
          + ASK.format(n=5)


class Points(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.points: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "circle" and ("class", "point") in attrs:
            self.points.append(dict(attrs))


@pytest.fixture
def three_runs(in_tmp: Path) -> list[str]:
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    (in_tmp / "a.yaml").write_text(SUITE_A, encoding="utf-8")
    (in_tmp / "b.yaml").write_text(SUITE_B, encoding="utf-8")
    paths = []
    for window in (1, 3, 8):
        (in_tmp / "window.txt").write_text(str(window))
        out = f"run-window-{window}.json"
        result = CliRunner().invoke(main, ["run", "a.yaml", "b.yaml", "-o", out, "--no-cache", "-q"])
        assert result.exit_code in (0, 1), result.output
        paths.append(out)
    return paths


def test_trend_page_has_one_point_per_run_in_time_order_in_chromium(three_runs: list[str], in_tmp: Path) -> None:
    shuffled = [three_runs[2], three_runs[0], three_runs[1]]
    result = CliRunner().invoke(main, ["report", *shuffled, "--html", "trend.html"])
    assert result.exit_code == 0, result.output
    # in time order whatever the order given: the window grows 1 -> 3 -> 8 turns
    assert "a.yaml: 0% → 100% → 100%" in result.output  # curve points are not gated: `near` alone
    assert "b.yaml: 0% → 0% → 100%" in result.output
    assert "memory: 0% → 50% → 83%" in result.output
    assert "decay @ bot: 1 → 4 → 8" in result.output
    if not Path(CHROMIUM).exists():
        pytest.skip("headless Chromium is not installed")
    profile = in_tmp / "chromium-profile"
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}",
                          "--dump-dom", (in_tmp / "trend.html").as_uri()],
                         capture_output=True, text=True, timeout=90, check=True).stdout
    parser = Points()
    parser.feed(dom)
    per_series = Counter(p["data-series"] for p in parser.points)
    assert per_series == {"a.yaml": 3, "b.yaml": 3, "memory": 3, "decay @ bot": 3}
    runs_of = {s: [p["data-run"] for p in parser.points if p["data-series"] == s] for s in per_series}
    assert all(r == ["0", "1", "2"] for r in runs_of.values())
    titles = re.findall(r"<title>decay @ bot · [^<]*: ([^<]+)</title>", dom)
    assert titles == ["1", "4", "8"]
    heights = [float(p["cy"] or 0) for p in parser.points if p["data-series"] == "b.yaml"]
    assert heights[0] == heights[1] > heights[2]  # 0%, 0%, 100%: the last point is drawn higher


def test_trend_needs_html_not_junit(three_runs: list[str]) -> None:
    result = CliRunner().invoke(main, ["report", *three_runs, "--junit", "j.xml"])
    assert result.exit_code == 2 and "--html" in result.output


def test_a_single_run_still_renders_its_reports(three_runs: list[str], in_tmp: Path) -> None:
    result = CliRunner().invoke(main, ["report", three_runs[0], "--md", "s.md"])
    assert result.exit_code == 0, result.output
    assert json.loads((in_tmp / three_runs[0]).read_text(encoding="utf-8"))["results"]
