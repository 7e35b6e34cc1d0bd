"""One owner per sentence: for the same run.json, every report says the gate line and each failing
conversation's first failure in the same words (console, HTML, Markdown and the PR comment, JUnit, the
baseline diff)."""

from __future__ import annotations

import copy
import html
import io
import re
from typing import Any

from rich.console import Console

from evalspec.reporters.console import ConsoleReporter
from evalspec.reporters.diff import markdown_lines
from evalspec.reporters.html import render_html
from evalspec.reporters.junit import build_junit
from evalspec.reporters.markdown import render_markdown
from evalspec.results.compare import compare_runs
from evalspec.results.findings import findings, first_failure
from tests.reporters.golden import console_text

FAILING = ("no-phone", "no-early-offer", "pronoun", "shop-down")


def record(run: dict[str, Any], test_id: str) -> dict[str, Any]:
    return next(r for r in run["results"] if r["test_id"] == test_id)


def page_text(page: str) -> str:
    """What a reader of the HTML sees: tags dropped, entities decoded, whitespace made single."""
    text = re.sub(r"<style.*?</style>|<script.*?</script>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text)))


def markdown_text(md: str) -> str:
    """Markdown as read: backslash escapes (outside `code`), code and bold marks dropped, entities decoded."""
    parts = md.split("`")
    return "".join(p if i % 2 else html.unescape(re.sub(r"\\(.)", r"\1", p).replace("**", ""))
                   for i, p in enumerate(parts))


def test_the_first_failure_is_one_line_naming_turn_rule_severity_and_reason(fixed_run: dict[str, Any]) -> None:
    assert first_failure(record(fixed_run, "no-phone")) == (
        "turn 2: not-regex: 1[3-9]\\d{9} [critical]: 1/2 replies failed (turns 2): unexpected: matched '13912345678'")
    assert first_failure(record(fixed_run, "shop-down")) == (
        "turn 1: error: shop-bot: shop_bot.py:respond raised RuntimeError: upstream timeout from the shop API")
    assert first_failure(record(fixed_run, "greets")) == ""


def test_every_report_has_the_same_gate_line(fixed_run: dict[str, Any]) -> None:
    line = "gate failed · pass rate 25%"
    assert line in console_text(fixed_run).splitlines()[-1]
    assert render_markdown(fixed_run, env={}).splitlines()[1] == f"## ❌ evalspec: {line}"
    assert re.search(r'<p class="gate failed">([^\n]*)</p>', render_html(fixed_run)) is not None
    assert f" {line} " in page_text(re.search(r'<p class="gate failed">[^\n]*</p>', render_html(fixed_run)).group(0))  # type: ignore[union-attr]
    props = {p.get("name"): p.get("value") for p in build_junit(fixed_run).iter("property")}
    assert props["evalspec.gate"] == line


def test_every_report_names_each_first_failure_in_the_same_words(fixed_run: dict[str, Any]) -> None:
    out = io.StringIO()
    live = ConsoleReporter(Console(file=out, width=400, no_color=True, highlight=False, soft_wrap=True))
    for r in fixed_run["results"]:
        live.on_result(r)
    cases = {c.get("name"): c for c in build_junit(fixed_run).iter("testcase")}
    base = copy.deepcopy(fixed_run)
    for r in base["results"]:
        if r["test_id"] in FAILING:
            r["status"], r["error"], r["assertions"] = "passed", None, []
    diff = compare_runs(base, fixed_run)
    problems = {row["test_id"]: row["problem"] for row in diff["rows"]}
    comment = markdown_text(render_markdown(fixed_run, env={}))
    page = page_text(render_html(fixed_run))
    for test_id in FAILING:
        rec = record(fixed_run, test_id)
        line = first_failure(rec)
        assert f"{test_id} @ shop-bot" in out.getvalue() and f" — {line}" in out.getvalue(), test_id
        outcome = cases[test_id].find("failure")
        outcome = outcome if outcome is not None else cases[test_id].find("error")
        assert outcome is not None and outcome.get("message") == line
        assert problems[test_id] == line
        first = findings(rec)[0]
        said = [first.error] if first.error else [f"{x.key}: expected {x.expected}" for x in first.facts] or [first.reason]
        for part in (first.where, first.rule, *said):
            assert part in comment, (test_id, part)
            assert part in page, (test_id, part)
    assert any(problems["no-phone"] in markdown_text(line) for line in markdown_lines(diff))


def test_the_baseline_section_of_the_comment_is_made_safe_like_the_rest(fixed_run: dict[str, Any]) -> None:
    head = copy.deepcopy(fixed_run)
    for r in head["results"]:
        if r["test_id"] == "no-phone":
            r["name"] = "*urgent* <b>@sales-lead</b> [x](http://evil)"
    diff = compare_runs(copy.deepcopy(fixed_run), head)
    lines = "\n".join(markdown_lines(diff, limit=100))
    assert "<b>" not in lines and "@sales-lead" not in lines
    assert "\\*urgent\\* &lt;b&gt;@&#8203;sales-lead&lt;/b&gt; \\[x\\](http://evil)" in lines
