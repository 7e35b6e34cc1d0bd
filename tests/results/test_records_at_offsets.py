"""Records read back at their byte offsets (results/stream.py `JournalRecords`): in plan order, which jumps
back and forth in a journal written in finish order, whatever a record's length (a long transcript is
many times the bytes read at once), from a journal line or a run.json results line (its comma dropped)."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

from evalspec.results.journal import encode
from evalspec.results.stream import LINE_GUESS, JournalRecords


def test_records_of_any_length_are_read_back_in_plan_order(tmp_path: Path) -> None:
    records = [{"test_id": f"t{i}", "reply": "好" * size} for i, size in
               enumerate([10, LINE_GUESS * 3, LINE_GUESS - 20, LINE_GUESS // 3 - 20, 0, LINE_GUESS * 5 + 7])]
    ends = [b"\n", b",\n", b"\r\n", b"\n", b",\r\n", b""]  # journal lines, run.json lines; the last cut off
    journal, offsets, at = tmp_path / "journal.jsonl", [], 0
    with journal.open("wb") as fh:
        for record, end in zip(records, ends, strict=True):
            offsets.append(at)
            at += fh.write(encode(record) + end)
    order = [5, 1, 3, 0, 2, 4]  # plan order is not finish order
    read = JournalRecords(journal, array("q", [offsets[i] for i in order]))
    expected = [records[i] for i in order]
    assert list(read) == expected
    assert [read[k] for k in range(len(order))] == expected
    assert [json.loads(line) for line in read.lines()] == expected
    read.update(2, {"note": "改过"})  # a changed record is written as it reads now
    assert json.loads(list(read.lines())[2]) == {**expected[2], "note": "改过"}
