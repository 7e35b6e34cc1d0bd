"""The journal's codec and its burst flushing: what a crash or Ctrl-C can cost."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

from evalspec.results import journal
from evalspec.results.journal import Journal, decode, encode, read_journal


def record(key: str, **extra: object) -> dict[str, object]:
    return {"key": key, "test_id": key, "base_id": key, "name": key, "suite": "s.yaml", "provider": "bot",
            "status": "passed", **extra}


def test_encode_writes_compact_utf8_that_the_standard_decoder_reads_back() -> None:
    data = record("问候#1", reply="收到：你好", score=0.5, tags=["中文"], nested={"1": [True, None]})
    line = encode(data)
    assert "收到：你好".encode() in line  # UTF-8, not \u escapes
    assert json.loads(line) == data


def test_nan_becomes_null_and_a_huge_int_falls_back_to_the_standard_encoder() -> None:
    assert json.loads(encode({"score": math.nan, "inf": math.inf})) == {"score": None, "inf": None}
    assert json.loads(encode({"n": 2 ** 70})) == {"n": 2 ** 70}


def test_decode_reads_what_an_older_journal_wrote_with_nan() -> None:
    value = decode(b'{"score": NaN}')
    assert math.isnan(value["score"])


def test_non_string_keys_are_written_as_the_standard_encoder_writes_them() -> None:
    assert json.loads(encode({1: "a", None: "b"})) == json.loads(json.dumps({1: "a", None: "b"}))


def test_outside_an_event_loop_every_record_reaches_the_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    j.write(record("a"))
    assert [r["key"] for r in read_journal(path)] == ["a"]
    j.close()


def test_on_a_loop_records_reach_the_file_within_the_flush_interval(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"

    async def scenario() -> tuple[list[str], list[str]]:
        j = Journal(path)
        for key in ("a", "b", "c"):
            j.write(record(key))
        right_after = [r["key"] for r in read_journal(path)]
        await asyncio.sleep(journal.FLUSH_EVERY * 4)
        later = [r["key"] for r in read_journal(path)]
        j.close()
        return right_after, later

    right_after, later = asyncio.run(scenario())
    assert right_after == []  # one burst, not a write per record
    assert later == ["a", "b", "c"]


def test_close_writes_what_is_still_buffered(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"

    async def scenario() -> None:
        j = Journal(path)
        j.write(record("a"))
        j.close()  # Ctrl-C: the run's finally closes the journal before the timer fires

    asyncio.run(scenario())
    assert [r["key"] for r in read_journal(path)] == ["a"]


def test_offsets_point_at_each_record_across_bursts(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"torn')  # a crash cut the last line

    async def scenario() -> list[int]:
        j = Journal(path)
        offsets = [j.write(record(k)) for k in ("a", "b")]
        j.close()
        return offsets

    offsets = asyncio.run(scenario())
    with path.open("rb") as fh:
        keys = []
        for offset in offsets:
            fh.seek(offset)
            keys.append(decode(fh.readline())["key"])
    assert keys == ["a", "b"]
