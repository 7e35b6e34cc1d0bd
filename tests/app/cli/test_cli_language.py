"""The command line's own messages speak the team's language (SPEC §32, docs/en/reports-and-gate.md#language):
`validate`, `init` and `import` follow `--lang`, else `report: {lang}`, else EVALSPEC_LANG, else the user
turns, else the system locale; `validate` lists its problems in file and line order."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import invoke

BROKEN = """\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: a
    conversation:
      - user: 你好，我想买车
        assert:
          - contians: 您好
  - id: b
    conversation:
      - user: 价格多少？
        assert:
          - regex: "["
"""
GOOD = "providers:\n  - id: bot\n    python: bot.py:respond\ntests:\n  - id: a\n    conversation:\n      - user: 你好\n" \
       "        assert:\n          - contains: 您好\n"


@pytest.fixture(autouse=True)
def no_team_language(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSPEC_LANG")  # tests/conftest.py sets it: here the suites decide
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)


def _suite(tmp_path: Path, text: str) -> str:
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '您好'\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    return str(tmp_path / "s.yaml")


def test_validate_frames_a_chinese_suites_problems_in_chinese_and_in_line_order(tmp_path: Path) -> None:
    code, out = invoke("validate", _suite(tmp_path, BROKEN))
    assert code == 2
    assert "发现 2 个问题；没有运行任何测试。" in out and "problems found" not in out
    lines = [line for line in out.splitlines() if line.startswith("错误 ")]
    assert len(lines) == 2 and ":9:" in lines[0] and ":14:" in lines[1], out


def test_lang_en_flips_the_frame_and_a_chinese_suite_that_validates_says_so_in_chinese(tmp_path: Path) -> None:
    code, out = invoke("validate", _suite(tmp_path, BROKEN), "--lang", "en")
    assert code == 2 and "2 problems found; nothing was run." in out and "error " in out
    code, out = invoke("validate", _suite(tmp_path, GOOD))
    assert code == 0 and "通过：1 个套件，1 个测试，计划 1 段对话" in out, out
    code, out = invoke("validate", _suite(tmp_path, "report: {lang: en}\n" + GOOD))
    assert code == 0 and "ok: 1 suite, 1 test, 1 conversation planned" in out, out


def test_init_follows_the_system_locale_or_lang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    code, out = invoke("init", str(tmp_path / "a"))
    assert code == 0 and "已创建 " in out and "下一步：" in out and "created " not in out
    code, out = invoke("init", str(tmp_path / "b"), "--lang", "en")
    assert code == 0 and "created " in out and "next: " in out


def test_an_import_of_chinese_conversations_sums_up_in_chinese(tmp_path: Path) -> None:
    source = tmp_path / "cases.csv"
    source.write_text("test_id,user,contains\na,你好,您好\nb,价格多少,万\n", encoding="utf-8")
    code, out = invoke("import", "csv", str(source), "-o", str(tmp_path / "out"))
    assert code == 0, out
    assert "检查：保留 2 个，1 个未转换" in out and "已写入 " in out
    code, out = invoke("import", "csv", str(source), "-o", str(tmp_path / "out2"), "--lang", "en")
    assert "checks: 2 kept, 1 not converted" in out


def test_walls_name_the_command_to_run_next(tmp_path: Path) -> None:
    cut = tmp_path / "run.json"
    cut.write_text('{"results": [', encoding="utf-8")
    code, out = invoke("report", str(cut))
    assert code == 2 and "--resume" in out and "evalspec run" in out, out
    code, out = invoke("run", _suite(tmp_path, GOOD), "--resume", str(tmp_path / "nowhere"))
    assert code == 2 and "without --resume" in out, out


def test_a_run_over_recorded_logs_speaks_its_users_language_from_the_first_line(tmp_path: Path) -> None:
    """A `transcripts:` suite has no written user turns: its logs' users decide, so the progress lines above
    a Chinese summary are Chinese too (before: English lines, then a Chinese summary)."""
    (tmp_path / "logs.jsonl").write_text(
        '{"id": "c1", "messages": [{"role": "user", "content": "瑶光能分期吗？"}, '
        '{"role": "assistant", "content": "可以，首付两成。"}]}\n', encoding="utf-8")
    suite = tmp_path / "logs.yaml"
    suite.write_text("transcripts: {path: logs.jsonl}\ndefaults:\n  assert:\n    - not-regex: 保证\n",
                     encoding="utf-8")
    code, out = invoke("run", str(suite), "--no-cache", "-o", str(tmp_path / "run.json"))
    assert code == 0, out
    progress = next(line for line in out.splitlines() if "c1" in line)
    assert progress.startswith("通过"), progress
