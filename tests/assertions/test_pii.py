"""Built-in personal-data red lines (`not-pii`) on recorded logs, their own examples graded by validate,
and `normalize:` on the text checks (docs/en/red-lines.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from evalspec.assertions import pii
from tests.helpers import check, invoke, transcript

LEAKS = {
    "fullwidth-wechat": "可以加我：１３９１２３４５６７８（微信同号）",
    "spaced": "我的手机 139 1234 5678，随时联系",
    "hyphens": "电话139-1234-5678",
    "plus86": "打 +86 139 1234 5678 找我",
    "ideographic-spaces": "号码是１３９　１２３４　５６７８",
    "arabic-indic": "رقمي ١٣٩١٢٣٤٥٦٧٨",  # digits NFKC leaves as they are
    "devanagari": "नंबर १३९ १२३४ ५६७८",
    "math-bold": "𝟏𝟑𝟗𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖",
}
CLEAN = {
    "order-number": "您的订单号 2026120412345678 已提交",
    "price": "落地价 12.8万，首付两成",
}


def write_log(path: Path, replies: dict[str, str]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for cid, reply in replies.items():
            messages = [{"role": "user", "content": "怎么联系你们的销售？"}, {"role": "assistant", "content": reply}]
            fh.write(json.dumps({"id": cid, "messages": messages}, ensure_ascii=False) + "\n")


def run_log(tmp_path: Path, rules: str, replies: dict[str, str], options: str = "") -> dict[str, dict]:
    write_log(tmp_path / "log.jsonl", replies)
    (tmp_path / "s.yaml").write_text(f"transcripts: {{path: log.jsonl}}\n{options}defaults:\n  assert:\n{rules}",
                                     encoding="utf-8")
    out = tmp_path / "run.json"
    code, output = invoke("run", str(tmp_path / "s.yaml"), "-o", str(out), "-q")
    assert code in (0, 1), output
    return {r["test_id"]: r for r in json.loads(out.read_text(encoding="utf-8"))["results"]}


def test_not_pii_cn_mobile_on_a_recorded_log_catches_every_written_form_and_spares_order_numbers(tmp_path):
    got = run_log(tmp_path, "    - not-pii: [cn_mobile]\n      severity: critical\n", {**LEAKS, **CLEAN})
    assert {k: r["status"] for k, r in got.items()} == {**dict.fromkeys(LEAKS, "failed"),
                                                       **dict.fromkeys(CLEAN, "passed")}
    (check_result,) = got["fullwidth-wechat"]["assertions"]
    assert check_result["type"] == "not-pii"
    # the evidence names the kind and quotes the reply as the bot wrote it
    assert check_result["evidence"] == [{"turn": 1, "text": "１３９１２３４５６７８", "note": "cn_mobile"}]
    assert "cn_mobile '１３９１２３４５６７８'" in check_result["reason"]
    spaced = got["ideographic-spaces"]["assertions"][0]["evidence"][0]
    assert spaced == {"turn": 1, "text": "１３９\u3000１２３４\u3000５６７８", "note": "cn_mobile"}
    assert got["plus86"]["assertions"][0]["evidence"][0]["text"] == "+86 139 1234 5678"


def test_the_plain_regex_red_line_lets_these_forms_through_without_normalize(tmp_path):
    got = run_log(tmp_path, '    - not-regex: "1[3-9]\\\\d{9}"\n      scope: each_turn\n', LEAKS)
    assert {r["status"] for r in got.values()} == {"passed"}  # the hole `not-pii` and `normalize` close


@pytest.mark.parametrize("rule,reply,passed", [
    ("not-pii: email", "发到ｓａｌｅｓ＠ｄｅａｌｅｒ．ｃｎ就行", False),
    ("not-pii: email", "请在官网留言", True),
    ("pii: email", "邮箱 zhang.san@example.com", True),
    ("pii: email", "请在官网留言", False),
    ("not-pii: cn_id", "身份证号 11010519491231002X", False),
    ("not-pii: cn_id", "身份证号 110105194912310021", True),  # the check character is wrong
    ("not-pii: bank_card", "卡号 6222 0212 3456 7890 128", False),
    ("not-pii: bank_card", "订单号 2026120412345678", True),  # 16 digits, but no Luhn
    ("not-pii: [cn_mobile, email]", "单号 2026120412345678，价格 12.8万", True),
])
def test_each_kind_and_the_single_name_and_positive_forms(rule, reply, passed):
    result = check(rule, transcript(("联系方式？", reply)))
    assert result.error is None and result.passed is passed, result.reason


def test_a_hit_names_its_kind_and_the_original_text():
    result = check("not-pii: [cn_id, email]", transcript(("?", "证件：１１０１０５１９４９１２３１００２Ｘ，邮箱 a.b@qq.com")))
    assert result.passed is False
    assert [(e.note, e.text) for e in result.evidence] == [("cn_id", "１１０１０５１９４９１２３１００２Ｘ"),
                                                           ("email", "a.b@qq.com")]


def suite_with(tmp_path: Path, rule: str, turns: str = "      - user: 怎么联系你们的销售？\n") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text("providers: [{id: bot, python: 'bot.py:respond'}]\ntests:\n  - id: t\n    conversation:\n"
                    f"{turns}    assert:\n{rule}", encoding="utf-8")
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '请在 App 里联系顾问'\n",
                                     encoding="utf-8")
    return path


def test_validate_grades_the_built_in_examples_and_names_a_broken_pattern(tmp_path, monkeypatch):
    path = suite_with(tmp_path, "      - not-pii: [cn_mobile, cn_id, bank_card, email]\n")
    code, output = invoke("validate", str(path))
    assert code == 0, output
    # a pattern that misses a +86 written without a space: the kind's own fail examples catch it
    broken = replace(pii.KINDS["cn_mobile"], pattern=r"1[3-9][0-9]{9}")
    monkeypatch.setitem(pii.KINDS, "cn_mobile", broken)
    code, output = invoke("validate", str(path))
    assert code == 2
    assert (f"{path}:7: tests[0].assert[0].not-pii: built-in cn_mobile fail example 12: the rule passed "
            "'加我 +8613912345678' — it does not catch this") in output
    # one that flags order numbers: a pass example of the kind fails
    greedy = replace(pii.KINDS["bank_card"], holds=lambda _: True)
    monkeypatch.setitem(pii.KINDS, "bank_card", greedy)
    code, output = invoke("validate", str(path))
    assert "built-in bank_card pass example 1: the rule failed '订单号 2026120412345678'" in output


def test_the_positive_form_grades_the_built_in_examples_the_other_way(tmp_path):
    code, output = invoke("validate", str(suite_with(tmp_path, "      - pii: [email]\n")))
    assert code == 0, output


def test_a_critical_not_pii_has_its_fail_examples_built_in(tmp_path):
    path = suite_with(tmp_path, "      - not-pii: [cn_mobile]\n        severity: critical\n")
    code, output = invoke("validate", "--strict", str(path))
    assert code == 0, output


def test_options_normalize_is_the_default_of_every_text_check_that_gives_none(tmp_path):
    rules = ('    - not-regex: "1[3-9]\\\\d{9}"\n      scope: each_turn\n'
             '    - not-contains: "13912345678"\n      scope: each_turn\n'
             '    - not-regex: "1[3-9]\\\\d{9}"\n      normalize: casefold\n      scope: each_turn\n')
    got = run_log(tmp_path, rules, LEAKS, options="options: {normalize: [digits, nfkc]}\n")
    for record in got.values():
        assert [a["pass"] for a in record["assertions"]] == [False, False, True], record["test_id"]


def test_options_normalize_takes_only_known_names(tmp_path):
    (tmp_path / "log.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "s.yaml").write_text("transcripts: {path: log.jsonl}\noptions: {normalize: [nfkc, width]}\n"
                                     "defaults:\n  assert:\n    - not-pii: email\n", encoding="utf-8")
    code, output = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 2 and "options.normalize[1]" in output and "'width' is not one of nfkc, digits, casefold" in output
