"""Identity of recorded conversations (SPEC §26 "Identity and layout"): two conversations with one id
would merge into one verdict, so `validate` names both lines."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from evalspec.config.loader import load_suite
from evalspec.config.recorded import _first_repeat, conversations
from evalspec.config.repeats import Repeats
from tests.helpers import invoke


def _conversation(cid: str, text: str) -> str:
    return json.dumps({"id": cid, "messages": [{"role": "user", "content": text},
                                               {"role": "assistant", "content": "好的"}]}, ensure_ascii=False) + "\n"


SUITE = "transcripts: {path: 'logs/*.jsonl'}\ndefaults:\n  assert:\n    - not-contains: 手机号\n"


def test_two_conversations_with_one_id_are_a_validate_error_naming_both_lines(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_text(_conversation("c1", "你好") + _conversation("c2", "在吗")
                                               + _conversation("c1", "再见"), encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    code, output = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 2, output
    assert "a.jsonl:3:" in output and "'c1'" in output and "line 1" in output, output
    code, output = invoke("run", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "run.json"))
    assert code == 2 and "'c1'" in output, output


def test_one_id_in_two_files_names_the_other_file(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_text(_conversation("c1", "你好"), encoding="utf-8")
    (tmp_path / "logs" / "b.jsonl").write_text(_conversation("c2", "在吗") + _conversation("c1", "再见"),
                                               encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    code, output = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 2 and "b.jsonl:2:" in output and "a.jsonl line 1" in output, output


def test_distinct_ids_validate(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_text(_conversation("c1", "你好") + _conversation("c2", "你好"),
                                               encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    code, output = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 0, output


def _repeats_peak(n: int) -> int:
    """The peak memory (tracemalloc) of both passes of `Repeats` over `n` distinct ids (no suspect is one)."""
    ids = (f"会话-{i}" for i in range(n))
    tracemalloc.start()
    try:
        repeats: Repeats[int] = Repeats(n)
        for cid in ids:
            repeats.add(cid)
        assert not list(repeats.found((f"会话-{i}", i) for i in range(n)))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_id_check_keeps_a_bit_table_of_a_few_bits_an_id_not_an_entry() -> None:
    small, large = _repeats_peak(10_000), _repeats_peak(100_000)
    # 32 to 64 bits an id (at most 16 MiB whatever the count) and the suspects, hashes that met a set bit
    assert large < 1_000_000 and large - small < 800_000, (small, large)  # a table of hashes: 3 MB


def test_an_id_met_again_among_many_is_found_with_the_line_of_the_first(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    with (tmp_path / "logs" / "a.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(_conversation(f"会话-{i}", "你好") for i in range(50_000))
        fh.write(_conversation("会话-31337", "再见"))
    assert _first_repeat([tmp_path / "logs" / "a.jsonl"]) == ("会话-31337", (0, 31_338), (0, 50_001))


def test_walking_many_recorded_conversations_keeps_no_id_per_conversation(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    with (tmp_path / "logs" / "a.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"id": f"conversation-with-a-longish-id-{i}", "messages": []}) + "\n"
                      for i in range(40_000))
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    suite = load_suite(tmp_path / "s.yaml")
    tracemalloc.start()
    try:
        walked = sum(1 for _ in conversations(suite))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # a dict of each id and its place took ~7 MB here, a table of their 8-byte hashes 1.5 MB; the id
    # check's bit table is 256 KB
    assert walked == 40_000 and peak < 800_000, peak


def test_the_walk_names_whichever_comes_first_a_repeated_id_or_a_line_that_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    log = tmp_path / "logs" / "a.jsonl"
    log.write_text(_conversation("c1", "你好") + _conversation("c1", "再见") + "{坏\n", encoding="utf-8")
    code, output = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 2 and "a.jsonl:2:" in output and "'c1'" in output and "a.jsonl:3" not in output, output
    log.write_text(_conversation("c1", "你好") + "{坏\n" + _conversation("c1", "再见"), encoding="utf-8")
    code, output = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 2 and "a.jsonl:2:" in output and "not a JSON line" in output and "'c1'" not in output, output
