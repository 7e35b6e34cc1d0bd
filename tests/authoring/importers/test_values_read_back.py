"""Imported values read back as the source's text (SPEC §31): Rasa files are read as YAML 1.2 (`yes` is
text, as Rasa reads it), and every importer writes text so that evalspec's loader reads it as that text."""

from __future__ import annotations

import json

import pytest

from evalspec.authoring.importers import dump_yaml
from evalspec.authoring.importers.yaml12 import load_yaml12
from evalspec.config.loader import load_suite
from evalspec.config.yamlfile import load_yaml
from tests.helpers import invoke

TRICKY = ["yes", "No", "on", "OFF", "y", "n", "~", "null", "True", "1:20", "0x1F", "010", "1_000", "2024-01-01",
          "=", ".inf", "1e3", "12", "price：100", "user:你好", "- a", "k: v", "# not a comment", "“好”", "是", "{{ x }}"]


@pytest.mark.parametrize("text", TRICKY)
def test_every_written_text_reads_back_as_itself(text):
    data = {"tests": [{"id": "t", "conversation": [{"user": text, "assert": [{"contains-all": [text]}]}]}]}
    found: list = []
    loaded, _ = load_yaml(dump_yaml(data), "suite.yaml", found)
    assert loaded == data and not found


def test_rasa_files_are_read_as_yaml_1_2():
    assert load_yaml12("a: [yes, no, on, off, Yes, true, FALSE, 1:20, 2024-01-01, ~, 0x1F, 1.5]") == {
        "a": ["yes", "no", "on", "off", "Yes", True, False, "1:20", "2024-01-01", None, 31, 1.5]}


RASA_YES = """\
test_cases:
  - test_case: confirm the transfer
    steps:
      - user: yes
      - bot: 好的，已转账
      - user: /SetSlots(confirm=on)
      - slot_was_set:
          - confirm: on
      - user: no
        assertions:
          - bot_uttered:
              buttons:
                - title: Yes
                  payload: /affirm
                - title: off
                  payload: /deny
"""


def test_rasa_yes_and_no_are_sent_and_checked_as_written(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "e2e.yml").write_text(RASA_YES, encoding="utf-8")
    code, out = invoke("import", "rasa", str(tmp_path / "src"), "-o", str(tmp_path / "out"))
    assert code == 0, out
    suite = load_suite(tmp_path / "out" / "e2e.yaml")
    test, = suite.tests
    turns = [t for t in test.conversation if t.kind == "user"]
    assert [t.text for t in turns] == ["yes", "/SetSlots(confirm=on)", "no"]
    written = (tmp_path / "out" / "e2e.yaml").read_text(encoding="utf-8")
    assert "equals: 'on'" in written and "- 'Yes'\n" in written and "- 'off'\n" in written
    assert "True" not in written and "False" not in written


def test_deepeval_turns_written_as_json_or_python_text_are_read_like_a_list(tmp_path):
    turns = [{"role": "user", "content": "我要退货"}, {"role": "assistant", "content": "请提供订单号。"}]
    goldens = [{"scenario": "json text", "expected_outcome": "退货成功", "turns": json.dumps(turns, ensure_ascii=False)},
               {"scenario": "python text", "expected_outcome": "退货成功", "turns": repr(turns)},
               {"scenario": "unreadable", "expected_outcome": "退货成功", "turns": "[{'role': 'user'"}]
    source = tmp_path / "goldens.json"
    source.write_text(json.dumps(goldens, ensure_ascii=False), encoding="utf-8")
    code, out = invoke("import", "deepeval", str(source), "-o", str(tmp_path / "out"))
    assert code == 0, out
    first, second, third = load_suite(tmp_path / "out" / "goldens.yaml").tests
    for test in (first, second):
        assert test.recorded == "inline"
        assert [(t.kind, t.text) for t in test.conversation] == [("user", "我要退货"), ("assistant", "请提供订单号。")]
    assert "golden-3-unreadable: turns" in out and "its turns are not converted" in out
