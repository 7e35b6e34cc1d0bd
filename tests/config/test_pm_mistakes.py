"""Validation speaks to people who are not programmers (SPEC §9): each YAML mistake a product manager
made is named with its line and its fix, and all of them come out in one `validate` round."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from evalspec.app.cli.main import main

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"
HEAD = f"providers: [{{id: bot, python: '{BOT}:respond'}}]\ntests:\n  - id: t\n    conversation:\n"


def validate(tmp_path: Path, body: str) -> tuple[int, list[str]]:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + body, encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(path)])
    return result.exit_code, [line for line in result.output.splitlines() if line.startswith("error")]


def test_a_full_width_colon_is_named_on_its_own_line_with_the_fix(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 能分期吗\n        label：问配置\n      - user: 好的\n")
    assert code == 2
    assert errors == [f"error {tmp_path / 's.yaml'}:6: full-width colon '：' after 'label': YAML needs an ASCII "
                      "colon and a space — write 'label: 问配置'"]


def test_a_full_width_comma_in_a_list_is_not_silently_one_item(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 推荐哪台\n        assert:\n"
                                      "          - refers-to: {expected: 凌云, not: [瑶光，追风]}\n")
    assert code == 2
    assert len(errors) == 1 and ":7: " in errors[0]
    assert "'瑶光，追风' is one item: the full-width comma '，' does not separate list items — write [瑶光, 追风]" \
        in errors[0]


def test_a_quoted_full_width_comma_is_text_and_accepted(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 你好\n        assert:\n          - contains-any: ['你好，欢迎', hi]\n")
    assert code == 0, errors


def test_a_regex_escape_in_double_quotes_says_use_single_quotes(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 电话多少\n    assert:\n      - not-regex: \"1[3-9]\\d{9}\"\n")
    assert code == 2
    assert errors == [f"error {tmp_path / 's.yaml'}:7: '\\d' inside double quotes is read by YAML, not by the regex: "
                      "use single quotes — '1[3-9]\\d{9}'"]


def test_a_key_valid_at_another_depth_says_where_to_indent_it(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 电话多少\n    assert:\n      - not-regex: '1[3-9]\\d{9}'\n"
                                      "    scope: each_turn\n")
    assert code == 2
    assert len(errors) == 1 and ":8: tests[0].scope: unknown key 'scope'" in errors[0]
    assert "'scope' belongs to an assertion item ('- TYPE: value') — indent it under the assertion item" in errors[0]


def test_seven_different_typos_are_all_reported_in_one_round(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, """\
      - user: 能分期吗
        label：问配置
      - user: 推荐哪台
        asert:
          - refers-to: {expected: 凌云, not: [瑶光，追风]}
      - user: 电话多少
    assert:
      - not-regex: "1[3-9]\\d{9}"
      - contians: 微信
      - not-after: {pattern: 优惠, after: 问配值}
    scope: each_turn
""")
    assert code == 2
    text = "\n".join(errors)
    expected = ["full-width colon '：' after 'label'", "unknown key 'asert' (did you mean 'assert'?)",
                "'瑶光，追风' is one item", "inside double quotes is read by YAML, not by the regex: use single quotes",
                "unknown assertion type 'contians' (did you mean 'contains'?)",
                "label '问配值' does not exist (did you mean '问配置'?)", "'scope' belongs to an assertion item"]
    missing = [e for e in expected if e not in text]
    assert not missing, (missing, text)
    assert len(errors) == len(expected), text


def test_a_full_width_comma_between_mapping_entries_is_named_with_the_fix_and_the_rest_is_still_checked(
        tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 我叫张三，在北京\n      - user: 还记得吗？\n        assert:\n"
                                      "          - memory-recall: {name: 张三，city: 北京}\n          - contians: 张三\n")
    assert code == 2
    assert errors[0] == (f"error {tmp_path / 's.yaml'}:8: a full-width comma '，' inside {{…}}: YAML needs an ASCII "
                         "comma between entries and an ASCII colon and a space after each key — write "
                         "'- memory-recall: {name: 张三, city: 北京}'")
    assert len(errors) == 2 and "unknown assertion type 'contians'" in errors[1]


def test_a_full_width_comma_inside_a_mapping_value_is_text_and_accepted(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 推荐哪台\n        assert:\n          - refers-to: {expected: 凌云，瑶光}\n")
    assert code == 0, errors


def test_a_key_one_space_off_says_how_many_spaces_to_write(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 电话多少\n       assert:\n          - contains: 电话\n")
    assert code == 2
    assert errors == [f"error {tmp_path / 's.yaml'}:6: 'assert:' is indented 7 spaces, inside the list that starts "
                      "at line 5 ('- user: 电话多少'), whose items have their keys at 8 spaces: indent it 8 spaces to "
                      "add it to the item above, or write '- assert:' with its '- ' at 6 spaces to start a new item"]


def test_a_list_item_out_of_line_is_told_to_line_up_with_the_item_above(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 你好\n     - user: 再见\n")
    assert code == 2
    assert errors == [f"error {tmp_path / 's.yaml'}:6: the list item '- user: 再见' is indented 5 spaces, but the item "
                      "above it (line 5, '- user: 你好') starts at 6 spaces: line its '- ' up with that item (6 spaces)"]


def test_a_key_indented_deeper_than_its_sibling_is_not_read_as_text(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 你好\n          label: 问候\n")
    assert code == 2
    assert len(errors) == 1 and ":6: " in errors[0]
    assert ("'label: 问候' is indented 10 spaces, deeper than the line above (line 5, '- user: 你好'), so YAML reads "
            "it as part of that value: indent it 8 spaces to make it a key beside 'user'") in errors[0]


def test_a_colon_inside_a_text_says_to_quote_it(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 注意: 明天开门\n")
    assert code == 2
    assert errors == [f"error {tmp_path / 's.yaml'}:5: the text after 'user:' contains ': ', which YAML reads as "
                      "another key: quote the text — user: '注意: 明天开门'"]


def test_a_check_named_without_a_value_is_one_problem_with_the_fix(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 查订单\n        assert:\n          - tool-args-valid\n")
    assert code == 2
    assert errors == [f"error {tmp_path / 's.yaml'}:7: tests[0].conversation[0].assert[0]: 'tool-args-valid' needs a "
                      "value after a colon: write '- tool-args-valid: true'"]
    code, errors = validate(tmp_path, "      - user: 查订单\n        assert:\n          - tool-args-valid: true\n")
    assert code == 0, errors


def test_an_unquoted_template_at_the_start_of_a_value_says_quote_it(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: {{ model }}多少钱？\n      - user: 好的\n        assert:\n"
                                      "          - contains: {{ model }}\nvars: {model: 凌云}\n")
    assert code == 2
    assert errors == [f"error {tmp_path / 's.yaml'}:5: '{{{{ model }}}}多少钱？' starts with '{{{{', which YAML reads as "
                      "the start of a mapping: quote it — user: '{{ model }}多少钱？'",
                      f"error {tmp_path / 's.yaml'}:8: '{{{{ model }}}}' starts with '{{{{', which YAML reads as "
                      "the start of a mapping: quote it — contains: '{{ model }}'"]


def test_full_width_spaces_in_the_indentation_are_named_and_the_rest_is_checked(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 你好\n\u3000\u3000\u3000\u3000assert:\n"
                                      "          - contians: 您好\n")
    assert code == 2
    assert errors[0] == (f"error {tmp_path / 's.yaml'}:6: full-width spaces '　' in the indentation of 'assert:': "
                         "YAML indents with ASCII spaces only — replace them with spaces (8 spaces line it up as "
                         "it looks)")
    assert len(errors) == 2 and "unknown assertion type 'contians'" in errors[1]  # mended: the turn is still read


def test_a_missing_space_after_a_colon_is_named_with_the_fix(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user:凌云多少钱？\n      - user: 'ratio:3'\n")
    assert code == 2
    assert errors == [f"error {tmp_path / 's.yaml'}:5: no space after 'user:': YAML reads 'user:凌云多少钱？' as one "
                      "text — write a space after the colon: 'user: 凌云多少钱？'"]


def test_a_label_typed_on_the_questions_line_says_to_put_it_on_its_own_line(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: 凌云多少钱？ label: price\n")
    assert code == 2
    assert errors == [f"error {tmp_path / 's.yaml'}:5: 'label: price' is written on the line of 'user:', so YAML "
                      "reads it as part of that text: put 'label:' on a line of its own, lined up with 'user:' — "
                      "user: 凌云多少钱？, then label: price on the next line"]


def test_a_word_yaml_reads_as_true_false_or_a_number_says_quote_it(tmp_path: Path) -> None:
    code, errors = validate(tmp_path, "      - user: no\n        assert:\n          - contains: yes\n"
                                      "      - user: 1.0\n      - user: 是\n        assert:\n          - contains: 5\n")
    assert code == 2
    where = tmp_path / "s.yaml"
    assert errors == [f"error {where}:5: tests[0].conversation[0].user: YAML reads `no` as false: quote it, user: 'no'",
                      f"error {where}:7: tests[0].conversation[0].assert[0].contains: YAML reads `yes` as true: "
                      "quote it, contains: 'yes'",
                      f"error {where}:8: tests[0].conversation[1].user: YAML reads `1.0` as a number: quote it, "
                      "user: '1.0'"]
