"""Files a team commits hold no absolute path of the machine (SPEC §32, docs/en/importers.md#portable-files):
imported suites, tests made from conversations, triage and label lines, review.log. Each is written from a
run made on an absolute suite path, and the project's absolute path must appear in none of them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body

BOT = '''
def respond(messages, context):
    return "收到：" + messages[-1]["content"]
'''
SUITE = """\
providers:
  - id: bot
    python: {bot}:respond
judge: {{model: openai/judge, api_base: "{judge}", api_key: sk-local-key}}
tests:
  - id: hi
    draft: true
    conversation:
      - user: 你好
        assert:
          - contains: 您好
  - id: polite
    conversation:
      - user: 几点关门？
    assert:
      - llm-rubric: 回复语气礼貌
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A project whose suite names its bot by an absolute path, run on the suite's absolute path."""
    root = tmp_path / "项目"
    (root / "suites").mkdir(parents=True)
    (root / "suites" / "bot.py").write_text(BOT, encoding="utf-8")
    verdict = json.dumps({"reason": "不礼貌", "pass": False}, ensure_ascii=False)
    cwd = Path.cwd()
    with OpenAIServer(lambda request, n: Reply(body=chat_body(verdict))) as judge:
        suite = root / "suites" / "sales.yaml"
        suite.write_text(SUITE.format(bot=root / "suites" / "bot.py", judge=judge.base), encoding="utf-8")
        os.chdir(root)
        try:
            code, out = invoke("run", str(suite), "--no-cache", "-q", "--include-drafts", "-o", str(root / "run.json"))
            assert code == 1, out
            yield root
        finally:
            os.chdir(cwd)


def _portable(path: Path, root: Path) -> str:
    text = path.read_text(encoding="utf-8")
    assert str(root) not in text, text
    return text


def test_the_run_itself_names_the_suite_absolutely(project: Path) -> None:
    """The premise of the other tests: what they read holds the absolute path."""
    assert str(project) in (project / "run.json").read_text(encoding="utf-8")


def test_triage_lines_name_the_suite_from_the_project_root_and_still_carry_over(project: Path) -> None:
    assert invoke("triage", str(project / "run.json"), "hi", "--as", "bot_defect")[0] == 0
    text = _portable(project / ".evalspec" / "triage.jsonl", project)
    assert json.loads(text)["suite"] == "suites/sales.yaml"
    code, out = invoke("run", str(project / "suites" / "sales.yaml"), "--no-cache", "-q", "--include-drafts",
                       "-o", str(project / "again.json"))
    again = json.loads((project / "again.json").read_text(encoding="utf-8"))
    [hi] = [r for r in again["results"] if r["test_id"] == "hi"]
    assert hi.get("attribution") == "bot_defect", out  # the later run still finds the line


def test_import_transcripts_writes_a_suite_without_the_machines_paths(project: Path) -> None:
    out = project / "suites" / "from-run.yaml"
    code, shown = invoke("import", "transcripts", str(project / "run.json"), "-o", str(out))
    assert code == 0, shown
    text = _portable(out, project)
    assert "# Imported by evalspec from ../run.json (suite sales.yaml)" in text
    assert yaml.safe_load(text)["providers"][0]["python"] == "bot.py:respond"
    assert invoke("validate", str(out))[0] == 0


def test_review_actions_write_nothing_absolute(project: Path) -> None:
    from evalspec.app.view.actions import Reviewer, approve, make_test, record_label, record_triage
    from evalspec.app.view.runs import RunStore

    reviewer = Reviewer(project, "小王", RunStore(project, [project / "run.json"]))
    run_id = json.loads((project / "run.json").read_text(encoding="utf-8"))["run_id"]
    suite = str(project / "suites" / "sales.yaml")
    record_triage(reviewer, {"run": run_id, "test": "polite", "attribution": "rule_misjudgment"})
    record_label(reviewer, {"run": run_id, "test": "polite", "provider": "bot", "assertion": 0, "verdict": "wrong"})
    make_test(reviewer, {"run": run_id, "test": "polite", "provider": "bot", "suite": str(project / "made.yaml")})
    approve(reviewer, {"suite": suite, "test": "hi", "force": True})
    for name in ("triage.jsonl", "labels.jsonl", "review.log"):
        _portable(project / ".evalspec" / name, project)
    assert json.loads(_portable(project / ".evalspec" / "labels.jsonl", project))["suite"] == "suites/sales.yaml"
    log = _portable(project / ".evalspec" / "review.log", project)
    assert " made test made.yaml:polite " in log and " approved suites/sales.yaml:" in log
    assert "python: suites/bot.py:respond" in _portable(project / "made.yaml", project)
