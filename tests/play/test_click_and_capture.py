"""`click: T` and the `capture:` mapping (SPEC §24): a user turn that presses a button of the previous
reply, and captures of a regex's group or of the turn's state, played against a plugin provider kind
that answers with state and parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import invoke

KIND = '''\
from evalspec import ProviderResponse, provider_kind


class ShopBot:
    """Offers two days as buttons when asked to book; echoes everything else."""

    def __init__(self, pid):
        self.id = pid

    def cache_identity(self):
        return {"shopbot": 1}

    async def respond(self, messages, context):
        last = messages[-1]["content"]
        if last.startswith("book"):
            return ProviderResponse("预约号 BK-42，选一天", state={"slots": {"booking_id": 42, "city": None}},
                                    parts=[{"text": "选一天", "buttons": [
                                        {"title": "周六", "payload": "/choose_day sat"},
                                        {"title": "周日", "payload": None},
                                        {"title": "改天", "payload": "/later"}]}])
        if last == "plain":
            return ProviderResponse("no buttons here", state={"slots": {}})
        if last == "stateless":
            return ProviderResponse("说了也没状态")
        return ProviderResponse("收到：" + last, state={"slots": {"day": last}})


@provider_kind("shopbot", schema=None)
def build(spec, suite):
    return ShopBot(spec.id)
'''




def suite(conversation: str, asserts: str = "") -> str:
    return ("plugins: [kind.py]\nproviders:\n  - id: shop\n    shopbot: {}\ntests:\n  - id: t\n    conversation:\n"
            + conversation + asserts)


def go(tmp_path: Path, text: str) -> dict[str, Any]:
    (tmp_path / "kind.py").write_text(KIND, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    record: dict[str, Any] = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data["results"][0]
    return record


def users(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in record["transcript"] if m["role"] == "user"]


def test_click_by_title_sends_the_payload_and_keeps_the_title(tmp_path: Path, clean_registries: None) -> None:
    record = go(tmp_path, suite("""\
      - user: book a drive
      - click: 周六
        label: picked
        assert:
          - contains: 'sat'
""", """\
    assert:
      - not-contains: 周日
        scope: {turns: [picked]}
"""))
    assert record["status"] == "passed", record
    clicked = users(record)[1]
    assert clicked["content"] == '/choose_day sat' and clicked["click"] == "周六"
    assert clicked["turn"] == 2 and clicked["label"] == "picked"
    assert record["transcript"][-1]["content"] == '收到：/choose_day sat'


def test_click_by_payload_and_a_button_without_payload_sends_its_title(tmp_path: Path, clean_registries: None) -> None:
    record = go(tmp_path, suite("""\
      - user: book a drive
      - click: /later
      - user: book again
      - click: 周日
"""))
    assert record["status"] == "passed", record
    sent = [(m["content"], m.get("click")) for m in users(record)]
    assert sent == [("book a drive", None), ("/later", "/later"), ("book again", None), ("周日", "周日")]


def test_a_click_with_no_such_button_is_an_error_naming_it_and_the_titles(tmp_path: Path, clean_registries: None) -> None:
    record = go(tmp_path, suite("""\
      - user: book a drive
      - click: 周一
      - user: never sent
"""))
    assert record["status"] == "error"
    assert record["error"] == ("turn 2: click '周一' found no button titled (or with payload) '周一' in the previous "
                               "reply: it offers '周六', '周日', '改天'")
    assert len(users(record)) == 1  # nothing was sent for the click, nor after it
    plain = go(tmp_path, suite("      - user: plain\n      - click: 周六\n"))
    assert plain["error"].endswith("it offers no buttons")


def test_captures_of_the_reply_a_regex_and_the_state(tmp_path: Path, clean_registries: None) -> None:
    record = go(tmp_path, suite("""\
      - user: book a drive
        capture: {whole: reply, code: {regex: "BK-(\\\\d+)"}, match: {regex: "预约号 \\\\S+"}, booking: {state: slots.booking_id}}
      - user: "{{ code }}|{{ booking }}|{{ match }}"
      - user: "{{ whole }}"
""", """\
    assert:
      - contains: "收到：42|42|预约号 BK-42，选一天"
        scope: {turns: [2]}
"""))
    assert record["status"] == "passed", record
    assert [m["content"] for m in users(record)][1:] == ["42|42|预约号 BK-42，选一天", "预约号 BK-42，选一天"]
    assert users(record)[0]["capture"] == "whole, code, match, booking"


@pytest.mark.parametrize(("capture", "why"), [
    ('{x: {regex: "ORD-(\\\\d+)"}}', "capture 'x' found nothing: the reply does not match 'ORD-(\\\\d+)'"),
    ("{x: {state: slots.city}}", "capture 'x' found nothing: the turn's state has nothing at 'slots.city'"),
])
def test_a_capture_that_finds_nothing_is_an_error_at_its_turn(tmp_path: Path, clean_registries: None,
                                                              capture: str, why: str) -> None:
    record = go(tmp_path, suite(f"""\
      - user: hello
      - user: book a drive
        capture: {capture}
      - user: "later {{{{ x }}}}"
"""))
    assert record["status"] == "error"
    assert record["error"].startswith(f"turn 2: {why}"), record["error"]
    assert len(users(record)) == 2


def test_a_state_capture_on_a_turn_without_state_is_an_error(tmp_path: Path, clean_registries: None) -> None:
    record = go(tmp_path, suite("      - user: stateless\n        capture: {x: {state: slots.x}}\n      - user: '{{ x }}'\n"))
    assert record["error"].startswith("turn 1: capture 'x' found nothing: the turn has no state")


def test_a_captured_var_names_the_button_of_a_later_click(tmp_path: Path, clean_registries: None) -> None:
    record = go(tmp_path, suite("""\
      - user: 周日
        capture: {day: {state: slots.day}}
      - user: book a drive
      - click: "{{ day }}"
"""))
    assert record["status"] == "passed", record
    assert users(record)[2]["content"] == "周日" and users(record)[2]["click"] == "周日"


def test_a_click_on_the_first_turn_and_a_bad_capture_are_validation_errors(tmp_path: Path,
                                                                           clean_registries: None) -> None:
    (tmp_path / "kind.py").write_text(KIND, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(suite("""\
      - click: 周六
      - user: hi
        capture: {x: {regex: "("}, y: {jmespath: a}}
"""), encoding="utf-8")
    code, out = invoke("validate", str(tmp_path / "s.yaml"))
    assert code == 2, out
    assert "s.yaml:8: tests[0].conversation[0].click: 'click:' presses a button of the previous reply: the first " \
           "turn has none before it; write '- user: ...'" in out
    assert "tests[0].conversation[1].capture.x.regex:" in out
    assert "capture 'y' takes 'reply', {regex: R} or {state: PATH}" in out
