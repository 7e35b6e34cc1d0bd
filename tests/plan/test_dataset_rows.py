"""What a `dataset:` row may hold (docs/en/suite-format.md#dataset): every row is checked before the run's
first call, so no row stops a run half played and no row's check passes for being empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.config import load_suite
from evalspec.plan.build import build_plan
from tests.helpers import invoke
from tests.plan.helpers import jsonl, project

# a spreadsheet's export: a byte-order mark, CRLF line ends, Chinese headers, a quoted cell on two lines,
# no line break after the last row
SHEET = '\ufeffid,问题,follow_up\r\n车1,"两行\r\n的问题",好的\r\n" 车2 ",在吗,谢谢\r\n7,问,追'


def test_a_spreadsheet_export_reads_as_written(tmp_path: Path) -> None:
    suite = project(tmp_path, "faq.csv", "")
    (tmp_path / "faq.csv").write_bytes(SHEET.encode("utf-8"))
    suite.write_text(suite.read_text(encoding="utf-8").replace("{{ question }}", "{{ 问题 }}"), encoding="utf-8")
    plan = build_plan([load_suite(suite)])
    # an id's surrounding spaces are not part of it (`" 车2 "` and `车2` would be two look-alike instances)
    assert [i.test_id for i in plan] == ["faq[车1]", "faq[车2]", "faq[7]"]
    assert [t.text for t in plan[0].turns] == ["两行\r\n的问题", "好的"] and plan[2].turns[1].text == "追"


def test_a_row_that_does_not_render_is_found_before_anything_plays(in_tmp: Path) -> None:
    # row 2's empty cell makes an empty user message: the run used to play row 1, then stop saying
    # "nothing was run", and `validate` said ok (it rendered the first row only)
    project(in_tmp, "faq.csv", "question,follow_up\n在吗,好的\n你好,\n续航,多少\n")
    for command in ("validate", "run"):
        code, out = invoke(command, "s.yaml")
        assert code == 2 and "empty user message after rendering (dataset faq.csv line 3" in out, out
    assert not (in_tmp / "calls.log").exists()


SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: faq
    dataset: faq.csv
    conversation:
      - user: "{{ question }}"
    assert:
      - contains: "{{ expected }}"
      - not-regex: "{{ forbidden }}"
"""


@pytest.mark.parametrize("row, named", [
    ("在吗,,手机号", "tests[0].assert[0].contains: the text is empty: it would match almost any reply"),
    ("在吗,收到, ", "tests[0].assert[1].not-regex: the pattern is only whitespace"),
    ("在吗,收到,\\d*", "tests[0].assert[1].not-regex: the pattern '\\\\d*' matches the empty string"),
])
def test_a_check_that_renders_hollow_is_refused_as_if_written_so(in_tmp: Path, row: str, named: str) -> None:
    # `contains: ""` written is refused; from an empty cell it passed every reply ("found ''")
    project(in_tmp, "faq.csv", f"question,expected,forbidden\n在吗,收到,手机号\n{row}\n")
    (in_tmp / "s.yaml").write_text(SUITE, encoding="utf-8")
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and named in out and "(after rendering) (dataset faq.csv line 3" in out, out


def test_a_var_that_renders_a_check_empty_is_refused_too(in_tmp: Path) -> None:
    (in_tmp / "s.yaml").write_text("providers: [{id: bot, python: bot.py:respond}]\ntests:\n  - id: t\n"
                                   "    vars: {expected: ''}\n    conversation: [{user: 在吗}]\n"
                                   "    assert: [{contains: '{{ expected }}'}]\n", encoding="utf-8")
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and "s.yaml:6: tests[0].assert[0].contains: the text is empty" in out, out


@pytest.mark.parametrize("content, named", [
    (jsonl({"question": "a", "follow_up": "b"}, {"question": "c", "follow_up": None}),
     "faq.jsonl:2: this row's field 'follow_up' is null"),
    (jsonl({"id": ["x"], "question": "a", "follow_up": "b"}), "faq.jsonl:1: this row's 'id' is a JSON list"),
    (jsonl({"id": {"k": 1}, "question": "a", "follow_up": "b"}), "faq.jsonl:1: this row's 'id' is a JSON object"),
    (jsonl({"id": "订单\n1", "question": "a", "follow_up": "b"}), "faq.jsonl:1: this row's 'id' '订单\\n1' holds a line break"),
    (jsonl({"id": "q1", "question": "a", "follow_up": "b"}, {"id": " q1 ", "question": "c", "follow_up": "d"}),
     "faq.jsonl:2: instance id 'faq[q1]' is also that of the row at line 1"),
])
def test_a_row_whose_values_cannot_be_meant_is_named(in_tmp: Path, content: str, named: str) -> None:
    project(in_tmp, "faq.jsonl", content)
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and named in out and "Traceback" not in out, out


def test_a_csv_header_naming_a_column_twice_is_named(in_tmp: Path) -> None:
    # one of the two cells was dropped without a word
    project(in_tmp, "faq.csv", "question,follow_up,question\na,b,c\n")
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and "faq.csv:1: the header names 'question' twice (columns 1 and 3)" in out, out


def test_rows_with_problems_are_named_up_to_twenty_then_counted(in_tmp: Path) -> None:
    project(in_tmp, "faq.jsonl", jsonl({"question": "a", "follow_up": "b"}, *({"question": "c"} for _ in range(25))))
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and out.count("this row has no field 'follow_up'") == 20, out
    assert "and 5 more rows with a problem like these" in out, out


def test_a_row_whose_id_is_that_of_a_written_test_is_named(in_tmp: Path) -> None:
    project(in_tmp, "faq.jsonl", jsonl({"id": "问候", "question": "a", "follow_up": "b"},
                                       {"id": "x", "question": "c", "follow_up": "d"}))
    suite = in_tmp / "s.yaml"
    suite.write_text(suite.read_text(encoding="utf-8") + "  - id: faq[x]\n    conversation: [{user: 你好}]\n"
                     "    assert: [{contains: 收到}]\n", encoding="utf-8")
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and "faq.jsonl:2: instance id 'faq[x]' is also that of the test written at s.yaml:14" in out, out


@pytest.mark.parametrize("name, content, named", [
    ("faq.csv", "question,follow_up\nok,fine\n在吗,谢谢\n".encode("gbk"),
     'faq.csv:3: this line is not UTF-8 text (it reads as GBK/GB18030); save the file as UTF-8 (in Excel: "CSV UTF-8")'),
    ("faq.csv", "question,follow_up\n在吗,好\n".encode("utf-16"), "faq.csv:1: this line is not UTF-8 text (it is UTF-16)"),
    ("faq.jsonl", jsonl({"question": "ok", "follow_up": "fine"}, {"question": "在吗", "follow_up": "好"}).encode("gbk"),
     "faq.jsonl:2: this line is not UTF-8 text (it reads as GBK/GB18030); save the file as UTF-8"),
])
def test_a_dataset_saved_in_another_encoding_names_the_line_and_the_fix(in_tmp: Path, name: str, content: bytes,
                                                                         named: str) -> None:
    # a CSV from a Chinese Excel is GBK: the error named a byte of an 8 KiB decoding block, not the line
    project(in_tmp, name, "")
    (in_tmp / name).write_bytes(content)
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and named in out, out


def test_a_check_value_a_row_renders_is_checked_like_a_written_one(in_tmp: Path) -> None:
    # `not-contains-any: []` written is refused; a row's empty list passed every reply ("none of  found")
    project(in_tmp, "faq.jsonl", jsonl({"question": "在吗", "words": ["手机号"]}, {"question": "你好", "words": []}))
    (in_tmp / "s.yaml").write_text(SUITE.replace("faq.csv", "faq.jsonl").replace(
        "      - contains: \"{{ expected }}\"\n      - not-regex: \"{{ forbidden }}\"\n",
        "      - not-contains-any: \"{{ words }}\"\n"), encoding="utf-8")
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and "tests[0].assert[0].not-contains-any: contains-any needs at least 1 item (after rendering) " \
                         "(dataset faq.jsonl line 2" in out, out


def test_a_two_character_chinese_field_typed_with_one_slip_is_suggested(in_tmp: Path) -> None:
    # `问提` for `问题` is one character of two: 0.5 alike, below difflib's 0.6, so nothing was suggested
    project(in_tmp, "faq.csv", "问提,follow_up\n能分期吗？,好的\n")
    (in_tmp / "s.yaml").write_text((in_tmp / "s.yaml").read_text(encoding="utf-8").replace(
        "{{ question }}", "{{ 问题 }}"), encoding="utf-8")
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and "did you mean '问提'?" in out, out


def test_a_chinese_named_list_field_keeps_its_type_in_a_check(tmp_path: Path) -> None:
    # `"{{ 关键词 }}"` rendered the list to its text ("['手机号', '身份证']"): only ASCII names kept their type
    suite = project(tmp_path, "faq.jsonl", jsonl({"question": "在吗", "follow_up": "好", "关键词": ["手机号", "身份证"]}))
    suite.write_text(suite.read_text(encoding="utf-8").replace(
        '      - contains: "收到：{{ follow_up }}"\n', '      - not-contains-any: "{{ 关键词 }}"\n'), encoding="utf-8")
    (instance,) = build_plan([load_suite(suite)])
    assert instance.asserts[0].value == ["手机号", "身份证"]


def test_ids_and_values_beyond_64_bits_are_read_exactly(tmp_path: Path) -> None:
    # two ids one apart past 2**64 read as one float: "two rows with one id", and the question's number changed
    suite = project(tmp_path, "faq.jsonl", '{"id": 18446744073709551617, "question": 18446744073709551617, '
                                           '"follow_up": "好"}\n{"id": 18446744073709551618, "question": 1, '
                                           '"follow_up": "好"}\n')
    first, second = build_plan([load_suite(suite)])
    assert [first.test_id, second.test_id] == ["faq[18446744073709551617]", "faq[18446744073709551618]"]
    assert first.turns[0].text == "18446744073709551617"
