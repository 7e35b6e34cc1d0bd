"""Spreadsheets (CSV as Excel/Sheets export it: BOM, Chinese) become suites and go back to the same CSV."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalspec import run
from evalspec.app.cli.main import main
from evalspec.config import load_suite
from evalspec.play.runner import RunOptions

ROWS = [
    ["test_id", "user", "label", "contains", "not_contains", "regex", "not_regex", "name", "tags"],
    ["invite", "这台车是哪年的？", "ask_year", "", "到店|预约", "", "", "邀约时机", "sales|邀约"],
    ["", "能分期吗？", "finance", "分期", "", "首付\n\\d+", "", "", ""],
    ["refund", "我要退款，订单号 A|B 123", "", "退款|A\\|B", "", "", "1[3-9]\\d{9}", "", "售后"],
]


def sheet(tmp_path: Path) -> Path:
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(ROWS)
    path = tmp_path / "cases.csv"
    path.write_bytes(b"\xef\xbb\xbf" + out.getvalue().encode("utf-8"))  # as a spreadsheet saves "CSV UTF-8"
    return path


def test_rows_become_turns_and_checks_and_the_suite_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["import", "csv", str(sheet(tmp_path)), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    path = tmp_path / "out" / "cases.yaml"
    suite = load_suite(path)
    invite, refund = suite.tests
    assert invite.name == "邀约时机" and invite.tags == ["sales", "邀约"]
    assert [t.label for t in invite.conversation] == ["ask_year", "finance"]
    assert [(a.name, a.value) for a in invite.conversation[0].asserts] == [("not-contains", "到店"),
                                                                           ("not-contains", "预约")]
    assert [(a.name, a.value) for a in invite.conversation[1].asserts] == [("contains", "分期"), ("regex", "首付"),
                                                                           ("regex", "\\d+")]
    assert [a.value for a in refund.conversation[0].asserts] == ["退款", "A|B", "1[3-9]\\d{9}"]
    data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data  # the python stub echoes
    status = {r["test_id"]: r["status"] for r in data["results"]}
    assert status == {"invite": "failed", "refund": "passed"}  # the stub's echo has no 首付


def test_export_writes_the_same_sheet_back(tmp_path: Path) -> None:
    CliRunner().invoke(main, ["import", "csv", str(sheet(tmp_path)), "-o", str(tmp_path / "out")])
    result = CliRunner().invoke(main, ["export", "csv", str(tmp_path / "out" / "cases.yaml"),
                                       "-o", str(tmp_path / "back.csv")])
    assert result.exit_code == 0, result.output
    raw = (tmp_path / "back.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline=""))) == ROWS[:2] + [
        ["invite", "能分期吗？", "finance", "分期", "", "首付\n\\d+", "", "", ""], ROWS[3]]


def test_a_sheet_without_a_user_column_names_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("test_id,question,contians\nx,hello,hi\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["import", "csv", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "bad.csv:1" in result.output and "did you mean 'contains'" in result.output
    assert "no 'user' column" in result.output


def test_export_masks_the_secrets_a_suite_expands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOT_TOKEN", "bot-token-5551234")
    (tmp_path / "s.yaml").write_text("""\
providers: [{id: m, model: openai/m, api_base: "http://127.0.0.1:9/v1"}]
tests:
  - id: login
    conversation:
      - user: "log in with ${BOT_TOKEN}"
        assert: [{not-contains: "${BOT_TOKEN}"}]
""", encoding="utf-8")
    result = CliRunner().invoke(main, ["export", "csv", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "s.csv")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "s.csv").read_text(encoding="utf-8-sig")
    assert "bot-token-5551234" not in text and "log in with ***" in text


def test_cells_are_sent_and_matched_as_written_and_exported_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.servers import OpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent-0123456")
    user = "我的 key 是 ${OPENAI_API_KEY}，模板 {{ secret }} 与 {% endraw %} 原样发送"
    rows = [ROWS[0], ["raw", user, "", "{{ secret }}|${OPENAI_API_KEY}", "{% if x %}", "", "", "", ""]]
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    (tmp_path / "t.csv").write_text(out.getvalue(), encoding="utf-8")
    with OpenAIServer() as server:
        result = CliRunner().invoke(main, ["import", "csv", str(tmp_path / "t.csv"), "-o", str(tmp_path / "out"),
                                           "--provider", f"{{model: openai/m, api_base: '{server.base}'}}"])
        assert result.exit_code == 0, result.output
        data = run([tmp_path / "out" / "t.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert [c["messages"][-1]["content"] for c in server.chats()] == [user]  # not the key, not a rendered template
    assert data["results"][0]["status"] == "passed", data["results"][0]  # the echo holds both literal values
    back = CliRunner().invoke(main, ["export", "csv", str(tmp_path / "out" / "t.yaml"), "-o", str(tmp_path / "b.csv")])
    assert back.exit_code == 0, back.output
    assert list(csv.reader(io.StringIO((tmp_path / "b.csv").read_text(encoding="utf-8-sig"), newline=""))) == rows


def test_cells_wrapped_in_typographic_quotes_keep_them_and_the_suite_validates(tmp_path: Path) -> None:
    # a sheet's “VIP” is text with its quotes; written as a plain YAML scalar, SPEC §18's quote rule would
    # refuse the imported suite, which must validate as written (SPEC §14)
    rows = [ROWS[0], ["q", "「你好」", "", "“VIP”", "『内部价』", "", "", "‘名字’", ""]]
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    (tmp_path / "q.csv").write_text(out.getvalue(), encoding="utf-8")
    result = CliRunner().invoke(main, ["import", "csv", str(tmp_path / "q.csv"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    check = CliRunner().invoke(main, ["validate", str(tmp_path / "out" / "q.yaml")])
    assert check.exit_code == 0, check.output
    (test,) = load_suite(tmp_path / "out" / "q.yaml").tests
    assert test.name == "‘名字’" and test.conversation[0].text == "「你好」"
    assert [a.value for a in test.conversation[0].asserts] == ["“VIP”", "『内部价』"]
