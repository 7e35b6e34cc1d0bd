"""`evalspec view`'s "make a test" (SPEC §25, §22): POST /api/make-test writes a conversation as a draft
scripted test, as `evalspec import transcripts` does, against the real command on loopback."""

from __future__ import annotations

from typing import Any

import yaml

from tests.app.view.project import REVIEWER, Project, View, post
from tests.helpers import invoke


def test_make_test_starts_a_suite_then_appends_to_one_and_logs_it(view: View, project: Project) -> None:
    run_id = project.runs[0]
    answer = post(view, "/api/make-test", {"run": run_id, "test": "price", "provider": "bot",
                                           "suite": "suites/regressions.yaml"})
    assert answer.status_code == 200, answer.text
    new = project.root / "suites" / "regressions.yaml"
    assert answer.json()["path"] == str(new.resolve()) and answer.json()["test"] == "price"
    text = new.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert data["providers"] == [{"id": "bot", "python": "bot.py:respond"}]
    # the test checks what the source checked: its red line comes along (SPEC §25, never hollow)
    # the provider it was played on comes along (SPEC §26: it replays its conditions)
    assert data["tests"] == [{"id": "price", "draft": True, "providers": ["bot"], "conversation": [
        {"user": "价格多少？", "assert": [{"not-regex": "1[3-9]\\d{9}"}]}]}]
    assert "# failed there:" in text and "not-regex" in text  # the rule that failed on it, named
    assert invoke("validate", str(new))[0] == 0

    before = project.suite.read_text(encoding="utf-8")
    answer = post(view, "/api/make-test", {"run": run_id, "test": "price", "provider": "bot",
                                           "suite": "suites/sales.yaml"})
    assert answer.status_code == 200, answer.text
    after = project.suite.read_text(encoding="utf-8")
    assert after.startswith(before) and answer.json()["test"] == "price-2"  # comments and layout kept
    assert [t["id"] for t in yaml.safe_load(after)["tests"]][-1] == "price-2"
    log = project.lines("review.log")
    assert f" {REVIEWER} made test suites/regressions.yaml:price from {run_id} price @ bot" in log[-2]
    assert f" {REVIEWER} made test suites/sales.yaml:price-2 from {run_id} price @ bot" in log[-1]


def test_make_test_refuses_unknown_runs_tests_providers_and_suites_outside(view: View, project: Project) -> None:
    before = project.suite.read_text(encoding="utf-8")
    good = {"run": project.runs[0], "test": "price", "provider": "bot", "suite": "suites/sales.yaml"}
    for change, error in [({"run": "nope"}, "no run 'nope'"), ({"test": "nope"}, "no test nope"),
                          ({"provider": "nope"}, "no record price @ nope"), ({"suite": "../x.yaml"}, "outside"),
                          ({"suite": "suites/bot.py"}, "not a suite file"), ({"provider": None}, "`provider`")]:
        answer = post(view, "/api/make-test", {**good, **change})
        assert answer.status_code == 400 and error in answer.json()["error"], (change, answer.text)
    assert project.suite.read_text(encoding="utf-8") == before
    assert not (project.root.parent / "x.yaml").exists()


def test_make_a_test_from_a_failed_conversation_on_the_run_page(browser: Any, view: View, project: Project) -> None:
    def steps() -> None:
        context = browser.browser.new_context(viewport={"width": 1400, "height": 900})
        try:
            page = context.new_page()
            page.set_default_timeout(10_000)
            page.goto(view.url)
            page.click(f"a[href='/run/{project.runs[0]}']")
            page.wait_for_selector(".review")
            price = page.locator("details.test", has_text="询价不留手机号")
            price.locator("input.suite").fill("suites/from_page.yaml")
            price.locator("button.make-test").click()
            price.locator(".make-test .said", has_text="✓ 已生成草稿测试 price").wait_for()
        finally:
            context.close()

    browser.run(steps)
    written = yaml.safe_load((project.root / "suites" / "from_page.yaml").read_text(encoding="utf-8"))
    assert [t["id"] for t in written["tests"]] == ["price"] and written["tests"][0]["draft"] is True
