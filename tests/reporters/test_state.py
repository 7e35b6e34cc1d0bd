"""The bot's own state in reports (SPEC §24): changed slots, notable keys, buttons, clicks.

The fixed run with state added to two conversations renders to golden files; the fixed run without
state keeps its own golden files byte for byte (tests/reporters/test_golden.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from evalspec.reporters import state
from evalspec.reporters.html import render_html
from evalspec.reporters.junit import transcript_text
from evalspec.reporters.markdown import render_markdown
from tests.reporters.golden import check_golden, console_text, fixed, junit_text

ASK = {"slots": {"city": "北京", "car_model": "瑶光", "date": None, "booking_id": None}, "intent": "request_test_drive",
       "active_flow": "book_test_drive", "actions": ["action_check_stock", "utter_ask_date"], "handoff": False}
BOOKED = {"slots": {"city": "北京", "car_model": "瑶光", "date": "周六", "booking_id": "TD-3296"},
          "intent": "choose_date", "active_flow": None, "actions": ["action_book_test_drive"], "handoff": False}
DAYS = [{"text": "您想哪天来试驾？", "image": None, "custom": None,
         "buttons": [{"title": "周六", "payload": "/choose_date{\"date\": \"周六\"}"},
                     {"title": "周日 <b>", "payload": "/choose_date{\"date\": \"周日\"}"}]}]


def with_state() -> dict[str, Any]:
    """The fixed run; `pronoun` (failed at turn 2) has slot state, a click turn and buttons;
    `no-early-offer` (failed at turn 1) has a flat state (no `slots`)."""
    run = fixed()
    by_id = {r["test_id"]: r for r in run["results"]}
    t = by_id["pronoun"]["transcript"]
    t[1].update(state=copy.deepcopy(ASK), parts=copy.deepcopy(DAYS))
    t[2].update(click="周六", content="/choose_date{\"date\": \"周六\"}")
    t[3].update(state=copy.deepcopy(BOOKED))
    by_id["no-early-offer"]["transcript"][1]["state"] = {"step": "price", "intent": "ask_price", "score": 0.9}
    return run


def test_slots_changed_since_the_previous_state_old_to_new() -> None:
    first = state.changes(None, ASK)
    assert [(c.key, c.old, c.new, c.had) for c in first] == [("city", None, "北京", False), ("car_model", None, "瑶光", False)]
    second = state.changes(ASK, BOOKED)
    assert [state.change_text(c) for c in second] == ["date: null → 周六", "booking_id: null → TD-3296"]


def test_a_state_without_slots_compares_its_top_level_keys_the_notable_ones_apart() -> None:
    before = {"step": "a", "intent": "x", "gone": 1}
    after = {"step": "b", "intent": "y"}
    assert [state.change_text(c) for c in state.changes(before, after)] == ["step: a → b", "gone: 1 → null"]
    assert state.notable(after) == [("intent", "y")]
    assert state.notable({"intent": None, "active_flow": "f", "actions": []}) == [("active_flow", "f")]


def test_buttons_of_every_part_in_order_and_a_payload_stands_in_for_a_title() -> None:
    message = {"role": "assistant", "parts": [{"buttons": [{"title": "A"}, {"payload": "/b"}]}, {"text": "x"},
                                               {"buttons": [{"title": "C", "payload": "/c"}]}]}
    assert state.buttons(message) == ["A", "/b", "C"]
    assert state.buttons({"role": "assistant"}) == []


def test_only_turns_with_state_or_buttons_are_shown() -> None:
    run = with_state()
    pronoun = next(r for r in run["results"] if r["test_id"] == "pronoun")
    shown = state.turn_states(pronoun["transcript"])
    assert sorted(shown) == [1, 3]
    assert state.turn_text(shown[1]) == ("state: city: — → 北京, car_model: — → 瑶光 · intent: request_test_drive · "
                                         "active_flow: book_test_drive · actions: action_check_stock, utter_ask_date"
                                         " · buttons: [周六] [周日 <b>]")
    assert state.turn_states(fixed()["results"][1]["transcript"]) == {}
    assert not state.has_state(fixed()) and state.has_state(run)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_markdown_junit_and_console_of_a_run_with_state_match_their_golden_files(lang: str) -> None:
    run = with_state()
    check_golden(f"state.{lang}.md", render_markdown(run, env={}, lang=lang))
    check_golden(f"state.{lang}.junit.xml", junit_text_in(run, lang))
    if lang == "en":  # the console speaks the run's own language
        check_golden("state.console.txt", console_text(run))


def junit_text_in(run: dict[str, Any], lang: str) -> str:
    import xml.etree.ElementTree as ET

    from evalspec.reporters.junit import build_junit

    root = build_junit(run, lang=lang)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def test_junit_transcript_shows_the_click_and_the_state_under_the_turn() -> None:
    run = with_state()
    pronoun = next(r for r in run["results"] if r["test_id"] == "pronoun")
    text = transcript_text(pronoun)
    assert '[user 2] /choose_date{"date": "周六"} (clicked 周六)' in text
    assert "    state: date: null → 周六, booking_id: null → TD-3296 · intent: choose_date · actions: action_book_test_drive" in text
    plain = next(r for r in fixed()["results"] if r["test_id"] == "pronoun")
    assert transcript_text(plain) == "\n".join(f"[{m['role']} {m.get('turn')}] {m['content']}" for m in plain["transcript"])


def test_html_shows_changed_slots_buttons_as_chips_and_the_click_escaped() -> None:
    html = render_html(with_state(), lang="en")
    assert '<span class="chg"><span class="key">car_model</span> — → 瑶光</span>' in html
    assert '<span class="chg"><span class="key">date</span> <s>null</s> → 周六</span>' in html
    assert '<span class="chip">周日 &lt;b&gt;</span>' in html and "周日 <b>" not in html
    assert '<span class="clicked">clicked 周六</span>' in html
    assert '<span class="note">active_flow: book_test_drive</span>' in html
    zh = render_html(with_state(), lang="zh")
    assert "点击了「周六」" in zh and ">状态 <" in zh


def test_html_of_a_run_without_state_has_no_state_markup_nor_css() -> None:
    html = render_html(fixed())
    assert ".chip{" not in html and 'class="state"' not in html and 'class="clicked"' not in html


def test_the_golden_run_without_state_is_unchanged() -> None:
    run = fixed()
    check_golden("console.txt", console_text(run))
    check_golden("summary.md", render_markdown(run, env={}))
    check_golden("junit.xml", junit_text(run))
