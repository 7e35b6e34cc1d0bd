"""`choose_lang` is the one language rule: a file's `lang:` line (`declared`) ranks as a suite's
`report.lang` (after `--lang`, before EVALSPEC_LANG and the user turns) (docs/en/reports-and-gate.md#language)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.reporters.catalogue import LANG_SAMPLE, choose_lang
from evalspec.results.journal import encode_line
from evalspec.results.stream import JournalRecords


def test_a_declared_lang_line_wins_over_the_environment_and_the_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALSPEC_LANG", "en")
    assert choose_lang(None, None, declared="zh", texts=["hello there"]) == "zh"
    assert choose_lang(None, "en", declared="zh", texts=["你好，我想买车"]) == "en"  # --lang decides first


def test_without_a_declared_line_the_environment_then_the_turns_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALSPEC_LANG", raising=False)
    assert choose_lang(None, None, declared=None, texts=["你好，我想买车"]) == "zh"
    monkeypatch.setenv("EVALSPEC_LANG", "en")
    assert choose_lang(None, None, declared=None, texts=["你好，我想买车"]) == "en"


def _journal(path: Path, turns: list[str]) -> JournalRecords:
    """A streamed run's records: one record per user turn, written as a journal is."""
    offsets = []
    with path.open("wb") as fh:
        for text in turns:
            offsets.append(fh.tell())
            fh.write(encode_line({"test_id": f"t{len(offsets)}", "transcript": [{"role": "user", "content": text},
                                                                                 {"role": "assistant", "content": "好的"}]}))
    return JournalRecords(path, offsets)


def test_a_large_run_is_judged_by_its_first_user_turns_and_the_rest_is_not_read(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("EVALSPEC_LANG", raising=False)
    records = _journal(tmp_path / "journal.jsonl", ["我想退货，订单号是多少？"] * LANG_SAMPLE + ["hello there"] * (LANG_SAMPLE + 1))
    with (tmp_path / "journal.jsonl").open("ab") as fh:  # a record past the sample that cannot be read
        records.offsets.append(fh.tell())
        fh.write(b"{not json\n")
    assert choose_lang({"results": records}) == "zh"  # the first 1,000 turns decide; the torn line is never read
    small = _journal(tmp_path / "small.jsonl", ["我想退货"] * 3 + ["hello there"] * 4)
    assert choose_lang({"results": small}) == "en"  # below the sample every turn counts, as before
