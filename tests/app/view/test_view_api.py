"""`evalspec view`'s JSON API and guard, against the real command on loopback (SPEC §22)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalspec.results.stats import format_rate
from evalspec.review.judge_eval import load_labels
from tests.app.view.project import REVIEWER, Project, View, get, post
from tests.helpers import invoke


def test_every_request_without_the_token_is_403(view: View) -> None:
    for path in ("/", "/api/runs", "/run/x", "/diff"):
        assert get(view, path).status_code == 403
    assert get(view, "/api/runs", params={"token": "wrong"}).status_code == 403
    assert get(view, "/api/runs", headers={"X-Evalspec-Token": view.token}).status_code == 200
    assert get(view, "/api/runs", params={"token": view.token}).status_code == 200


def test_opening_the_printed_url_sets_a_cookie_that_reads_but_cannot_write(view: View, project: Project) -> None:
    opened = httpx.get(view.url, timeout=10)
    assert opened.status_code == 302 and opened.headers["location"] == "/"
    cookie = opened.headers["set-cookie"]
    assert view.token in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    jar = dict(opened.cookies)
    assert get(view, "/api/runs", cookies=jar).status_code == 200
    body = {"run": project.runs[-1], "test": "price", "provider": "bot", "attribution": "bot_defect", "note": ""}
    refused = post(view, "/api/triage", body, token=None, cookies=jar)
    assert refused.status_code == 403 and "X-Evalspec-Token" in refused.json()["error"]
    assert post(view, "/api/triage", body, token=None, params={"token": view.token}).status_code == 403


def test_a_host_that_is_not_the_bound_address_or_localhost_is_refused(view: View) -> None:
    port = view.base.rsplit(":", 1)[1].strip("/")
    token = {"X-Evalspec-Token": view.token}
    assert get(view, "/api/runs", headers={**token, "Host": f"attacker.example:{port}"}).status_code == 403
    assert get(view, "/api/runs", headers={**token, "Host": f"localhost:{port}"}).status_code == 200
    assert get(view, "/api/runs", headers={**token, "Host": f"127.0.0.1:{port}"}).status_code == 200


def test_api_runs_lists_the_runs_newest_first(view: View, project: Project) -> None:
    runs = get(view, "/api/runs", headers={"X-Evalspec-Token": view.token}).json()
    assert [r["id"] for r in runs] == project.runs[::-1]
    newest = project.run_json(project.runs[-1])
    assert runs[0] == {"id": newest["run_id"], "started": newest["started_at"], "suites": ["suites/sales.yaml"],
                       "passed": newest["summary"]["passed"], "failed": newest["summary"]["failed"],
                       "errors": newest["summary"]["error"]}
    assert (runs[1]["passed"], runs[0]["passed"]) == (1, 2)  # v2 fixed the greeting


def test_triage_is_written_as_evalspec_triage_writes_it(view: View, project: Project) -> None:
    run_id = project.runs[0]
    answer = post(view, "/api/triage", {"run": run_id, "test": "price", "provider": "bot",
                                       "attribution": "bot_defect", "note": "手机号外泄"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["records"][0]["triage"]["who"] == REVIEWER
    from_view = json.loads(project.lines("triage.jsonl")[-1])
    cwd = Path.cwd()
    os.chdir(project.root)
    try:  # the same call made on the command line, for comparison
        assert invoke("triage", f".evalspec/runs/{run_id}/run.json", "greeting", "--as", "pending_fact")[0] == 0
    finally:
        os.chdir(cwd)
    from_cli = json.loads(project.lines("triage.jsonl")[-1])
    assert list(from_view) == list(from_cli)  # the same keys in the same order
    assert {k: from_view[k] for k in ("suite", "test_id", "provider", "as", "note", "who", "status", "run_id")} == {
        "suite": "suites/sales.yaml", "test_id": "price", "provider": "bot", "as": "bot_defect", "note": "手机号外泄",
        "who": REVIEWER, "status": "failed", "run_id": run_id}
    record = next(r for r in project.run_json(run_id)["results"] if r["test_id"] == "price")
    assert record["attribution"] == "bot_defect" and record["triage"]["who"] == REVIEWER


@pytest.mark.parametrize(("body", "reason"), [
    ({"test": "price", "attribution": "bot_defect"}, "`run` must be a non-empty string"),
    ({"run": "nope", "test": "price", "attribution": "bot_defect"}, "no run 'nope' (runs: "),
    ({"run": 0, "test": "price", "attribution": "bug"}, "unknown class 'bug'; valid: bot_defect"),
    ({"run": 0, "test": "prise", "attribution": "bot_defect"}, "did you mean 'price'"),
    ({"run": 0, "test": "refund", "attribution": "bot_defect"}, "nothing to attribute"),
])
def test_a_bad_triage_body_is_400_with_the_reason(view: View, project: Project, body: dict[str, Any], reason: str) -> None:
    if body.get("run") == 0:
        body = {**body, "run": project.runs[-1]}
    before = project.lines("triage.jsonl")
    answer = post(view, "/api/triage", body)
    assert answer.status_code == 400 and reason in answer.json()["error"], answer.text
    assert project.lines("triage.jsonl") == before
    assert post(view, "/api/triage", "{not json").status_code == 400
    assert post(view, "/api/triage", "[1]").json() == {"error": "the body must be a JSON object"}


def judged(project: Project) -> tuple[str, int]:
    run_id = project.runs[-1]
    record = next(r for r in project.run_json(run_id)["results"] if r["test_id"] == "polite")
    return run_id, next(i for i, a in enumerate(record["assertions"]) if a["type"] == "llm-rubric")


def test_a_judge_verdict_marked_becomes_a_judge_eval_label(view: View, project: Project) -> None:
    run_id, index = judged(project)
    for verdict, label in (("wrong", False), ("right", True)):
        answer = post(view, "/api/label", {"run": run_id, "test": "polite", "provider": "bot", "assertion": index,
                                          "verdict": verdict, "note": "其实很冷淡"})
        assert answer.status_code == 200, answer.text
        line = json.loads(project.lines("labels.jsonl")[-1])
        assert line["label"] is label and line["who"] == REVIEWER and line["assert"] == {"llm-rubric": "回复语气礼貌", "scope": "conversation"}
        assert line["transcript"][-1] == {"role": "assistant", "content": "晚上九点关门"}
    items = load_labels(project.root / ".evalspec" / "labels.jsonl")  # judge-eval reads the file as it is
    assert [(i.label, i.spec.type) for i in items][-2:] == [(False, "llm-rubric"), (True, "llm-rubric")]


@pytest.mark.parametrize(("change", "reason"), [
    ({"verdict": "maybe"}, "`verdict` must be 'right' or 'wrong'"),
    ({"assertion": "0"}, "`assertion` must be the assertion's index"),
    ({"assertion": 9}, "must be an index of the record's 1 assertions"),
    ({"test": "price", "assertion": 0}, "has no judge verdict to mark"),
])
def test_a_bad_label_body_is_400_with_the_reason(view: View, project: Project, change: dict[str, Any], reason: str) -> None:
    run_id, index = judged(project)
    body = {"run": run_id, "test": "polite", "provider": "bot", "assertion": index, "verdict": "wrong", **change}
    answer = post(view, "/api/label", body)
    assert answer.status_code == 400 and reason in answer.json()["error"], answer.text


def test_approve_refuses_paths_outside_the_project(view: View, project: Project, tmp_path: Path) -> None:
    outside = tmp_path / "other.yaml"
    outside.write_text(project.suite.read_text(encoding="utf-8"), encoding="utf-8")
    (project.root / "suites" / "link.yaml").symlink_to(outside)
    for suite in (str(outside), "../other.yaml", "suites/../../other.yaml", "suites/link.yaml"):
        answer = post(view, "/api/approve", {"suite": suite, "test": "refund"})
        assert answer.status_code == 400 and "outside" in answer.json()["error"], (suite, answer.text)
    assert "draft: true" in outside.read_text(encoding="utf-8")
    answer = post(view, "/api/approve", {"suite": "suites/bot.py", "test": "refund"})
    assert answer.status_code == 400 and "not a suite file" in answer.json()["error"]
    answer = post(view, "/api/approve", {"suite": "suites/sales.yaml", "test": "greeting"})
    assert answer.status_code == 400 and "is not a draft" in answer.json()["error"]


def test_approve_takes_draft_out_of_the_suite_and_logs_it(view: View, project: Project) -> None:
    before = project.suite.read_text(encoding="utf-8")
    answer = post(view, "/api/approve", {"suite": "suites/sales.yaml", "test": "refund"})
    assert answer.status_code == 200, answer.text
    after = project.suite.read_text(encoding="utf-8")
    removed = [line for line in before.splitlines() if line not in after.splitlines()]
    assert removed == ["    draft: true   # 待评审"] and "    # 待评审" in after.splitlines()
    assert [line for line in before.splitlines() if line != removed[0]] == [
        line for line in after.splitlines() if line != "    # 待评审"]
    log = project.lines("review.log")[-1]
    assert f" {REVIEWER} approved suites/sales.yaml:{answer.json()['line']} refund" in log
    again = post(view, "/api/approve", {"suite": "suites/sales.yaml", "test": "refund"})
    assert again.status_code == 400 and "is not a draft" in again.json()["error"]


def test_approving_a_draft_that_failed_asks_first_naming_its_failed_checks(view: View, project: Project) -> None:
    before = project.suite.read_text(encoding="utf-8")
    body = {"suite": "suites/sales.yaml", "test": "hours"}
    for asked in ({**body, "run": project.runs[-1]}, body):  # the viewed run, else the newest run holding it
        answer = post(view, "/api/approve", asked)
        assert answer.status_code == 409, answer.text
        assert answer.json()["failed"] == [{"assertion": "contains: 十点", "reason": "没有找到 '十点'"}]  # the pages' words
        assert project.runs[-1] in answer.json()["error"] and "force: true" in answer.json()["error"]
    assert project.suite.read_text(encoding="utf-8") == before  # nothing written
    assert post(view, "/api/approve", {**body, "force": "yes"}).status_code == 400
    forced = post(view, "/api/approve", {**body, "run": project.runs[0], "force": True})
    assert forced.status_code == 200, forced.text
    assert project.lines("review.log")[-1].endswith(f"despite 1 failed check in run {project.runs[0]}")
    assert "    name: 营业时间\n    conversation:" in project.suite.read_text(encoding="utf-8")


def text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html.split("</style>")[-1])


def test_every_page_speaks_one_language(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--lang` decides; else a run's page speaks its run's language (Chinese turns here) and the home and
    diff pages the newest run's; attribution classes are named, never coded."""
    from evalspec.app.view import pages
    from evalspec.app.view.runs import RunStore
    from evalspec.results.compare import compare_runs

    monkeypatch.delenv("EVALSPEC_LANG")
    store = RunStore(project.root)
    (base, _), (head, head_path) = store.load(project.runs[0]), store.load(project.runs[-1])
    head["results"][1]["attribution"] = "rule_misjudgment"
    zh_home, en_home = text(pages.run_list(store, "zh")), text(pages.run_list(store, "en"))
    assert "对比两次运行" in zh_home and "运行记录" in zh_home and "passed" not in zh_home and "Diff" not in zh_home
    assert "Diff two runs" in en_home and "通过" not in en_home
    run_zh = pages.run_page(project.runs[-1], head, "t", REVIEWER, project.runs[0], None, project.root, head_path)
    assert '<html lang="zh">' in run_zh and "← 运行记录" in run_zh and "与上一次运行对比" in run_zh
    assert '<option value="rule_misjudgment">规则误判</option>' in run_zh
    assert '"规则误判"' in run_zh and '"rule_misjudgment", "规则误判"' in run_zh  # the panel's choice by name
    run_en = pages.run_page(project.runs[-1], head, "t", REVIEWER, None, "en", project.root, head_path)
    assert '<option value="rule_misjudgment">rule misjudgment</option>' in run_en and "← runs" in run_en
    diff = compare_runs(base, head)
    assert "已修复" in pages.diff_page(project.runs[0], project.runs[-1], diff, pages.home_lang(store, None))
    assert "fixed" in pages.diff_page(project.runs[0], project.runs[-1], diff, "en")


def test_pages_list_the_runs_show_a_run_and_diff_two(view: View, project: Project) -> None:
    jar = dict(httpx.get(view.url, timeout=10).cookies)
    listing = get(view, "/", cookies=jar).text
    assert all(f'href="/run/{r}"' in listing for r in project.runs) and "<svg" in listing
    gate = project.run_json(project.runs[-1])["gate"]  # each run's pass rate with its interval
    rate = format_rate(gate["verdicts_passed"], gate["verdicts_passed"] + gate["verdicts_failed"])
    assert "n=" in rate and rate in listing
    page = get(view, f"/run/{project.runs[-1]}", cookies=jar).text
    assert rate in page
    assert 'id="review-data"' in page and "询价不留手机号" in page and view.token in page
    diff = get(view, "/diff", params={"base": project.runs[0], "head": project.runs[-1]}, cookies=jar)
    assert diff.status_code == 200 and "已修复" in diff.text and "greeting" in diff.text
    assert get(view, "/run/nope", cookies=jar).status_code == 404


@pytest.mark.parametrize(("host", "bound", "allowed"), [
    ("127.0.0.1:8765", "127.0.0.1", True), ("localhost:8765", "127.0.0.1", True), ("LOCALHOST", "127.0.0.1", True),
    ("[::1]:8765", "127.0.0.1", True), ("evil.example:8765", "127.0.0.1", False), ("127.0.0.1.evil.example", "127.0.0.1", False),
    ("192.168.1.5:8765", "127.0.0.1", False), ("", "127.0.0.1", False),
    ("review.lan:80", "review.lan", True), ("192.168.1.5:8765", "0.0.0.0", True), ("rebind.example", "0.0.0.0", False),
])
def test_the_host_check(host: str, bound: str, allowed: bool) -> None:
    from evalspec.app.view.server import host_allowed

    assert host_allowed(host, bound) is allowed


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-m", "evalspec", "view", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, encoding="utf-8")
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def test_a_run_json_named_from_outside_dir_is_read_not_changed(project: Project, tmp_path: Path) -> None:
    elsewhere = tmp_path / "artifact" / "run.json"
    elsewhere.parent.mkdir()
    shutil.copy(project.root / ".evalspec" / "runs" / project.runs[0] / "run.json", elsewhere)
    (tmp_path / "dir").mkdir()
    process, url = start(str(tmp_path / "dir"), str(elsewhere), "--port", "0", "--reviewer", "ci")
    try:
        base, token = url.split("?token=")
        runs = httpx.get(base + "api/runs", headers={"X-Evalspec-Token": token}, timeout=10).json()
        assert [r["id"] for r in runs] == [project.runs[0]]
        before = elsewhere.read_bytes()
        answer = httpx.post(base + "api/triage", headers={"X-Evalspec-Token": token}, timeout=10, json={
            "run": project.runs[0], "test": "price", "provider": "bot", "attribution": "infrastructure", "note": None})
        assert answer.status_code == 200 and answer.json()["written"] == [str(tmp_path / "dir" / ".evalspec" / "triage.jsonl")]
        assert elsewhere.read_bytes() == before
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_port_in_use_is_a_usage_error(view: View, project: Project) -> None:
    port = view.base.rsplit(":", 1)[1].strip("/")
    done = subprocess.run([sys.executable, "-m", "evalspec", "view", str(project.root), "--port", port],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port 0" in done.stderr
