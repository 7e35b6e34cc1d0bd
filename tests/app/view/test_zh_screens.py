"""A Chinese team's `evalspec view`, read word by word in headless Chromium: the runs page, a run with an
attribution saved and a failing draft's confirmation, the diff of two runs and the HTML report hold no
English UI word — only the names the team wrote (test ids, the provider, tags, rule texts, file names) and
the units and names every screen keeps (token, SLA, ms, UTC, evalspec). At 420 px nothing scrolls sideways."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalspec.reporters.html import render_html
from tests.app.view.project import Chromium, Project, View

# The English words of the screens a Chinese walk-through met (docs/zh/walkthrough.md), each a word of the
# catalogue's English side or of a reason; none is a name the fixture's suite writes.
UI_WORDS = {
    "passed", "failed", "errors", "error", "skipped", "xfailed", "xpassed", "measured", "draft", "drafts",
    "turn", "turns", "unexpected", "matched", "found", "replies", "reply", "critical", "major", "reason",
    "triage", "rerun", "attribution", "reviewer", "approve", "approved", "saved", "save", "wrong", "label",
    "compare", "diff", "runs", "fixed", "recovered", "still", "failing", "unchanged", "regressed", "baseline",
    "pass", "rate", "gate", "blocks", "release", "conversation", "conversations", "score", "status", "suite",
    "provider", "tag", "all", "showing", "calls", "cached", "cost", "started", "back", "report", "review",
    "whole", "first", "problem", "note", "next", "step", "anyway", "yes", "no", "none", "did", "not", "find",
}
TEXT = """() => {
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const node = walk.currentNode, box = node.parentElement;
    if (!node.textContent.trim() || box.closest('script, style')) continue;
    if (box.closest('details:not([open]) > :not(summary)') || box.closest('[hidden]')) continue;
    out.push(node.textContent.trim());
  }
  document.querySelectorAll('option').forEach(o => out.push(o.textContent.trim()));
  document.querySelectorAll('[title], [placeholder], [aria-label]').forEach(e =>
    out.push([e.title, e.placeholder, e.getAttribute('aria-label')].filter(Boolean).join(' ')));
  return out;
}"""
# what the user wrote and what may stand in a text node beside it: rule texts (`not-regex: 1[3-9]\d{9}`,
# `contains: 您好`), test ids, the provider's id, tags, file paths
WRITTEN = re.compile(r"not-regex|llm-rubric|contains|suites/sales\.yaml|\b(?:greeting|price|refund|hours|polite|bot|smoke|"
                     r"redline)\b")


def english(texts: list[str]) -> list[str]:
    """The texts holding a UI word outside what the user wrote."""
    return [t for t in texts if {w.lower() for w in re.findall(r"[A-Za-z]+", WRITTEN.sub(" ", t))} & UI_WORDS]


@pytest.fixture
def page(browser: Chromium) -> Iterator[Any]:
    def open_page() -> Any:
        return browser.browser.new_context(viewport={"width": 1400, "height": 900}).new_page()

    opened = browser.run(open_page)
    try:
        yield opened
    finally:
        browser.run(opened.context.close)


def test_the_view_of_a_chinese_team_shows_no_english_ui_word(browser: Chromium, view: View, project: Project,
                                                            page: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSPEC_LANG")  # the report speaks its run's language, as a team's would
    report = tmp_path / "report.html"
    report.write_text(render_html(project.run_json(project.runs[-1])), encoding="utf-8")

    def read(page: Any) -> dict[str, list[str]]:
        seen: dict[str, list[str]] = {}
        asked: list[str] = []
        page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
        page.set_default_timeout(10_000)
        page.goto(view.url)
        seen["home"] = page.evaluate(TEXT)
        page.goto(f"{view.base}run/{project.runs[-1]}")
        price = page.locator("details.test", has_text="询价不留手机号")
        if not price.evaluate("d => d.open"):
            price.locator("summary").click()
        price.locator("select.attribution").select_option("bot_defect")
        price.locator("button.save-triage").click()
        price.locator(".gate-note").wait_for()
        hours = page.locator("details.test", has_text="营业时间")  # a failing draft: approving asks first
        if not hours.evaluate("d => d.open"):
            hours.locator("summary").click()
        with page.expect_event("dialog"):  # the confirmation comes after the server's answer: wait for it
            hours.locator("button.approve-draft").click()
        hours.locator(".approve .said").wait_for()
        seen["review panel"] = page.evaluate(TEXT)
        seen["confirmation"] = asked
        page.reload()  # the attribution saved: the run groups its failures by attribution
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        seen["run"] = page.evaluate(TEXT)
        page.goto(f"{view.base}diff?base={project.runs[0]}&head={project.runs[-1]}")
        seen["diff"] = page.evaluate(TEXT)
        page.goto(report.as_uri())
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        seen["report"] = page.evaluate(TEXT)
        return seen

    seen = browser.run(read, page)
    assert seen["confirmation"] and all(seen.values()), seen
    assert {screen: english(texts) for screen, texts in seen.items() if english(texts)} == {}


def test_the_chinese_pages_read_on_a_420_px_screen(browser: Chromium, view: View, project: Project, page: Any) -> None:
    def widths(page: Any) -> dict[str, int]:
        page.set_viewport_size({"width": 420, "height": 900})
        out = {}
        for name, url in (("home", view.url), ("run", f"{view.base}run/{project.runs[0]}"),
                          ("diff", f"{view.base}diff?base={project.runs[0]}&head={project.runs[-1]}")):
            page.goto(url)
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            out[name] = int(page.evaluate("document.documentElement.scrollWidth"))
        return out

    assert browser.run(widths, page) == {"home": 420, "run": 420, "diff": 420}
