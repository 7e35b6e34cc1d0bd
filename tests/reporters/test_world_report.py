"""Reports show what a conversation changed in its world (docs/en/world.md): each changed path old → new,
and the elements a list gained or lost; nothing for a record without a world."""

from __future__ import annotations

from evalspec.reporters.catalogue import speaking
from evalspec.reporters.world import change_lines, failing_world_text, world_html

BEFORE = {"inventory": [{"model": "汉EV", "stock": 2}], "visits": [{"id": "v1"}], "note": "营业"}
AFTER = {"inventory": [{"model": "汉EV", "stock": 1}], "visits": [{"id": "v1"}, {"id": "v2", "user_id": "u4"}],
         "orders": [{"id": "o2"}], "note": "营业"}


def test_the_changes_are_listed_path_by_path() -> None:
    record = {"world_initial": BEFORE, "world": AFTER}
    assert change_lines(record) == ["inventory[0].stock: 2 → 1", 'visits + {"id": "v2", "user_id": "u4"}',
                                    'orders + [{"id": "o2"}]']
    assert change_lines({"transcript": []}) is None
    assert str(world_html({"transcript": []})) == ""


def test_html_and_failure_text_speak_the_report_language() -> None:
    record = {"world_initial": BEFORE, "world": AFTER}
    with speaking("zh"):
        html = str(world_html(record))
        assert "世界状态：机器人改了什么" in html and "<li>inventory[0].stock: 2 → 1</li>" in html
        assert failing_world_text({"world_initial": BEFORE, "world": BEFORE}) == ["世界状态：没有任何改变"]
    with speaking("en"):
        assert failing_world_text(record, limit=1) == ["world: inventory[0].stock: 2 → 1"]
        assert "the world is as it started" in str(world_html({"world_initial": BEFORE, "world": BEFORE}))
