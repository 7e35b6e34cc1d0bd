"""What a reviewer reads is true (docs/en/review.md): an errored test shows no score anywhere, times are
local with their zone, attribution classes are named (filters too), never coded."""

from __future__ import annotations

import datetime as dt
import io
import re
from typing import Any

from rich.console import Console

from evalspec.reporters.console import ConsoleReporter
from evalspec.reporters.html import render_html
from evalspec.reporters.vocabulary import local_time, score_text


def errored_with_a_score(run: dict[str, Any]) -> dict[str, Any]:
    """The fixture's errored test as a run records it when its decided checks passed: score 1.0."""
    for v in run["verdicts"]:
        if v["status"] == "error":
            v["score_mean"] = 1.0
    for r in run["results"]:
        if r["status"] == "error":
            r["score"] = 1.0
    return run


def test_an_errored_test_shows_no_score_on_the_console(fixed_run: dict[str, Any]) -> None:
    run = errored_with_a_score(fixed_run)
    for lang, score in (("zh", "得分"), ("en", "score")):
        out = io.StringIO()
        reporter = ConsoleReporter(Console(file=out, width=200, color_system=None), lang=lang)
        for record in run["results"]:
            reporter.on_result(record)
        lines = out.getvalue().splitlines()
        errored = [line for line in lines if line.startswith(("出错", "error"))]
        assert errored and all(score not in line for line in errored), errored
        assert any(f"{score} 1.00" in line for line in lines if line.startswith(("通过", "passed")))


def test_an_errored_test_shows_no_score_in_the_html_report(fixed_run: dict[str, Any]) -> None:
    html = render_html(errored_with_a_score(fixed_run), lang="zh")
    summaries = re.findall(r'<summary><b class="(\w+)">.*?</summary>', html, re.S)
    assert "error" in summaries
    for block in re.findall(r'<summary><b class="error">.*?</summary>', html, re.S):
        assert "得分" not in block, block
    assert re.search(r'<summary><b class="passed">.*?得分 1\.00', html, re.S)
    assert score_text(1.0, "error") is None and score_text(None, "failed") == "—"


def test_times_are_local_with_their_zone(fixed_run: dict[str, Any]) -> None:
    beijing = dt.timezone(dt.timedelta(hours=8))
    assert local_time("2026-11-30T00:00:00+00:00", beijing) == "2026-11-30 08:00:00 UTC+08:00"
    assert local_time("2026-11-30T00:00:00+00:00", dt.timezone(dt.timedelta(hours=-5, minutes=-30))) == \
        "2026-11-29 18:30:00 UTC-05:30"
    assert local_time("2026-11-30T00:00:00", dt.timezone.utc) == "2026-11-30 00:00:00 UTC"
    assert local_time("not a time") == "not a time"
    html = render_html(fixed_run, lang="zh")
    assert local_time(fixed_run["started_at"]) in html and fixed_run["started_at"] not in html


def test_attribution_classes_are_named_in_the_report_and_its_filter(sections_run: dict[str, Any]) -> None:
    failed = [r for r in sections_run["results"] if r["status"] == "failed"]
    failed[0]["attribution"] = cls = "model_fluctuation"  # as `evalspec triage` writes it
    names = {"zh": {"bot_defect": "机器人缺陷", "model_fluctuation": "模型波动", "rule_misjudgment": "规则误判",
                    "infrastructure": "基础设施异常", "pending_fact": "事实或策略待确认"},
             "en": {"bot_defect": "bot defect", "model_fluctuation": "model fluctuation",
                    "rule_misjudgment": "rule misjudgment", "infrastructure": "infrastructure",
                    "pending_fact": "pending fact"}}
    for lang, named in names.items():
        html = render_html(sections_run, lang=lang)
        assert f'<option value="{cls}">{named[cls]}</option>' in html
        shown = re.sub(r"<[^>]+>", " ", html.split("</style>")[-1].split("<script>")[0])
        assert not any(code in shown for code in named if code != "infrastructure"), lang


def test_the_simulator_fault_class_has_a_name_in_both_languages() -> None:
    from evalspec.reporters.catalogue import CATALOGUES

    assert (CATALOGUES["zh"]["attr_simulator_fault"], CATALOGUES["en"]["attr_simulator_fault"]) == (
        "模拟用户失误", "simulator fault")
