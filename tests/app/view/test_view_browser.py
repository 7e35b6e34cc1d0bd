"""`evalspec view` in a real headless browser (Playwright driving the system Chromium): open a run, filter
to failures, set an attribution, approve a draft, mark a judge verdict wrong, then read the files."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from evalspec.review.judge_eval import load_labels
from tests.app.view.project import REVIEWER, SHOTS, Chromium, Project, View

Browse = Callable[[Callable[[Any], None]], None]


@pytest.fixture
def browse(browser: Chromium, view: View) -> Iterator[Browse]:
    """Run `steps(page)` on the browser's thread, the page opened at the printed URL (1400 px wide)."""
    def open_page() -> Any:
        context = browser.browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(view.url)
        return context, page

    context, page = browser.run(open_page)
    try:
        yield lambda steps: browser.run(steps, page)
    finally:
        browser.run(context.close)


def shown(page: Any) -> list[str]:
    return list(page.eval_on_selector_all("details.test:not([hidden])", "ds => ds.map(d => d.id)"))


def conversation(page: Any, name: str) -> Any:
    return page.locator("details.test", has_text=name)


def no_horizontal_scroll(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_a_review_session_writes_the_files_the_cli_reads(browse: Browse, view: View, project: Project) -> None:
    SHOTS.mkdir(exist_ok=True)
    suite_before = project.suite.read_text(encoding="utf-8")

    def review(page: Any) -> None:
        assert page.url == view.base  # the token went into a cookie and out of the address bar
        assert page.locator("table.runs tr[data-run]").count() == 2
        page.screenshot(path=str(SHOTS / "runs-1400.png"), full_page=True)
        page.click(f"a[href='/run/{project.runs[-1]}']")
        page.wait_for_selector(".review")
        page.screenshot(path=str(SHOTS / "run-1400.png"), full_page=True)
        page.select_option("#f-status", "failed")
        assert "status=failed" in page.url and len(shown(page)) == 1
        price = conversation(page, "询价不留手机号")
        price.locator("select.attribution").select_option("bot_defect")
        price.locator("input.note").fill("首轮就留了手机号")
        price.locator("button.save-triage").click()
        price.locator(".triage .said", has_text="✓ 已保存：机器人缺陷 · " + REVIEWER).wait_for()
        note = price.locator(".gate-note").inner_text()
        assert "归因不改变门禁" in note and "修复机器人" in note
        assert "bot_defect" not in price.locator(".review").inner_text()  # names, never codes
        assert page.locator("#f-attribution option[value=bot_defect]").inner_text() == "机器人缺陷"
        page.select_option("#f-attribution", "bot_defect")
        assert "attribution=bot_defect" in page.url and len(shown(page)) == 1
        price.locator("select.attribution").select_option("rule_misjudgment")
        price.locator("button.save-triage").click()
        price.locator(".gate-note", has_text="suites/sales.yaml:").wait_for()
        line = project.suite.read_text(encoding="utf-8").splitlines().index('          - not-regex: "1[3-9]\\\\d{9}"') + 1
        assert f"suites/sales.yaml:{line}" in price.locator(".gate-note").inner_text()
        price.locator("select.attribution").select_option("model_fluctuation")
        price.locator("button.save-triage").click()
        price.locator(".gate-note", has_text="--failed --times 3").wait_for()
        assert f"evalspec rerun .evalspec/runs/{project.runs[-1]}/run.json --failed --times 3" in \
            price.locator(".gate-note").inner_text()
        price.locator("select.attribution").select_option("bot_defect")
        price.locator("button.save-triage").click()
        price.locator(".gate-note", has_text="修复机器人").wait_for()
        price.locator(".review").screenshot(path=str(SHOTS / "review-1400.png"))

        page.goto(page.url.split("#")[0])  # the filters off again
        draft = conversation(page, "退款政策")
        draft.locator("summary").click()  # read the conversation, then approve it
        draft.locator("button.approve-draft").click()
        draft.locator(".approve .said", has_text="已批准").wait_for()
        hours = conversation(page, "营业时间")  # a draft that failed: approving it asks first, naming the check
        hours.locator("summary").click()
        asked: list[str] = []
        page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
        hours.locator("button.approve-draft").click()
        hours.locator(".approve .said", has_text="未批准").wait_for()
        assert "contains: 十点" in asked[0] and "仍要批准吗" in asked[0]
        assert "draft: true\n    conversation:\n      - user: 晚上几点关门" in project.suite.read_text(encoding="utf-8")
        page.once("dialog", lambda dialog: dialog.accept())
        hours.locator("button.approve-draft").click()
        hours.locator(".approve .said", has_text="已批准").wait_for()
        polite = conversation(page, "语气礼貌")
        polite.locator("summary").click()
        polite.locator("input.label-note").fill("回复其实很生硬")
        polite.locator("button.judge-wrong").click()
        polite.locator(".said", has_text="labels.jsonl").wait_for()
        assert "本次门禁不变" in polite.locator(".review").inner_text()
        draft.locator(".review").screenshot(path=str(SHOTS / "review-approved-1400.png"))
        polite.locator(".review").screenshot(path=str(SHOTS / "review-judge-1400.png"))

    browse(review)
    triage = json.loads(project.lines("triage.jsonl")[-1])
    assert (triage["test_id"], triage["as"], triage["note"], triage["who"]) == ("price", "bot_defect", "首轮就留了手机号", REVIEWER)
    labels = load_labels(project.root / ".evalspec" / "labels.jsonl")
    assert [(i.label, i.spec.type) for i in labels] == [(False, "llm-rubric")]
    assert (json.loads(project.lines("labels.jsonl")[-1])["who"], json.loads(project.lines("labels.jsonl")[-1])["note"]) == (
        REVIEWER, "回复其实很生硬")
    line = suite_before.splitlines().index("    draft: true   # 待评审") + 1
    assert project.lines("review.log")[-2].endswith(f"{REVIEWER} approved suites/sales.yaml:{line} refund (draft: true removed)")
    assert project.lines("review.log")[-1].endswith(f"hours (draft: true removed) despite 1 failed check in run {project.runs[-1]}")
    suite_after = project.suite.read_text(encoding="utf-8")
    assert suite_after == suite_before.replace("    draft: true   # 待评审\n", "    # 待评审\n").replace(
        "    name: 营业时间\n    draft: true\n", "    name: 营业时间\n")
    assert "# 草稿：退款政策还没定" in suite_after and "# 演示机器人" in suite_after


def test_filters_in_the_url_apply_when_the_page_opens(browse: Browse, view: View, project: Project) -> None:
    def filtered(page: Any) -> None:
        page.goto(f"{view.base}run/{project.runs[-1]}#status=failed&tag=redline")
        assert page.input_value("#f-status") == "failed" and page.input_value("#f-tag") == "redline"
        assert [page.locator(f"#{i} summary").inner_text().split()[1] for i in shown(page)] == ["询价不留手机号"]
        page.goto(f"{view.base}run/{project.runs[0]}#provider=bot&status=failed")
        assert len(shown(page)) == 2  # v1: the greeting and the price

    browse(filtered)


def test_the_diff_of_two_runs_is_one_form_away(browse: Browse, project: Project) -> None:
    def compare(page: Any) -> None:
        page.select_option("#diff-base", project.runs[0])
        page.select_option("#diff-head", project.runs[-1])
        page.click("form.pick button")
        page.wait_for_url("**/diff?**")
        text = page.inner_text("body")
        assert "已修复" in text and "greeting" in text and "fixed" not in text  # the newest run's language: Chinese

    browse(compare)


def test_the_pages_read_on_a_420_px_screen(browse: Browse, view: View, project: Project) -> None:
    def narrow(page: Any) -> None:
        page.set_viewport_size({"width": 420, "height": 900})
        page.goto(view.base)
        assert no_horizontal_scroll(page)
        page.screenshot(path=str(SHOTS / "runs-420.png"), full_page=True)
        page.goto(f"{view.base}run/{project.runs[-1]}")
        page.wait_for_selector(".review")
        assert no_horizontal_scroll(page)
        page.screenshot(path=str(SHOTS / "run-420.png"), full_page=True)
        conversation(page, "询价不留手机号").locator(".review").screenshot(path=str(SHOTS / "review-420.png"))
        polite = conversation(page, "语气礼貌")
        polite.locator("summary").click()
        assert no_horizontal_scroll(page)
        polite.locator(".review").screenshot(path=str(SHOTS / "review-judge-420.png"))
        page.goto(f"{view.base}diff?base={project.runs[0]}&head={project.runs[-1]}")
        assert no_horizontal_scroll(page)
        page.screenshot(path=str(SHOTS / "diff-420.png"), full_page=True)

    SHOTS.mkdir(exist_ok=True)
    browse(narrow)
