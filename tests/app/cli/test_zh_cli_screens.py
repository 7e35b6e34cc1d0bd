"""A Chinese suite's command-line screens in Chinese: `validate`'s problems with their "did you mean"
(a typo'd key and check, a bad regex, the full-width punctuation of a Chinese input method), `doctor`'s
table and `coverage`'s rule severities; in English they read as before, word for word."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import invoke

BOT = "def respond(messages, context):\n    return '您好，欢迎到店试驾'\n"
TYPOS = """\
description: 经销商客服
providers:
  - id: 销售助手
    python：bot.py:respond
tests:
  - id: price
    tags: [瑶光，追风]
    conversation:
      - user: 这台瑶光多少钱？
        asert:
          - contains: 万
      - user: 能分期吗？
        assert:
          - regex: "首付[0-9+"
          - not-conatins: 保证
          - contains: 首付
            severty: critical
"""
GOOD = """\
description: 经销商客服
providers:
  - id: 销售助手
    python: bot.py:respond
coverage:
  signal: [purchase_signal]
tests:
  - id: finance
    conversation:
      - user: 瑶光能分期吗？
        label: purchase_signal
        assert:
          - contains: 试驾
            severity: critical
          - contains: 到店
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with the dealer bot; no EVALSPEC_LANG: the suites' Chinese user turns choose the language."""
    monkeypatch.delenv("EVALSPEC_LANG")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "typos.yaml").write_text(TYPOS, encoding="utf-8")
    (tmp_path / "good.yaml").write_text(GOOD, encoding="utf-8")
    return tmp_path


def test_validate_names_each_problem_of_a_chinese_suite_in_chinese(project: Path) -> None:
    code, out = invoke("validate", "typos.yaml")
    assert code == 2
    assert out.splitlines() == [
        "错误 typos.yaml:4: 'python' 后面是全角冒号 '：'：YAML 要用半角冒号加一个空格 —— 写成 'python: bot.py:respond'",
        "错误 typos.yaml:7: tests[0].tags[0]: '瑶光，追风' 是一整项：全角逗号 '，' 不能分隔列表项 —— 写成 [瑶光, 追风]；"
        "如果逗号本来就是文字的一部分，加引号：['瑶光，追风']",
        "错误 typos.yaml:10: tests[0].conversation[0].asert: 不认识的键 'asert'（是不是想写 'assert'？）",
        "错误 typos.yaml:14: tests[0].conversation[1].assert[0].regex: 正则表达式写错了 '首付[0-9+'："
        "'[' 没有配对的 ']'（位置 7，从 0 数）",
        "错误 typos.yaml:15: tests[0].conversation[1].assert[1].not-conatins: 不认识的检查类型 'not-conatins'"
        "（是不是想写 'not-contains'？）",
        "错误 typos.yaml:17: tests[0].conversation[1].assert[2].severty: 'contains' 没有键 'severty'（是不是想写 'severity'？）",
        "发现 6 个问题；没有运行任何测试。",
    ]


def test_in_english_the_problems_read_as_the_loader_writes_them(project: Path) -> None:
    code, out = invoke("validate", "--lang", "en", "typos.yaml")
    assert code == 2
    assert "error typos.yaml:10: tests[0].conversation[0].asert: unknown key 'asert' (did you mean 'assert'?)" in out
    assert ("error typos.yaml:14: tests[0].conversation[1].assert[0].regex: bad regex '首付[0-9+': unterminated "
            "character set at position 7") in out
    assert not re.search(r"[\u4e00-\u9fff]", out.replace("瑶光", "").replace("追风", "").replace("首付", "")
                         .replace("保证", "").replace("万", ""))


def test_doctor_and_coverage_speak_the_suites_language(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = invoke("doctor", "good.yaml")
    assert code == 0, out
    head, row = out.splitlines()[:2]
    assert head.split() == ["角色", "位置", "模型", "密钥", "能连通", "延迟", "token", "数", "结构化输出", "可用", "校准"]
    assert row.split()[:5] == ["被测对象", "销售助手", "bot.py:respond", "已设置", "是"]
    code, out = invoke("coverage", "good.yaml")
    assert code == 0, out
    assert re.search(r"contains \(关键\)\s+good\.yaml:13", out) and re.search(r"contains \(重要\)\s+good\.yaml:15", out), out
    monkeypatch.setenv("EVALSPEC_LANG", "en")
    code, out = invoke("doctor", "good.yaml")
    assert out.splitlines()[0].split() == ["role", "where", "model", "key", "reachable", "latency", "tokens",
                                           "structured", "output", "usable", "calibration"]


LOG = ('{"id": "c002", "messages": [{"role": "user", "content": "你们销售电话多少？"}, '
       '{"role": "assistant", "content": "您可以加我：１３９１２３４５６７８（微信同号）"}]}\n')


def test_import_of_chinese_logs_refuses_and_notes_in_chinese(project: Path) -> None:
    (project / "chats.jsonl").write_text(LOG, encoding="utf-8")
    code, out = invoke("import", "transcripts", "chats.jsonl", "-o", "regressions.yaml")
    assert code == 2
    assert out.splitlines() == [
        "错误 regressions.yaml: 测试 'c002': 什么也不检查：来源里没有规则，套件里也没有 `defaults:` 规则；加上 "
        "--expect-state，或在 defaults: 下写规则（--allow-empty 仍会写入）",
        "已拒绝：1 个测试什么也不检查；没有写入任何文件（--allow-empty 仍会写入）"]
    code, out = invoke("import", "transcripts", "chats.jsonl", "-o", "regressions.yaml", "--allow-empty")
    assert code == 0 and "提示: 这些测试还什么都不检查：在 defaults: 下写规则，或加上 --expect-state" in out, out


def test_diff_of_two_chinese_runs_names_the_first_problem_in_chinese_and_its_json_stays_english(project: Path) -> None:
    (project / "price.yaml").write_text(GOOD.replace("contains: 到店", "contains: 万元"), encoding="utf-8")
    runs = [invoke("run", "price.yaml", "--no-cache", "-q")[1].split("run.json: ")[1].split()[0] for _ in range(2)]
    code, out = invoke("diff", *runs, "-o", "diff.json")
    assert "第 1 轮: contains: 万元: 没有找到 '万元'" in out and "did not find" not in out, out
    assert "turn 1: contains: 万元: did not find '万元'" in (project / "diff.json").read_text(encoding="utf-8")


def test_a_chinese_runs_reports_against_a_baseline_name_the_first_problem_in_chinese(project: Path) -> None:
    (project / "price.yaml").write_text(GOOD.replace("contains: 到店", "contains: 万元"), encoding="utf-8")
    base = invoke("run", "price.yaml", "--no-cache", "-q")[1].split("run.json: ")[1].split()[0]
    code, out = invoke("run", "price.yaml", "--no-cache", "--baseline", base, "--md", "report.md", "--html", "report.html")
    for shown in (out, (project / "report.md").read_text(encoding="utf-8"), (project / "report.html").read_text(encoding="utf-8")):
        assert "没有找到 &#39;万元&#39;" in shown or "没有找到 '万元'" in shown
        assert "did not find" not in shown
    head = out.split("run.json: ")[1].split()[0]
    assert "did not find '万元'" in json.dumps(json.loads(Path(head).read_text(encoding="utf-8"))["baseline"], ensure_ascii=False)  # English kept


def test_init_in_chinese_writes_its_starter_files_in_chinese(project: Path) -> None:
    code, out = invoke("init", "demo", "--lang", "zh")
    assert code == 0 and out.splitlines()[-1] == "下一步：cd demo && evalspec run suites/*.yaml"
    for rel in ("suites/example.yaml", "providers/my_bot.py", ".github/workflows/evalspec.yml", ".gitignore"):
        text = (project / "demo" / rel).read_text(encoding="utf-8")
        comments = [line.split("#", 1)[1] for line in text.splitlines() if "#" in line and "$schema" not in line]
        assert all(not re.search(r"[A-Za-z]{3,}", c.replace("evalspec", "").replace("baseline: auto", ""))
                   for c in comments), (rel, comments)
    assert "description: 我的第一个 evalspec 套件" in (project / "demo" / "suites" / "example.yaml").read_text(encoding="utf-8")
    assert '"""被测系统。' in (project / "demo" / "providers" / "my_bot.py").read_text(encoding="utf-8")


VALUES = """\
description: 经销商客服
providers:
  - id: 销售助手
    python: bot.py:respond
gate: {min_pass_rate: 很高}
tests:
  - id: finance
    repeat: 零
    conversation:
      - user: 能分期吗？
        label: purchase
        assert:
          - contains: 首付
            severity: critcal
      - user: 好的
        repeat: {n: 0}
        assert:
          - not-before: {pattern: 到店, turn: purchse}
"""


def test_validate_names_a_wrong_value_a_severity_and_a_label_in_chinese(project: Path) -> None:
    (project / "values.yaml").write_text(VALUES, encoding="utf-8")
    code, out = invoke("validate", "values.yaml")
    assert code == 2
    lines = [line.split(": ", 2)[-1] for line in out.splitlines()[:-1]]
    assert "gate.min_pass_rate 应当是数字，这里写的是 '很高'" in lines, out
    assert "repeat 应当是从 1 起的整数或映射（如 {key: value}），这里写的是 '零'" in lines, out
    assert "不认识的严重程度 'critcal'（是不是想写 'critical'？）；可以写：critical, major, minor" in lines, out
    assert "没有叫 'purchse' 的标签（是不是想写 'purchase'？）" in lines, out
