"""Records read back from the journal (a large run): a change made after the run shows on every read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalspec.results.journal import Journal
from evalspec.results.stream import DiskRows, JournalRecords, light, records_where, update_record


def journal_records(tmp_path: Path, n: int) -> JournalRecords:
    journal = Journal(tmp_path / "journal.jsonl")
    records: list[dict[str, Any]] = [{"key": f"k{i}", "suite": "s.yaml", "test_id": f"t{i}", "base_id": f"t{i}",
                                      "provider": "bot", "status": "failed" if i == 2 else "passed",
                                      "transcript": [{"role": "user", "content": "你好"}]} for i in range(n)]
    offsets = [journal.write(r) for r in records]
    journal.close()
    return JournalRecords(journal.path, offsets, [light(r) for r in records])


def test_a_field_set_on_a_record_read_back_from_the_journal_shows_in_every_way_of_reading_it(tmp_path: Path) -> None:
    records = journal_records(tmp_path, 4)
    records[2]["attribution"] = "lost"  # a read gives a new dict: changing it changes nothing
    update_record(records, 2, {"attribution": "bot_defect", "attribution_by": "triage"})
    update_record(records, -1, {"attribution_suggested": "rule_misjudgment"})
    assert records[2]["attribution"] == "bot_defect" and records[2]["transcript"][0]["content"] == "你好"
    assert [r.get("attribution") for r in records] == [None, None, "bot_defect", None]
    assert [json.loads(line).get("attribution_suggested") for line in records.lines()] == \
        [None, None, None, "rule_misjudgment"]
    chosen = records_where(records, lambda r: r.get("attribution"))
    assert [r["key"] for r in chosen] == ["k2"] and chosen[0]["attribution_by"] == "triage"
    assert records[1] == json.loads(list(records.lines())[1])  # untouched records are copied as journaled


def test_a_field_set_on_records_in_memory_changes_the_record_itself() -> None:
    records = [{"key": "k0", "status": "failed"}]
    update_record(records, 0, {"attribution": "pending_fact"})
    assert records == [{"key": "k0", "status": "failed", "attribution": "pending_fact"}]


def test_rows_on_disk_read_at_any_place_keep_a_mark_per_stride_not_an_offset_per_row() -> None:
    rows = [{"i": i, "text": "你好" * (i % 7), "nested": {"k": [i] * (i % 3)}} for i in range(200)]
    disk = DiskRows()
    for i, row in enumerate(rows):
        disk.append(row)
        if i % 37 == 0:  # reading between appends leaves the file where the next row goes
            assert disk[i // 2] == rows[i // 2]
    disk.update(33, {"i": -1})
    expected = [dict(r) for r in rows]
    expected[33]["i"] = -1
    assert [disk[i] for i in range(len(rows))] == expected  # every place: each side of a stride's mark
    assert [disk[i] for i in reversed(range(len(rows)))] == expected[::-1]
    assert list(disk) == expected and disk[-1] == expected[-1] and disk[30:34] == expected[30:34]
    assert len(disk) == 200 and len(disk._marks) == -(-200 // DiskRows.STRIDE)


class _Undecoded(DiskRows):
    """Light records that must be picked from their text: iterating (decoding every row) fails the test."""

    def __iter__(self) -> Any:
        raise AssertionError("every light record was decoded")


def test_records_named_by_a_key_are_picked_from_the_light_records_text_changes_included(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    records: list[dict[str, Any]] = [{"key": f"k{i}", "suite": "s.yaml", "test_id": f"t{i}", "base_id": f"t{i}",
                                      "name": "teardown" if i == 5 else f"第{i}个", "provider": "bot",
                                      "status": "failed" if i % 3 == 0 else "passed",
                                      **({"teardown": {"ok": False, "error": "清理失败"}} if i in (3, 7) else {})}
                                     for i in range(10)]
    offsets = [journal.write(r) for r in records]
    journal.close()
    lights = _Undecoded([light(r) for r in records])
    streamed = JournalRecords(journal.path, offsets, lights)
    update_record(streamed, 4, {"attribution_suggested": "rule_misjudgment"})  # a change, not in the file's text

    def failed_teardown(r: Any) -> bool:
        return bool((r.get("teardown") or {}).get("ok") is False)

    assert [r["key"] for r in records_where(streamed, failed_teardown, (b'"teardown"',))] == ["k3", "k7"]
    assert [r["key"] for r in records_where(streamed, lambda r: r.get("attribution_suggested"),
                                            (b'"attribution',))] == ["k4"]
    assert records_where(streamed, lambda r: r.get("attribution"), (b'"attribution"',)) == []


def test_a_record_with_an_integer_beyond_64_bits_reads_back_exactly(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    record = {"key": "k", "state": {"订单": 18446744073709551617, "small": -9223372036854775809}, "score": 0.5}
    offset = journal.write(record)
    journal.close()
    assert JournalRecords(journal.path, [offset])[0] == record
