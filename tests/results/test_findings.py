"""What a failing check is explained by (turn, rule, facts, reply excerpt), read from run.json records."""

from __future__ import annotations

from pathlib import Path

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.reporters.markdown import render_markdown
from evalspec.results.findings import findings

BOT = """
def respond(messages, context):
    return "您好张三，您在北京对吧？工作我不记得了。"
"""

SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: recall
    conversation:
      - user: 我叫张三，在北京做测试工程师。
      - user: 还记得我吗？
        assert:
          - memory-recall: {name: 张三, city: 北京, job: 测试工程师}
"""


def test_a_memory_recall_failure_shows_the_reply_once_not_once_per_fact(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    data = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    (record,) = data["results"]
    assert record["status"] == "failed" and len(record["assertions"][0]["evidence"]) == 3  # one per fact
    (finding,) = findings(record)
    assert [(f.key, f.found) for f in finding.facts] == [("name", "张三"), ("city", "北京"), ("job", "")]
    assert len(finding.excerpts) == 1 and finding.excerpts[0].turn == 2
    assert finding.excerpts[0].text == "您好张三，您在北京对吧？工作我不记得了。"
    assert render_markdown(data, env={}).count("reply, turn 2:") == 1
