"""Counts, critical failures on curve points, the metric scoreboard, and what `rerun` and `report` pick."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from rich.console import Console

from evalspec import run
from evalspec.app.cli.main import main
from evalspec.play.runner import RunOptions
from evalspec.reporters.console import ConsoleReporter

BOT = '''
def respond(messages, context):
    n = sum(1 for m in messages if m["role"] == "user")
    return "call 13912345678" if n > 2 else "好的"
'''


def go(tmp_path: Path, body: str) -> dict:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: bot\n    python: bot.py:respond\n" + body, encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


CURVE = """\
tests:
  - id: decay
    matrix: {d: [0, 2]}
    curve: d
    conversation:
      - user: hi
      - filler: {count: "{{ d }}", pool: [hello]}
      - user: again
        assert:
          - {not-regex: '1[3-9]\\d{9}', severity: SEVERITY}
"""


def test_a_critical_failure_on_a_curve_point_gates(tmp_path: Path) -> None:
    data = go(tmp_path, CURVE.replace("SEVERITY", "critical"))
    assert [v["category"] for v in data["verdicts"]] == ["measured", "measured"]
    assert data["summary"]["measured"] == 2 and data["summary"]["failed"] == 0
    assert data["gate"]["exit_code"] == 1 and "critical assertion failed: decay[d=2]" in data["gate"]["reasons"][0]
    assert data["gate"]["pass_rate"] is None


def test_a_major_failure_on_a_curve_point_is_only_measured(tmp_path: Path) -> None:
    data = go(tmp_path, CURVE.replace("SEVERITY", "major"))
    assert data["gate"]["exit_code"] == 0 and all(r["measured"] for r in data["results"])


def test_metric_names_make_a_scoreboard_of_tests_not_of_checks(tmp_path: Path) -> None:
    data = go(tmp_path, """\
tests:
  - id: a
    conversation: [{user: hi, assert: [{contains: 好, metric: tone}, {contains: nope, metric: tone}]}]
  - id: b
    conversation: [{user: hi, assert: [{contains: 好, metric: privacy}]}]
  - id: c
    repeat: 3
    conversation:
      - user: hi
        assert: [{contains: 好, metric: tone}, {contains: 好, metric: privacy}]
      - user: again
        assert: [{contains: 好, metric: tone}]
""")
    board = {m["metric"]: m for m in data["summary"]["metrics"]}
    # tone: test a fails one of its two tone checks, test c passes all six (three repeats × two turns)
    assert board["tone"] == {"suite": board["tone"]["suite"], "provider": "bot", "metric": "tone",
                             "mean": 0.875, "passed": 1, "total": 2, "pass_rate_ci": [0.094531, 0.905469]}
    assert (board["privacy"]["passed"], board["privacy"]["total"]) == (2, 2)


def test_a_metric_counts_a_test_by_its_repeat_rule() -> None:
    from evalspec.results.aggregate import metrics

    def rec(i: int, ok: bool, rule: str) -> dict[str, Any]:
        return {"suite": "s", "provider": "p", "base_id": f"t-{rule}", "repeat_rule": rule,
                "assertions": [{"metric": "m", "pass": ok, "score": float(ok)}]}

    runs = [rec(0, True, "majority"), rec(1, True, "majority"), rec(2, False, "majority"),
            rec(0, True, "all"), rec(1, False, "all"),
            {"suite": "s", "provider": "p", "base_id": "broken", "repeat_rule": "all",
             "assertions": [{"metric": "m", "pass": None, "score": None}]}]
    (board,) = metrics(runs)
    assert (board["passed"], board["total"]) == (1, 2)  # the errored test reached no verdict on the metric


def test_rerun_failed_does_not_replay_measured_points(tmp_path: Path) -> None:
    go(tmp_path, CURVE.replace("SEVERITY", "major"))
    path = tmp_path / "run" / "run.json"
    result = CliRunner().invoke(main, ["rerun", str(path), "--failed"])
    assert result.exit_code == 0 and "no failed test to re-play" in result.output, result.output


def test_report_without_a_path_renders_the_latest_run(tmp_path: Path) -> None:
    runs = tmp_path / ".evalspec" / "runs"
    for name, passed in (("20261129-000000-aaaaaa", 1), ("20261130-000000-bbbbbb", 2)):
        (runs / name).mkdir(parents=True)
        data = go(tmp_path, "tests:\n" + "".join(f"  - {{id: t{i}, conversation: [{{user: hi}}]}}\n"
                                                   for i in range(passed)))
        (runs / name / "run.json").write_text(json.dumps(data), encoding="utf-8")
        os.utime(runs / name / "run.json", (1_000_000 * passed, 1_000_000 * passed))
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, ["report", "--md", "out.md"])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    assert "20261130-000000-bbbbbb" in result.output
    assert "2 passed" in (tmp_path / "out.md").read_text(encoding="utf-8")


def test_the_live_bar_counts_cached_calls_apart_never_negative() -> None:
    out = io.StringIO()
    reporter = ConsoleReporter(Console(file=out, width=200), quiet=True)
    reporter.on_result({"status": "passed", "calls": 0, "cached_calls": 63, "test_id": "t", "provider": "p"})
    reporter.on_result({"status": "failed", "curve": "d", "calls": 2, "cached_calls": 0, "test_id": "c", "provider": "p"})
    stats = reporter._stats()
    assert "calls 2 (+63 cached)" in stats and "-" not in stats.split("calls")[1]
    assert "1 passed" in stats and "1 measured" in stats and "0 failed" in stats
