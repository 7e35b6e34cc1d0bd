"""Console: nothing a bot says can drive the terminal; pass rate "—" when no verdict was reached."""

from __future__ import annotations

from typing import Any

from evalspec.reporters.vocabulary import pass_rate_text, strip_controls
from tests.reporters.golden import console_text


def test_control_characters_from_replies_never_reach_the_terminal(fixed_run: dict[str, Any]) -> None:
    assert any("\x1b[31m" in m["content"] for r in fixed_run["results"] for m in r["transcript"])  # the bot sent one
    out = console_text(fixed_run)
    assert not any(ord(ch) < 32 and ch not in "\n" for ch in out)
    assert strip_controls("a\x1b[2Jb\u202ec\x07") == "a[2Jbc"


def test_pass_rate_over_no_verdict_is_a_dash_never_100() -> None:
    assert pass_rate_text(None) == "—" and pass_rate_text(1.0) == "100%"


def test_a_curve_is_described_by_its_summary_term_only(fixed_run: dict[str, Any]) -> None:
    (curve,) = fixed_run["curves"]
    curve["describe"] = ["half_life"]
    line = next(x for x in console_text(fixed_run).splitlines() if x.startswith("curve "))
    assert "half-life 5" in line and "failure point" not in line


def test_a_metric_row_shows_the_mean_score_and_the_share_of_tests_passed_labelled(fixed_run: dict[str, Any]) -> None:
    out = console_text(fixed_run)
    assert "mean score" in out and "share of tests passed" in out
    assert "50% (9–91%, n=2)" in out  # the share with its 95 % interval (docs/en/statistics.md)
