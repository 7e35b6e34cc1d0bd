"""`evalspec import deepeval` and importers that never write a hollow suite (SPEC §19)."""

from __future__ import annotations

import json

from evalspec.config.loader import load_suite
from tests.helpers import invoke

GOLDENS = [
    {"scenario": "退货：屏幕闪烁的笔记本", "expected_outcome": "客户拿到退货标签并知道退款时间",
     "user_description": "着急的客户", "context": ["保修一年"],
     "turns": [{"role": "user", "content": "我要退货，屏幕一直闪 {{ 不是模板 }}"},
               {"role": "assistant", "content": "抱歉！请提供订单号。"},
               {"role": "user", "content": "订单号 A123，价格 ${PRICE}"},
               {"role": "assistant", "content": "已为您生成退货标签，退款 5 个工作日内到账。"}]},
    {"scenario": "Learn to make pasta", "expected_outcome": "The user can make fresh pasta",
     "turns": [{"role": "user", "content": "How do I make pasta by hand?"}]},
    {"scenario": "Book a table for two", "expected_outcome": "A table is booked", "user_description": "a busy parent"},
]


def test_goldens_with_turns_import_as_transcript_tests_that_validate(tmp_path):
    source = tmp_path / "goldens.json"
    source.write_text(json.dumps(GOLDENS, ensure_ascii=False), encoding="utf-8")
    code, out = invoke("import", "deepeval", str(source), "-o", str(tmp_path / "out"))
    assert code == 0, out
    suite = load_suite(tmp_path / "out" / "goldens.yaml")
    recorded, played, simulated = suite.tests
    assert recorded.recorded == "inline"
    assert [t.kind for t in recorded.conversation] == ["user", "assistant", "user", "assistant"]
    assert recorded.conversation[0].text.endswith("{{ 不是模板 }}{% endraw %}")  # imported text is text
    assert [a.type for a in recorded.asserts] == ["llm-rubric"] and "退货标签" in recorded.asserts[0].value
    assert played.recorded is None and [t.kind for t in played.conversation] == ["user"]
    assert simulated.simulate is not None and simulated.simulate.persona == "a busy parent"
    assert suite.judge is not None


def test_a_golden_that_checks_nothing_is_refused_and_nothing_is_written(tmp_path):
    source = tmp_path / "goldens.json"
    source.write_text(json.dumps([{"turns": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]}]), encoding="utf-8")
    code, out = invoke("import", "deepeval", str(source), "-o", str(tmp_path / "out"))
    assert code == 2
    assert "test 'golden-1-golden-1': checks nothing" in out and "nothing was written" in out
    assert not (tmp_path / "out").exists()
    code, out = invoke("import", "deepeval", str(source), "-o", str(tmp_path / "out"), "--allow-empty")
    assert code == 0 and (tmp_path / "out" / "goldens.yaml").exists()


def test_a_promptfoo_config_whose_checks_are_all_dropped_is_refused(tmp_path):
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: ['{{ q }}']\nproviders: [openai:gpt-4o-mini]\n"
                      "tests:\n  - vars: {q: hi}\n    assert: [{type: no-such-check}]\n", encoding="utf-8")
    code, out = invoke("import", "promptfoo", str(config), "-o", str(tmp_path / "out"))
    assert code == 2 and "checks nothing" in out
    assert not (tmp_path / "out").exists()
