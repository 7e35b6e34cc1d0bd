"""Fillers follow the conversation's language unless a pool is given (SPEC §9)."""

from __future__ import annotations

from pathlib import Path

from evalspec.config import load_suite
from evalspec.plan.build import build_plan
from evalspec.plan.fillers import CHINESE_POOL, ENGLISH_POOL
from tests import ROOT

BOT = ROOT / "providers" / "demo_bot.py"


def fillers_of(tmp_path: Path, conversation: str) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(f"providers: [{{id: bot, python: '{BOT}:respond'}}]\n"
                    f"vars: {{model: 瑶光}}\ntests:\n  - id: t\n    conversation:\n{conversation}", encoding="utf-8")
    [inst] = build_plan([load_suite(path)])
    return [t.text for t in inst.turns if t.filler]


def test_a_chinese_conversation_gets_only_chinese_fillers(tmp_path: Path) -> None:
    found = fillers_of(tmp_path, "      - user: 我叫张三，在北京做测试工程师。\n      - filler: 12\n"
                                 "      - user: 这台{{ model }}是哪年的车？\n")
    assert len(found) == 12 and all(f in CHINESE_POOL for f in found), found
    assert "What is Python?" not in found


def test_an_english_conversation_gets_only_english_fillers(tmp_path: Path) -> None:
    found = fillers_of(tmp_path, "      - user: My name is Tom, I test software in Beijing.\n      - filler: 12\n"
                                 "      - user: Do you remember my name?\n")
    assert len(found) == 12 and all(f in ENGLISH_POOL for f in found), found


def test_mostly_english_with_a_few_chinese_words_is_english(tmp_path: Path) -> None:
    found = fillers_of(tmp_path, "      - user: I live in 北京 and work as a tester.\n      - filler: 3\n")
    assert all(f in ENGLISH_POOL for f in found), found


def test_a_given_pool_is_used_whatever_the_language(tmp_path: Path) -> None:
    found = fillers_of(tmp_path, "      - user: 我叫张三。\n      - filler: {count: 4, pool: [Hello there]}\n")
    assert found == ["Hello there"] * 4
