"""A judge verdict a person marked, as the line `judge-eval` reads: the assertion as a suite writes it, the
transcript up to its turn, the label (the judge's answer, its opposite, or the level named as right)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def graded_record() -> dict[str, object]:
    levels = {"立即纠正": 1.0, "部分纠正": 0.4, "不纠正": 0.0}
    return {"transcript": [{"role": "user", "content": "我说错了，是周六", "turn": 1},
                           {"role": "assistant", "content": "好的，周六见", "turn": 1},
                           {"role": "user", "content": "几点？", "turn": 2},
                           {"role": "assistant", "content": "上午十点", "turn": 2}],
            "assertions": [{"type": "follows-correction", "pass": True, "error": None, "turn": 1, "threshold": 0.5,
                            "scope": "turn", "value": "改成周六",
                            "details": {"verdicts": [{"level": "立即纠正"}], "level": "立即纠正", "levels": levels}}]}


def test_a_graded_verdict_marked_wrong_names_the_right_level() -> None:
    from evalspec.app.view.actions import ActionError, label_line

    right = label_line(graded_record(), 0, True, None)
    assert right["label"] == "立即纠正" and right["assert"]["levels"]["部分纠正"] == 0.4
    assert "scope" not in right["assert"] and [m["content"] for m in right["transcript"]] == [
        "我说错了，是周六", "好的，周六见"]  # graded at turn 1: the transcript up to it
    assert label_line(graded_record(), 0, False, "部分纠正")["label"] == "部分纠正"
    with pytest.raises(ActionError, match="a wrong level needs `level`, the right one: 部分纠正, 不纠正"):
        label_line(graded_record(), 0, False, None)


def test_a_graded_label_line_is_read_by_judge_eval(tmp_path: Path) -> None:
    from evalspec.app.view.actions import label_line
    from evalspec.review.judge_eval import load_labels

    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(label_line(graded_record(), 0, False, "不纠正"), ensure_ascii=False) + "\n", encoding="utf-8")
    [item] = load_labels(path)
    assert (item.label, item.spec.type) == ("不纠正", "follows-correction")
