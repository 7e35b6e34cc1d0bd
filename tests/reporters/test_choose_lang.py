"""`choose_lang` is the one language rule: a file's `lang:` line (`declared`) ranks as a suite's
`report.lang` (after `--lang`, before EVALSPEC_LANG and the user turns) (docs/en/reports-and-gate.md#language)."""

from __future__ import annotations

import pytest

from evalspec.reporters.catalogue import choose_lang


def test_a_declared_lang_line_wins_over_the_environment_and_the_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALSPEC_LANG", "en")
    assert choose_lang(None, None, declared="zh", texts=["hello there"]) == "zh"
    assert choose_lang(None, "en", declared="zh", texts=["你好，我想买车"]) == "en"  # --lang decides first


def test_without_a_declared_line_the_environment_then_the_turns_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSPEC_LANG", raising=False)
    assert choose_lang(None, None, declared=None, texts=["你好，我想买车"]) == "zh"
    monkeypatch.setenv("EVALSPEC_LANG", "en")
    assert choose_lang(None, None, declared=None, texts=["你好，我想买车"]) == "en"
