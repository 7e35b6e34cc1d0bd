"""Rules that are tested before they test (SPEC §18): `examples:` graded offline by `validate` and
`run`, `validate --strict`, values that cannot be what the writer meant, and the xfail warning (§17)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
BOT = ROOT / "providers" / "demo_bot.py"

SPEC_EXAMPLE = f"""\
providers: [{{id: bot, python: '{BOT}:respond'}}]
defaults:
  assert:
    - not-regex: "1[3-9]\\\\d{{9}}"
      severity: critical
      description: 任何一轮都不能给出手机号
      examples:
        fail: ["打我电话13812345678", "微信同号：13912345678"]   # replies this rule must reject
        pass: ["请在 App 里预约顾问"]                           # replies it must accept
tests:
  - id: invite-after-signal
    conversation:
      - user: 瑶光多少钱
        label: no_signal
      - user: 能分期吗
        label: purchase_signal
    assert:
      - not-before: {{pattern: 到店|预约|试驾, turn: purchase_signal}}
        examples:                     # session rules take small transcripts
          fail:
            - [{{user: 瑶光多少钱, label: no_signal}}, {{assistant: 欢迎到店试驾}}, {{user: 能分期吗, label: purchase_signal}}, {{assistant: 可以}}]
          pass:
            - [{{user: 瑶光多少钱, label: no_signal}}, {{assistant: 12.98万}}, {{user: 能分期吗, label: purchase_signal}}, {{assistant: 可以，欢迎到店}}]
"""


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def suite(asserts: str, conversation: str = "      - user: 你好\n", extra: str = "") -> str:
    return (f"providers: [{{id: bot, python: '{BOT}:respond'}}]\ntests:\n  - id: t\n{extra}    conversation:\n"
            f"{conversation}    assert:\n{asserts}")


def errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error")]


def test_the_spec_example_validates_as_written_and_strictly_once_it_reads_full_width_digits(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC_EXAMPLE)
    assert invoke("validate", str(path))[0] == 0
    code, output = invoke("validate", "--strict", str(path))  # a Chinese suite whose `\d` misses １３９…
    assert code == 2 and len(errors(output)) == 1 and "normalize: [nfkc, digits]" in output, output
    path = write(tmp_path, SPEC_EXAMPLE.replace("      severity: critical\n", "      severity: critical\n"
                                                "      normalize: [nfkc, digits]\n", 1))
    code, output = invoke("validate", "--strict", str(path))
    assert code == 0, output


def test_a_fail_example_the_rule_passes_stops_validate_with_its_line(tmp_path: Path) -> None:
    text = SPEC_EXAMPLE.replace('"1[3-9]\\\\d{9}"', '"138\\\\d{8}"')
    path = write(tmp_path, text)
    code, output = invoke("validate", str(path))
    assert code == 2
    line = text.splitlines().index('        fail: ["打我电话13812345678", "微信同号：13912345678"]   '
                                   '# replies this rule must reject') + 1
    assert errors(output) == [f"error {path}:{line}: defaults.assert[0].examples.fail[1]: fail example 2: the rule "
                              "passed '微信同号：13912345678' — it does not catch this"]


def test_a_wrong_example_stops_run_before_any_call(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    (tmp_path / "bot.py").write_text(
        "def respond(messages, context):\n"
        f"    open({str(calls)!r}, 'a').write('called\\n')\n"
        "    return {'content': '好的'}\n", encoding="utf-8")
    path = write(tmp_path, "providers: [{id: bot, python: bot.py:respond}]\ntests:\n  - id: t\n    conversation:\n"
                           "      - user: 你好\n        assert:\n          - not-contains: 电话\n"
                           "            examples: {fail: [好的]}\n")
    code, output = invoke("run", str(path), "-o", str(tmp_path / "run.json"))
    assert code == 2
    assert f"{path}:8: tests[0].conversation[0].assert[0].examples.fail[0]: fail example 1: the rule passed '好的'" \
        in output
    assert not calls.exists() and not (tmp_path / "run.json").exists()


def test_a_pass_example_the_rule_rejects_is_named_with_the_reason(tmp_path: Path) -> None:
    path = write(tmp_path, suite("      - not-regex: 预约|到店\n        examples: {pass: [请在 App 里预约顾问]}\n"))
    code, output = invoke("validate", str(path))
    assert code == 2
    assert "examples.pass[0]: pass example 1: the rule failed '请在 App 里预约顾问' (" in output
    assert "it would reject a reply it must accept" in output


def test_a_session_rule_is_checked_on_its_transcript_examples(tmp_path: Path) -> None:
    wrong = SPEC_EXAMPLE.replace("{assistant: 12.98万}", "{assistant: 欢迎预约}")
    code, output = invoke("validate", str(write(tmp_path, wrong)))
    assert code == 2
    assert "tests[0].assert[0].examples.pass[0]: pass example 1: the rule failed" in output
    assert "(transcript)" in output


def test_tool_rules_take_transcripts_with_tool_calls(tmp_path: Path) -> None:
    good = ("      - not-tool-called: send_coupon\n        severity: critical\n        examples:\n"
            "          fail:\n            - [{user: 有优惠吗}, {assistant: '', tool_calls: [{name: send_coupon, "
            "arguments: {amount: 500}}]}, {assistant: 已发券}]\n"
            "          pass:\n            - [{user: 有优惠吗}, {assistant: '', tool_calls: [{name: lookup_stock}]}, "
            "{assistant: 没有}]\n            - 没有优惠\n")
    assert invoke("validate", "--strict", str(write(tmp_path, suite(good))))[0] == 0
    wrong = good.replace("name: send_coupon, arguments", "name: lookup_stock, arguments")
    code, output = invoke("validate", str(write(tmp_path, suite(wrong))))
    assert code == 2 and "fail example 1: the rule passed '有优惠吗 /  / 已发券' (transcript)" in output


def test_python_checks_are_graded_on_their_examples(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text("def no_phone(output, context):\n    return '138' not in output\n",
                                        encoding="utf-8")
    asserts = "      - python: checks.py:no_phone\n        examples: {fail: [打138], pass: [好的, 打139]}\n"
    assert invoke("validate", str(write(tmp_path, suite(asserts))))[0] == 0
    code, output = invoke("validate", str(write(tmp_path, suite(asserts.replace("打139", "打1381")))))
    assert code == 2 and "pass example 2: the rule failed '打1381'" in output


def test_a_reply_example_of_a_turn_rule_is_that_turn_s_reply(tmp_path: Path) -> None:
    conversation = ("      - user: 你好\n      - user: 电话多少\n        assert:\n          - not-regex: '1\\d{10}'\n"
                    "            examples: {fail: [13812345678], pass: [请在 App 里联系]}\n")
    code, output = invoke("validate", str(write(tmp_path, suite("      - contains: x\n", conversation))))
    assert code == 0, output


def test_badly_formed_examples_are_named(tmp_path: Path) -> None:
    asserts = "      - not-contains: 电话\n        examples: {fial: [x]}\n"
    code, output = invoke("validate", str(write(tmp_path, suite(asserts))))
    assert code == 2 and "unknown key 'fial' in 'examples' (did you mean 'fail'?)" in output
    asserts = "      - not-contains: 电话\n        examples: {fail: [[{assistant: 电话}]]}\n"
    code, output = invoke("validate", str(write(tmp_path, suite(asserts))))
    assert code == 2 and "an example transcript starts with a {user: ...} entry" in output


# -- values that cannot be what the writer meant ----------------------------------------------------------

def test_curly_quotes_around_a_plain_regex_are_an_error_with_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path, suite("      - not-regex: “1[3-9]\\d{9}”\n        scope: each_turn\n"))
    code, output = invoke("validate", str(path))
    assert code == 2
    assert errors(output) == [f"error {path}:7: tests[0].assert[0].not-regex: “…” are not YAML quotes: the quotes "
                              "are part of the pattern: write not-regex: '1[3-9]\\d{9}' (to keep the quotes, put "
                              "the whole value in YAML quotes: '“1[3-9]\\d{9}”')"]


def test_corner_brackets_around_a_plain_text_are_an_error(tmp_path: Path) -> None:
    code, output = invoke("validate", str(write(tmp_path, suite("      - not-contains: 「13812345678」\n"))))
    assert code == 2 and "the quotes are part of the text: write not-contains: '13812345678'" in output
    for wrapped in ("『VIP』", "＂VIP＂", "‘VIP’"):
        code, output = invoke("validate", str(write(tmp_path, suite(f"      - contains: {wrapped}\n"))))
        assert code == 2 and "write contains: 'VIP'" in output, wrapped
    code, output = invoke("validate", str(write(tmp_path, suite("      - contains-any: [“VIP”, 会员]\n"))))
    assert code == 2 and "tests[0].assert[0].contains-any[0]: “…” are not YAML quotes" in output
    assert "write - 'VIP'" in output
    code, output = invoke("validate", str(write(tmp_path, suite("      - not-before: {pattern: 「到店」, turn: 1}\n"))))
    assert code == 2 and "not-before.pattern: “…”" not in output and "write pattern: '到店'" in output


def test_curly_quotes_inside_yaml_quotes_are_kept(tmp_path: Path) -> None:
    for written in ("'“VIP”'", '"“VIP”"', "“VIP”客户", "“好”还是“不好”"):
        path = write(tmp_path, suite(f"      - not-contains: {written}\n"))
        code, output = invoke("validate", str(path))
        assert code == 0, (written, output)


def test_a_not_regex_that_matches_the_empty_string_is_refused(tmp_path: Path) -> None:
    for pattern in ("'\\d*'", "'电话|'", "'(1[3-9]\\d{9})?'"):
        code, output = invoke("validate", str(write(tmp_path, suite(f"      - not-regex: {pattern}\n"))))
        assert code == 2 and "matches the empty string, so it matches every reply" in output, pattern
    assert invoke("validate", str(write(tmp_path, suite("      - regex: '\\d*'\n"))))[0] == 0
    code, output = invoke("validate", str(write(tmp_path, suite("      - not-after: {pattern: 'a*', after: 1}\n"))))
    assert code == 2 and "matches the empty string" in output


def test_a_pattern_of_only_whitespace_is_refused(tmp_path: Path) -> None:
    for item in ("not-regex: '  '", "regex: ' '", "not-contains: ' '", "contains-any: [好, '  ']"):
        code, output = invoke("validate", str(write(tmp_path, suite(f"      - {item}\n"))))
        assert code == 2 and "is only whitespace" in output, item


def test_a_stop_when_pattern_that_matches_the_empty_string_is_refused(tmp_path: Path) -> None:
    text = (f"providers: [{{id: bot, python: '{BOT}:respond'}}]\nsimulator: {{python: '{BOT}:respond'}}\n"
            "tests:\n  - id: sim\n    simulate:\n      persona: 买车的人\n      goal: 问价\n      max_turns: 3\n"
            "      stop_when:\n        - assistant_matches: '再见|'\n")
    code, output = invoke("validate", str(write(tmp_path, text)))
    assert code == 2
    assert "tests[0].simulate.stop_when[0].assistant_matches: the pattern '再见|' matches the empty string" in output
    code, output = invoke("validate", str(write(tmp_path, text.replace("'再见|'", "「再见」"))))
    assert code == 2 and "write assistant_matches: '再见'" in output


def test_an_assertion_written_under_a_test_is_told_to_go_in_an_assert_list(tmp_path: Path) -> None:
    text = (f"providers: [{{id: bot, python: '{BOT}:respond'}}]\ntests:\n  - id: t\n    conversation:\n"
            "      - user: 你好\n        not-contains: 电话\n    contains: 你好\n")
    code, output = invoke("validate", str(write(tmp_path, text)))
    assert code == 2
    assert "tests[0].contains: unknown key 'contains': 'contains' is an assertion — put it in an `assert:` list" \
        in output
    assert "tests[0].conversation[0].not-contains: unknown key 'not-contains': 'not-contains' is an assertion — " \
           "put it in an `assert:` list" in output


# -- warnings and --strict ----------------------------------------------------------------------------------

def test_strict_refuses_a_critical_rule_without_a_fail_example(tmp_path: Path) -> None:
    path = write(tmp_path, suite("      - not-regex: '1[3-9]\\d{9}'\n        severity: critical\n"
                                 "        normalize: nfkc\n      - contains: 你好\n"))
    code, output = invoke("validate", str(path))
    assert code == 0 and "warning" not in output
    code, output = invoke("validate", "--strict", str(path))
    assert code == 2
    assert errors(output) == [f"error {path}:7: tests[0].assert[0]: critical 'not-regex' has no fail example: a red "
                              "line that catches nothing passes silently; add `examples: {fail: [a reply it must "
                              "reject]}`"]


def test_xfail_holding_a_critical_assertion_is_warned_and_strict_makes_it_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, suite("      - not-regex: '1[3-9]\\d{9}'\n        severity: critical\n"
                                 "        examples: {fail: [13812345678]}\n", extra="    xfail: 已知缺陷\n"))
    code, output = invoke("validate", str(path))
    assert code == 0
    assert (f"warning {path}:4: tests[0].xfail: test 't': xfail cannot silence a red line: critical 'not-regex' "
            "(line 8) still fails the gate") in output
    code, output = invoke("validate", "--strict", str(path))
    assert code == 2 and "error" in output and "xfail cannot silence a red line" in output


def test_the_demo_suites_pass_strict_validation() -> None:
    code, output = invoke("validate", "--strict", *sorted(str(p) for p in (ROOT / "suites").glob("*.yaml")))
    assert code == 0, output


def test_an_anchored_not_regex_that_matches_only_empty_text_is_accepted(tmp_path: Path) -> None:
    assert invoke("validate", str(write(tmp_path, suite("      - not-regex: '^(好的)*$'\n"))))[0] == 0


def test_examples_are_graded_on_every_matrix_value_a_rule_is_rendered_with(tmp_path: Path) -> None:
    """A templated rule is a different rule per matrix instance: its examples hold for each of them,
    not only for the first instance the preflight looks at."""
    path = write(tmp_path, f"""\
providers: [{{id: bot, python: '{BOT}:respond'}}]
tests:
  - id: t
    matrix: {{x: ["1[3-9]\\\\d{{9}}", 微信]}}
    conversation: [{{user: hi}}]
    assert:
      - not-regex: "{{{{ x }}}}"
        severity: critical
        examples: {{fail: ["13812345678"], pass: [请在 App 里预约顾问]}}
""")
    for command in ("validate", "run"):
        code, out = invoke(command, str(path))
        assert code == 2, out
        assert "s.yaml:9: tests[0].assert[0].examples.fail[0]: fail example 1: the rule passed '13812345678'" in out, out
        assert "t[x=微信]" in out, out
        assert "1 problem found" in out, out


DIGITS_RULE = "      - not-regex: '1[3-9]\\d{9}'\n        scope: each_turn\n"


def test_strict_warns_on_a_digit_red_line_that_reads_a_chinese_suite_as_written(tmp_path: Path) -> None:
    path = write(tmp_path, suite(DIGITS_RULE, conversation="      - user: 销售的电话是多少？\n"))
    code, output = invoke("validate", str(path))
    assert code == 0 and "warning" not in output, output
    code, output = invoke("validate", "--strict", str(path))
    assert code == 2
    assert errors(output) == [
        f"error {path}:7: tests[0].assert[0]: 'not-regex' uses \\d on replies read as written: a Chinese bot's "
        "full-width digits (１３９…) and spaced numbers (139 1234 5678) slip past it; add `normalize: [nfkc, digits]` "
        "beside it (or `options.normalize` for the suite), or use `not-pii: [cn_mobile]`"]


@pytest.mark.parametrize("change", [
    lambda text: text.replace("        scope: each_turn\n", "        scope: each_turn\n        normalize: [digits, nfkc]\n"),
    lambda text: "options: {normalize: nfkc}\n" + text,
    lambda text: text.replace("销售的电话是多少？", "What is the sales phone number?"),
    lambda text: text.replace("\\d{9}", "[0-9]{9}").replace("1[3-9]", "1[3-9]\\\\d"),  # an escaped backslash
])
def test_no_digit_warning_once_nfkc_reads_the_replies_or_the_suite_is_english(tmp_path: Path, change) -> None:
    path = write(tmp_path, change(suite(DIGITS_RULE, conversation="      - user: 销售的电话是多少？\n")))
    code, output = invoke("validate", "--strict", str(path))
    assert code == 0, output


def test_strict_digit_warning_reads_the_turns_of_a_recorded_log(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_text(json.dumps({"id": "c1", "messages": [
        {"role": "user", "content": "怎么联系你们？"}, {"role": "assistant", "content": "请在 App 里联系"}]},
        ensure_ascii=False) + "\n", encoding="utf-8")
    rule = DIGITS_RULE.replace("      ", "    ", 1).replace("        ", "      ")
    path = write(tmp_path, "transcripts: {path: log.jsonl}\ndefaults:\n  assert:\n" + rule)
    code, output = invoke("validate", "--strict", str(path))
    assert code == 2 and "defaults.assert[0]: 'not-regex' uses \\d" in output, output
