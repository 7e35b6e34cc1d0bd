"""Botium workbooks are read as Botium reads them (docs/en/importers.md#botium): each sheet by its name, the
content from the first filled cell on under a header row; convo sheets hold #me and #bot cells on rows of
their own (an empty row ends a convo) or question / answer rows; `PConvos` sheets are partials; a
scripting-memory sheet is a dataset. Two scripting-memory files of one name in two sub-folders stay two
datasets."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.helpers import invoke

openpyxl = pytest.importorskip("openpyxl")


def _book(path, sheets):
    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    book.save(path)


def _tests(path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]


def test_a_convo_sheet_with_one_sender_a_row_is_read_convo_by_convo(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _book(src / "shop.xlsx", {
        "Notes": [["not read: no convo in its name"]],
        "Convos": [[None, None], [None, "User", "Bot"],  # the content starts at its first filled cell
                   [None, "我要退货", None], [None, None, "请提供订单号\nBUTTONS 取消"], [None, "A123", None],
                   [None, None, "已受理"], [None, None, None],
                   [None, "营业时间？", None], [None, None, "TEXT_CONTAINS_ANY 9点|九点"]]})
    code, out = invoke("import", "botium", str(src), "-o", str(tmp_path / "out"))
    assert code == 0, out
    first, second = _tests(tmp_path / "out" / "shop.yaml")
    assert (first["name"], second["name"]) == ("Convos-B003", "Convos-B008")
    assert first["conversation"] == [
        {"user": "我要退货", "assert": [{"icontains": "请提供订单号"}, {"buttons": ["取消"]}]},
        {"user": "A123", "assert": [{"icontains": "已受理"}]}]
    assert second["conversation"] == [{"user": "营业时间？", "assert": [{"contains-any": ["9点", "九点"]}]}]


def test_question_answer_rows_with_a_name_column_and_a_partial_sheet(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _book(src / "faq.xlsx", {
        "Dialogs": [["Name", "Me", "Bot"], ["营业时间", "几点开门？", "九点"], ["地址", "在哪里？\nINCLUDE PConvos-A002", "北京"]],
        "PConvos": [["me", "bot"], ["yes", None], [None, "好的"]]})
    code, out = invoke("import", "botium", str(src), "-o", str(tmp_path / "out"))
    assert code == 0, out
    hours, place = _tests(tmp_path / "out" / "faq.yaml")
    assert (hours["name"], hours["conversation"]) == ("营业时间", [{"user": "几点开门？", "assert": [{"icontains": "九点"}]}])
    assert place["conversation"] == [{"user": "在哪里？"}, {"include": "fragments/pconvos-a002.yaml"}]
    fragment = yaml.safe_load((tmp_path / "out" / "fragments" / "pconvos-a002.yaml").read_text(encoding="utf-8"))
    assert fragment == {"conversation": [{"user": "yes", "assert": [{"icontains": "好的"}]}]}


def test_a_sheet_mixing_question_answer_rows_and_rows_of_one_sender_is_named(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _book(src / "mixed.xlsx", {"Convos": [["User", "Bot"], ["你好", "您好"], ["再见", None]]})
    (src / "ok.convo.txt").write_text("ok\n\n#me\nhi\n\n#bot\nhello\n", encoding="utf-8")
    code, out = invoke("import", "botium", str(src), "-o", str(tmp_path / "out"))
    assert code == 0, out
    assert "refused mixed.xlsx: " in out and "mixes question / answer rows (row 2) with rows of one sender (row 3)" in out


def test_a_scripting_memory_sheet_is_the_dataset_of_the_convos_that_use_it(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "order.convo.txt").write_text("order\n\n#me\n我要$dish\n\n#bot\n$dish 马上就好\n", encoding="utf-8")
    _book(src / "cases.xlsx", {"ScriptingMemory": [[None, None], [None, "$dish"], ["case1", "饺子"], ["case2", "面条"]]})
    code, out = invoke("import", "botium", str(src), "-o", str(tmp_path / "out"))
    assert code == 0, out
    test, = _tests(tmp_path / "out" / "order.yaml")
    assert test["dataset"] == "cases.jsonl"
    rows = [json.loads(line) for line in (tmp_path / "out" / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows == [{"id": "case1", "dish": "饺子"}, {"id": "case2", "dish": "面条"}]


def test_two_scripting_memory_files_of_one_name_stay_two_datasets(tmp_path):
    src = tmp_path / "src"
    for folder, var, values in (("a", "name", ["张三", "李四"]), ("b", "product", ["yes", "no"])):
        (src / folder).mkdir(parents=True)
        (src / folder / "people.scriptingmemory.txt").write_text(
            f"|${var}\n" + "".join(f"c{i}|{v}\n" for i, v in enumerate(values)), encoding="utf-8")
        (src / folder / f"{folder}.convo.txt").write_text(f"{folder}\n\n#me\n${var}\n\n#bot\n${var}\n", encoding="utf-8")
    code, out = invoke("import", "botium", str(src), "-o", str(tmp_path / "out"))
    assert code == 0, out
    datasets = {}
    for folder in ("a", "b"):
        test, = _tests(tmp_path / "out" / folder / f"{folder}.yaml")
        lines = (tmp_path / "out" / folder / test["dataset"]).read_text(encoding="utf-8").splitlines()
        datasets[folder] = [json.loads(line) for line in lines]
    assert datasets == {"a": [{"id": "c0", "name": "张三"}, {"id": "c1", "name": "李四"}],
                        "b": [{"id": "c0", "product": "yes"}, {"id": "c1", "product": "no"}]}
    code, out = invoke("validate", str(tmp_path / "out" / "a" / "a.yaml"), str(tmp_path / "out" / "b" / "b.yaml"))
    assert code == 0, out
