"""Botium asserters measured on real convos (connector samples): `TEXT` and `TEXT_EQUALS` accept any of their
arguments, `ENTITY_VALUES` and `ENTITY_CONTENT` check the NLU entities (docs/en/importers.md#coming-from-botium)."""

from __future__ import annotations

import re

import yaml

from evalspec.authoring.importers.botium import _Converter
from tests.helpers import invoke


def _check(name, args, negated=False):
    conv = _Converter({}, {}, [])
    return conv.asserter(name, negated, args, "w"), conv.notes


def test_text_equals_accepts_any_of_its_arguments():
    (check,), notes = _check("TEXT_EQUALS", ["您好", "你好"])
    assert not notes and set(check) == {"regex"}
    pattern = re.compile(check["regex"])
    assert pattern.search("你好") and pattern.search(" 您好 ") and not pattern.search("你好吗")
    (check,), _ = _check("TEXT", ["Im Joe", "Im George"], negated=True)
    assert set(check) == {"not-regex"} and re.search(check["not-regex"], "Im George")
    assert _check("TEXT", ["yes"]) == ([{"equals": "yes"}], [])


def test_entity_values_and_entity_content_check_the_entities():
    assert _check("ENTITY_VALUES", ["北京", "上海"]) == ([
        {"state": 'contains(entities[].value, `"北京"`)'}, {"state": 'contains(entities[].value, `"上海"`)'}], [])
    assert _check("ENTITY_CONTENT", ["city", "北京"], negated=True) == ([
        {"not-state": 'contains(entities[?entity == `"city"`].value, `"北京"`)'}], [])


def test_a_convo_checked_only_by_text_or_entity_asserters_is_imported(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "weather.convo.txt").write_text(
        "weather\n\n#me\n北京天气\n\n#bot\nENTITY_CONTENT city | 北京\n\n#me\nhi\n\n#bot\nTEXT hello | hi\n",
        encoding="utf-8")
    code, out = invoke("import", "botium", str(src), "-o", str(tmp_path / "out"))
    assert code == 0, out
    test, = yaml.safe_load((tmp_path / "out" / "weather.yaml").read_text(encoding="utf-8"))["tests"]
    assert [list(e["assert"][0]) for e in test["conversation"]] == [["state"], ["regex"]]
    code, out = invoke("validate", str(tmp_path / "out" / "weather.yaml"))
    assert code == 0, out


def test_text_without_arguments_is_any_text_and_an_utterance_name_its_phrasings():
    assert _check("TEXT", []) == ([{"regex": "(?s)."}], [])
    assert _check("TEXT_EQUALS", [], negated=True) == ([{"not-regex": "(?s)."}], [])
    conv = _Converter({}, {"GREETING": ["你好", "您好"]}, [])
    assert conv.asserter("TEXT_CONTAINS_ANY", False, ["GREETING"], "w") == [{"contains-any": ["你好", "您好"]}]


def test_env_function_is_the_environment_variable_and_other_functions_are_named(tmp_path, monkeypatch):
    """Botium-Framework's partial sends `$env(API_URL)`: the variable's value, as Botium sends it."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "order.convo.txt").write_text(
        "order\n\n#me\n地址 $env(SHOP_URL)\n\n#bot\n好的\n\n#me\n订单 $random(5)\n\n#bot\n收到\n", encoding="utf-8")
    code, out = invoke("import", "botium", str(src), "-o", str(tmp_path / "out"))
    assert code == 0, out
    assert "Botium's $random function is not converted: sent as written" in out and "$env" not in out
    test, = yaml.safe_load((tmp_path / "out" / "order.yaml").read_text(encoding="utf-8"))["tests"]
    assert [t["user"] for t in test["conversation"]] == ["地址 ${SHOP_URL}", "订单 $random(5)"]
    monkeypatch.setenv("SHOP_URL", "https://shop.example")
    from evalspec.config import load_suite

    suite = load_suite(tmp_path / "out" / "order.yaml")
    assert [t.text for t in suite.tests[0].conversation] == ["地址 https://shop.example", "订单 $random(5)"]
