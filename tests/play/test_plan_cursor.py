"""A Ray worker finds the conversations it is handed by their position in the plan with a `PlanCursor`:
one walk forward, a window of rendered instances, never the whole plan (docs/en/scale-and-ray.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalspec.config import load_suite
from evalspec.plan.build import Plan
from evalspec.play.cluster import PlanCursor

SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
options: {cache: false}
tests:
  - id: faq
    dataset: rows.jsonl
    conversation:
      - user: "{{ question }}"
"""

ROWS = 300


def cursor(root: Path, window: int = 8) -> PlanCursor:
    (root / "bot.py").write_text("def respond(messages, context):\n    return '收到'\n", encoding="utf-8")
    (root / "rows.jsonl").write_text("".join(json.dumps({"question": f"你好（{i}）"}, ensure_ascii=False) + "\n"
                                             for i in range(ROWS)), encoding="utf-8")
    (root / "s.yaml").write_text(SUITE, encoding="utf-8")
    plan = Plan([load_suite(root / "s.yaml")])
    found = PlanCursor(plan)
    found.WINDOW = window
    return found


def question(position: int) -> str:
    return f"你好（{position}）"


def test_every_other_position_in_rising_order_keeps_a_window_not_the_plan(tmp_path: Path) -> None:
    found = cursor(tmp_path)
    for position in range(1, ROWS, 2):  # the other worker of two plays the even ones
        assert found.at(position).turns[0].text == question(position)
        assert len(found.ready) <= found.WINDOW
    assert found.reached == ROWS - 1


def test_positions_out_of_order_within_the_window_are_found_without_a_new_walk(tmp_path: Path) -> None:
    found = cursor(tmp_path)
    assert found.at(10).turns[0].text == question(10)
    assert [found.at(p).turns[0].text for p in (7, 9, 12, 11)] == [question(p) for p in (7, 9, 12, 11)]
    assert found.reached == 12


def test_a_position_handed_again_after_the_walk_passed_it_is_found_by_a_walk_of_its_own(tmp_path: Path) -> None:
    found = cursor(tmp_path, window=4)
    assert found.at(200).turns[0].text == question(200)
    assert found.at(3).turns[0].text == question(3)  # far behind: its conversation's worker died
    assert found.at(201).turns[0].text == question(201) and found.reached == 201  # the walk goes on


def test_a_position_past_the_plan_is_an_index_error_and_the_plan_is_still_there(tmp_path: Path) -> None:
    found = cursor(tmp_path)
    with pytest.raises(IndexError, match=str(ROWS)):
        found.at(ROWS)
    assert found.at(5).turns[0].text == question(5)
