"""Botium folders import convo by convo (SPEC §31): what cannot be converted or checks nothing is left out and
named by its path relative to the folder; `#include NAME` resolves the partial; YAML / JSON convo files read."""

from __future__ import annotations

import json

import yaml

from tests.helpers import invoke


def _folder(tmp_path):
    src = tmp_path / "src"
    (src / "voice").mkdir(parents=True)
    (src / "shop").mkdir()
    (src / "shop" / "order.convo.txt").write_text(
        "order\n\n#me\n我要下单\n\n#include login\n\n#bot\n下单成功\n", encoding="utf-8")
    (src / "shop" / "login.pconvo.txt").write_text("login\n\n#me\n密码 123\n\n#bot\n登录成功\n", encoding="utf-8")
    (src / "voice" / "call.convo.txt").write_text("call\n\n#me\nMEDIA hello.wav\n\n#bot\n", encoding="utf-8")
    (src / "greet.convo.yml").write_text(yaml.safe_dump({"convos": [
        {"name": "greet", "steps": [{"me": ["yes"]}, {"bot": ["你好"]}]},
        {"name": "empty", "steps": [{"me": ["hi"]}]}]}, allow_unicode=True), encoding="utf-8")
    (src / "faq.convo.json").write_text(json.dumps({"convos": [
        {"name": "faq", "steps": [{"me": "营业时间？"}, {"bot": ["TEXT_CONTAINS_ANY 9点|九点"]}]}]}), encoding="utf-8")
    return src


def test_a_convo_that_checks_nothing_is_left_out_and_named_the_rest_written(tmp_path):
    code, out = invoke("import", "botium", str(_folder(tmp_path)), "-o", str(tmp_path / "out"))
    assert code == 0, out
    assert "refused voice/call.convo.txt: test 'call': checks nothing" in out
    assert "refused greet.convo.yml (empty): test 'empty': checks nothing" in out
    for suite in ("shop/order.yaml", "greet.yaml", "faq.yaml"):
        header = (tmp_path / "out" / suite).read_text(encoding="utf-8")
        assert "# Left out of this import" in header and "#   - voice/call.convo.txt: " in header
    assert not (tmp_path / "out" / "voice").exists()


def test_include_sections_resolve_the_partial_and_the_next_check_lands_after_it(tmp_path):
    code, out = invoke("import", "botium", str(_folder(tmp_path)), "-o", str(tmp_path / "out"))
    assert code == 0, out
    test, = yaml.safe_load((tmp_path / "out" / "shop" / "order.yaml").read_text(encoding="utf-8"))["tests"]
    assert test["conversation"] == [{"user": "我要下单"}, {"include": "fragments/login.yaml"}]
    assert test["assert"] == [{"icontains": "下单成功", "scope": {"turns": [2]}}]
    fragment = yaml.safe_load((tmp_path / "out" / "shop" / "fragments" / "login.yaml").read_text(encoding="utf-8"))
    assert fragment == {"conversation": [{"user": "密码 123", "assert": [{"icontains": "登录成功"}]}]}


def test_yaml_and_json_convo_files_are_read(tmp_path):
    code, out = invoke("import", "botium", str(_folder(tmp_path)), "-o", str(tmp_path / "out"))
    assert code == 0, out
    greet, = yaml.safe_load((tmp_path / "out" / "greet.yaml").read_text(encoding="utf-8"))["tests"]
    assert greet["conversation"] == [{"user": "yes", "assert": [{"icontains": "你好"}]}]
    faq, = yaml.safe_load((tmp_path / "out" / "faq.yaml").read_text(encoding="utf-8"))["tests"]
    assert faq["conversation"] == [{"user": "营业时间？", "assert": [{"contains-any": ["9点", "九点"]}]}]


def test_a_folder_where_nothing_is_left_is_refused(tmp_path):
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "a" / "call.convo.txt").write_text("call\n\n#me\nMEDIA hello.wav\n", encoding="utf-8")
    code, out = invoke("import", "botium", str(src), "-o", str(tmp_path / "out"))
    assert code == 2 and "refused a/call.convo.txt" in out and not (tmp_path / "out").exists()


def test_json_path_with_spaces_or_filters_becomes_jmespath_or_is_listed():
    from evalspec.authoring.importers.botium import _Converter

    conv = _Converter({}, {}, [])
    assert conv.asserter("JSON_PATH", False, ["$.items[?(@.type == 'text')].text", "hi"], "w") == [
        {"state": "contains(items[?type == 'text'].text, `\"hi\"`)"}]
    assert conv.asserter("JSON_PATH", False, ["$['first name']", "张三"], "w") == [
        {"state": {"path": '"first name"', "equals": "张三"}}]
    assert conv.asserter("JSON_PATH", False, ["$..name"], "w") == []
    assert conv.notes == ["w: JSON_PATH $..name: not converted (no JMESPath equivalent)"]


def test_scripting_memory_becomes_the_dataset_of_the_convos_that_use_it(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "greet.convo.txt").write_text("greet\n\n#me\n我叫$name，住在$city\n\n#bot\n你好，$name\n",
                                         encoding="utf-8")
    (src / "people.scriptingmemory.txt").write_text("|$name|$city\n张三|张三|北京\n李四|李四|上海\n", encoding="utf-8")
    code, out = invoke("import", "botium", str(src), "-o", str(tmp_path / "out"))
    assert code == 0, out
    test, = yaml.safe_load((tmp_path / "out" / "greet.yaml").read_text(encoding="utf-8"))["tests"]
    assert test["dataset"] == "people.jsonl"
    assert test["conversation"] == [{"user": "我叫{{ name }}，住在{{ city }}", "assert": [{"icontains": "你好，{{ name }}"}]}]
    rows = [json.loads(line) for line in (tmp_path / "out" / "people.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows == [{"id": "张三", "name": "张三", "city": "北京"}, {"id": "李四", "name": "李四", "city": "上海"}]
    assert "scripting memory" not in out
    from evalspec.config import load_suite
    from evalspec.plan.build import build_plan

    plan = build_plan([load_suite(tmp_path / "out" / "greet.yaml")])
    assert [(i.test_id, i.turns[0].text, i.turns[0].asserts[0].value) for i in plan] == [
        ("greet[张三]", "我叫张三，住在北京", "你好，张三"), ("greet[李四]", "我叫李四，住在上海", "你好，李四")]
