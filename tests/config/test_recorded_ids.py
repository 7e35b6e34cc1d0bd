"""Identity of recorded conversations (SPEC §26 "Identity and layout"): two conversations with one id
would merge into one verdict, so `validate` names both lines."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from evalspec.config.loader import load_suite
from evalspec.config.recorded import SeenIds, conversations
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


def test_ids_are_remembered_as_hashes_in_a_table_that_stays_small() -> None:
    seen = SeenIds()
    ids = [f"会话-{i}" for i in range(20_000)]
    assert not any(seen.add(cid) for cid in ids)  # every distinct id is new, across the table's growths
    assert all(seen.add(cid) for cid in ids[::997])  # and every one is met again
    assert seen.count == 20_000 and len(seen.slots) * 8 <= 20_000 * 32  # ≤ 32 bytes an id, not a dict entry


def test_walking_many_recorded_conversations_keeps_no_id_per_conversation(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    with (tmp_path / "logs" / "a.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(30_000):
            fh.write(_conversation(f"conversation-with-a-longish-id-{i}", "你好"))
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    suite = load_suite(tmp_path / "s.yaml")
    tracemalloc.start()
    try:
        walked = sum(1 for _ in conversations(suite))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # a dict of each id and its place took ~5 MB here; the hashes' table is 512 KB
    assert walked == 30_000 and peak < 2_000_000, peak
