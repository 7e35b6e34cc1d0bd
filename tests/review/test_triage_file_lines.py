"""The lines of `.evalspec/triage.jsonl` a later run carries over: only those `evalspec triage` writes."""

from __future__ import annotations

import json
from pathlib import Path

from evalspec.review.triage import read_triage


def test_a_triage_line_without_a_known_class_time_or_status_is_not_carried_over(tmp_path: Path) -> None:
    path = tmp_path / "triage.jsonl"
    key = {"suite": "suites/售后.yaml", "test_id": "退款", "provider": "bot"}
    good = {**key, "as": "bot_defect", "note": "答非所问", "who": "张三", "at": "2025-05-01T10:00:00+00:00",
            "status": "failed", "run_id": "r1"}
    lines = [
        good,
        {**key, "test_id": "改签", "as": "nonsense", "at": "2025-05-01T10:00:00+00:00", "status": "failed"},
        {**key, "test_id": "发票", "as": "bot_defect", "status": "failed"},  # no `at`
        {**key, "test_id": "地址", "as": "bot_defect", "at": "2025-05-01T10:00:00+00:00"},  # no `status`
    ]
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")

    found = read_triage(path)

    assert list(found) == [("suites/售后.yaml", "退款", "bot")]
    assert found[("suites/售后.yaml", "退款", "bot")]["note"] == "答非所问"
