"""`evalspec import rasa` and `evalspec import botium` (SPEC §24 "Importers", §19): the YAML they write.

The fixtures under rasa_data/ and botium_data/ were written for these tests in each platform's format,
covering every form the public Rasa and Botium test files use. The round trips (an imported suite
validates, runs against a loopback Rasa server or bot) need the §24 state checks, `click:`, `include:`
and the `rasa:` provider (a tree without them skips them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import invoke
from tests.servers import LoopbackServer, Reply

HERE = Path(__file__).resolve().parent
RASA, BOTIUM = HERE / "rasa_data", HERE / "botium_data"


def _has_state_checks() -> bool:
    """The §24 forms the imported suites use: state checks, the rasa: provider kind, click: / include: turns."""
    from evalspec.extend.kinds import provider_kinds
    from evalspec.extend.registry import resolve_type
    from tests import ROOT

    schema = (ROOT / "schema" / "suite.schema.json").read_text(encoding="utf-8")
    return resolve_type("state") is not None and "rasa" in provider_kinds() \
        and '"click"' in schema and '"include"' in schema


needs_state = pytest.mark.skipif(not _has_state_checks(), reason="the §24 state checks, click:, include: and the "
                                 "rasa: provider are not all in this tree yet")


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _header(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")]


# --- Rasa ---------------------------------------------------------------------------------------------


def test_rasa_folder_keeps_sub_folders_and_refuses_stubbed_actions(tmp_path):
    code, out = invoke("import", "rasa", str(RASA), "-o", str(tmp_path))
    assert code == 0, out
    assert (tmp_path / "steps.yaml").is_file() and (tmp_path / "flows" / "assertions.yaml").is_file()
    assert not (tmp_path / "stubbed.yaml").exists()
    assert "refused stubbed.yml: stub_custom_actions (check_balance): the stubs live in the Rasa server" in out
    assert _load(tmp_path / "steps.yaml")["providers"] == [{"id": "rasa-bot", "rasa": {"url": "http://localhost:5005"}}]


def test_rasa_steps_become_turn_checks_with_fixtures_and_metadata(tmp_path):
    code, out = invoke("import", "rasa", str(RASA / "steps.yml"), "-o", str(tmp_path))
    assert code == 0, out
    test, = _load(tmp_path / "steps.yaml")["tests"]
    assert test["id"] == "预订行程-booking" and test["state"] == {"slots": {"membership_type": "premium", "city": "北京"}}
    first, second, third = test["conversation"]
    assert first == {"user": "你好！", "metadata": {"language": "zh", "location": "Beijing"},
                     "assert": [{"state": 'contains(utterances, `"utter_greet"`)'}]}
    # imported text stays text; the step's metadata wins over the test case's; a lone bot: is equals
    assert second["user"] == "{% raw %}我想订去里斯本的旅行 {{ not a template }} $${HOME}{% endraw %}"
    assert second["metadata"] == {"language": "en", "location": "Beijing", "os": "linux"}
    assert second["assert"] == [{"equals": "Where would you like to travel?"}]
    # two bot: steps answer one turn: each a whole line of the reply
    assert third["assert"] == [
        {"regex": r"(?m)^\s*Your trip to Lisbon has been booked\.\s*$"},
        {"regex": r"(?m)^\s*You saved 30% \(premium\)\.\s*$"},
        {"state": {"path": "slots_set.destination", "equals": "Lisbon"}},
        {"state": 'contains(keys(slots_set), `"trip_booked"`)'},
    ]


def test_rasa_assertions_become_state_regex_buttons_and_rubric_checks(tmp_path):
    code, out = invoke("import", "rasa", str(RASA / "flows" / "assertions.yml"), "-o", str(tmp_path))
    assert code == 0, out
    data = _load(tmp_path / "assertions.yaml")
    assert data["judge"] == "openai/gpt-4o-mini"
    transfer, cancel = data["tests"]
    one, two = transfer["conversation"]
    assert "metadata" not in one
    assert one["assert"] == [
        {"state": 'contains(flows_started, `"transfer_money"`)'},
        {"state": {"path": "slots_set.recipient", "equals": "Jill"}},
        {"state": 'contains(keys(slots_set), `"amount"`) && slots_set.amount == `null`'},
        {"state": 'contains(utterances, `"utter_ask_amount"`)'},
        {"buttons": ["50", "100"]},
    ]
    assert two["assert"] == [
        {"state": 'contains(actions, `"action_check_funds"`)'},
        {"not-state": 'contains(keys(slots_set), `"recipient"`)'},
        {"regex": "Transfer (of )?50.*complete"},
        {"not-state": 'contains(utterances, `"utter_insufficient_funds"`)'},
        {"state": 'contains(flows_completed, `"transfer_money"`)'},
    ]
    stop, hours = cancel["conversation"]
    assert stop["assert"] == [{"state": 'contains(flows_cancelled, `"transfer_money"`)'},
                              {"state": 'contains(flows_started, `"pattern_clarification"`)'}]
    relevant, grounded = hours["assert"]
    assert relevant["threshold"] == 0.8 and grounded["threshold"] == 0.5
    assert "We open 9 to 5." in grounded["llm-rubric"]
    header = "\n".join(_header(tmp_path / "assertions.yaml"))
    for note in ("metadata 'unknown_meta' is not defined", "their payloads are not checked", "flow_step_id not converted",
                 "the flows offered are not checked", "generative_response_is_grounded utter_source: not converted",
                 "test 'transfer-money': assertion_order_enabled", "turn 2: assertion_order_enabled"):
        assert note in header and note in out


def test_rasa_provider_option_replaces_the_default(tmp_path):
    code, out = invoke("import", "rasa", str(RASA / "steps.yml"), "-o", str(tmp_path),
                       "--provider", "{rasa: {url: 'http://10.0.0.5:5005', token: '$${RASA_TOKEN}'}}")
    assert code == 0, out
    assert _load(tmp_path / "steps.yaml")["providers"] == [
        {"id": "target", "rasa": {"url": "http://10.0.0.5:5005", "token": "$${RASA_TOKEN}"}}]


def test_rasa_only_stubbed_or_hollow_writes_nothing(tmp_path):
    code, out = invoke("import", "rasa", str(RASA / "stubbed.yml"), "-o", str(tmp_path / "a"))
    assert code == 2 and "no test could be imported" in out and not (tmp_path / "a").exists()
    source = tmp_path / "hollow.yml"
    source.write_text("test_cases:\n  - test_case: greet\n    steps:\n      - user: hi\n", encoding="utf-8")
    code, out = invoke("import", "rasa", str(source), "-o", str(tmp_path / "b"))
    assert code == 2 and "checks nothing" in out and not (tmp_path / "b").exists()
    code, out = invoke("import", "rasa", str(source), "-o", str(tmp_path / "b"), "--allow-empty")
    assert code == 0 and (tmp_path / "b" / "hollow.yaml").is_file()


# --- Botium -------------------------------------------------------------------------------------------


def test_botium_convo_partials_utterances_captures_and_asserters(tmp_path):
    code, out = invoke("import", "botium", str(BOTIUM / "shop"), "-o", str(tmp_path))
    assert code == 0, out
    data = _load(tmp_path / "order.yaml")
    assert data["providers"][0]["http"]["state"] == "@"
    test, = data["tests"]
    assert test["matrix"] == {"utt_greet": ["你好", "hello there"]}
    greet, order, click, when, include = test["conversation"]
    # consecutive #bots answer one turn; Botium's default match is a case-insensitive search, * any text
    assert greet == {"user": "{{ utt_greet }}", "assert": [{"regex": "(?is)欢迎.*光临"}, {"not-icontains": "error"}]}
    assert order["user"] == "我要买\n一台笔记本"
    assert order["assert"] == [{"regex": r"(?is)您的订单号是 \S+ ，请确认"}, {"buttons": ["确认", "取消"]},
                               {"state": {"path": "intent", "equals": "buy_laptop"}}]
    assert order["capture"] == {"order": {"regex": r"(?is)您的订单号是 (\S+) ，请确认"}}
    assert click == {"click": "确认 {{ order }}", "assert": [
        {"regex": "(?is)done|完成"}, {"state": 'contains(entities[].entity, `"product"`)'},
        {"state": 'contains(entities[].entity, `"product"`)'}, {"not-equals": "failed"}]}
    # a partial's leading #bot checks the including turn; a #bot after INCLUDE is a test-level check
    assert when == {"user": "订单 {{ order }} 什么时候到？", "assert": [{"icontains": "请输入密码"}]}
    assert include == {"include": "fragments/登录.yaml"}
    assert test["assert"] == [{"icontains": "明天", "scope": {"turns": [5]}}]
    assert _load(tmp_path / "fragments" / "登录.yaml") == {"conversation": [{"user": "123456"}]}
    header = "\n".join(_header(tmp_path / "order.yaml"))
    for note in ("order.convo.txt:3: #begin UPDATE_CUSTOM SET_HEADER|x-env|test: not converted",
                 "order.convo.txt:6: a #bot before the first #me (the bot's greeting) is not checked",
                 "order.convo.txt:30: MY_ASSERTER order | $order: not converted"):
        assert note in header and f"not converted (order.yaml): {note}" in out


def test_botium_button_on_a_first_turn_checking_nothing_is_refused(tmp_path):
    code, out = invoke("import", "botium", str(BOTIUM / "button_only.convo.txt"), "-o", str(tmp_path / "x"))
    assert code == 2 and "checks nothing" in out and not (tmp_path / "x").exists()
    code, out = invoke("import", "botium", str(BOTIUM / "button_only.convo.txt"), "-o", str(tmp_path / "x"),
                       "--allow-empty")
    assert code == 0
    assert _load(tmp_path / "x" / "button-only.yaml")["tests"][0]["conversation"] == [{"user": "Start"}]


def test_botium_include_cycle_is_refused(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "main.convo.txt").write_text("Main\n\n#me\nhi\nINCLUDE a\n", encoding="utf-8")
    (folder / "a.pconvo.txt").write_text("a\n\n#me\nx\nINCLUDE b\n", encoding="utf-8")
    (folder / "b.pconvo.txt").write_text("b\n\n#me\ny\nINCLUDE a\n", encoding="utf-8")
    code, out = invoke("import", "botium", str(folder), "-o", str(tmp_path / "out"))
    assert code == 2 and "refused main.convo.txt: INCLUDE cycle: Main -> a -> b -> a" in out


def test_botium_asserter_forms():
    from evalspec.authoring.importers.botium import _Converter

    conv = _Converter({}, {}, [])
    assert conv.asserter("TEXT_CONTAINS_ALL_IC", False, ["a", "b"], "w") == [{"icontains": "a"}, {"icontains": "b"}]
    assert conv.asserter("TEXT_CONTAINS_ALL", True, ["a", "b"], "w") == [{"not-regex": "(?s)^(?=.*a)(?=.*b)"}]
    assert conv.asserter("TEXT_REGEXP_ANY_IC", False, ["x+", "y"], "w") == [{"regex": "(?i)(?:x+)|(?:y)"}]
    assert conv.asserter("TEXT_WILDCARDEXACT_ANY", False, ["hi *"], "w") == [{"regex": r"(?s)(?:^\s*hi .*\s*$)"}]
    assert conv.asserter("TEXT_EQUALS_IC", False, ["OK"], "w") == [{"regex": r"(?i)^\s*OK\s*$"}]
    assert conv.asserter("JSON_PATH", False, ["$.session.user", "max"], "w") == [
        {"state": {"path": "session.user", "equals": "max"}}]
    assert conv.asserter("JSON_PATH", False, ["$.nlu"], "w") == [{"state": {"path": "nlu", "exists": True}}]
    assert conv.asserter("MEDIA", False, ["a.png"], "w") == [] and conv.notes == ["w: MEDIA a.png: not converted"]


def test_botium_real_samples_if_present(tmp_path):
    samples = Path("/work/shared/data/third-party/botium")
    if not samples.is_dir():
        pytest.skip("the botium samples are not on this machine")
    code, out = invoke("import", "botium", str(samples / "partial"), "-o", str(tmp_path))
    assert code == 0, out
    test, = _load(tmp_path / "main.yaml")["tests"]
    assert [e.get("include") for e in test["conversation"]] == [None, "fragments/login.yaml", None,
                                                                 "fragments/logout.yaml"]


# --- round trips (once the §24 state work is in) -------------------------------------------------------


@needs_state
def test_imported_suites_validate(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")  # the generative checks' judge: validate wants a key
    for kind, source in (("rasa", RASA), ("botium", BOTIUM / "shop")):
        code, out = invoke("import", kind, str(source), "-o", str(tmp_path / kind))
        assert code == 0, out
        for suite in sorted((tmp_path / kind).rglob("*.yaml")):
            if "fragments" not in suite.parts:
                code, out = invoke("validate", str(suite))
                assert code == 0, (suite, out)


class _Rasa:
    """A loopback Rasa: the REST channel and the tracker API, answering 'hi' with utter_greet."""

    def __init__(self) -> None:
        self.events: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        if path.startswith("/webhooks/rest/webhook"):
            events = self.events.setdefault(body["sender"], [])
            events += [{"event": "user", "text": body["message"], "parse_data": {"intent": {"name": "greet"}}},
                       {"event": "action", "name": "utter_greet"},
                       {"event": "bot", "text": "Hey! How are you?", "metadata": {"utter_action": "utter_greet"}},
                       {"event": "slot", "name": "greeted", "value": True},
                       {"event": "action", "name": "action_listen"}]
            return Reply(body=[{"recipient_id": body["sender"], "text": "Hey! How are you?"}])
        sender = path.split("/")[2]
        events = self.events.setdefault(sender, [])
        if path.split("?")[0].endswith("/tracker/events"):
            events += body if isinstance(body, list) else [body]
            return Reply(body={"ok": True})
        slots = {e["name"]: e["value"] for e in events if e.get("event") == "slot"}
        return Reply(body={"sender_id": sender, "slots": slots, "events": events,
                      "latest_message": {"intent": {"name": "greet"}, "entities": []}, "stack": []})


@needs_state
def test_imported_rasa_suite_runs_against_a_loopback_rasa(tmp_path):
    source = tmp_path / "e2e.yml"
    source.write_text(json.dumps({"fixtures": [{"known": [{"membership": "gold"}]}], "test_cases": [
        {"test_case": "greet", "fixtures": ["known"], "steps": [
            {"user": "hi", "assertions": [{"bot_uttered": {"utter_name": "utter_greet"}},
                                          {"slot_was_set": [{"name": "greeted", "value": True}]},
                                          {"action_executed": "utter_greet"}]},
            {"user": "hi again"}, {"bot": "Hey! How are you?"}]}]}), encoding="utf-8")
    rasa = _Rasa()
    with LoopbackServer(rasa) as server:
        code, out = invoke("import", "rasa", str(source), "-o", str(tmp_path / "out"),
                           "--provider", json.dumps({"rasa": {"url": server.url}}))
        assert code == 0, out
        code, out = invoke("run", str(tmp_path / "out" / "e2e.yaml"), "-o", str(tmp_path / "run.json"))
        assert code == 0, out
    record = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert "utter_greet" in json.dumps(record, ensure_ascii=False)  # the turn's state is on its assistant message
    seeded = [e for events in rasa.events.values() for e in events if e.get("name") == "membership"]
    assert seeded and seeded[0]["value"] == "gold"


def _has_turn_forms() -> bool:
    from tests import ROOT

    schema = (ROOT / "schema" / "suite.schema.json").read_text(encoding="utf-8")
    return '"click"' in schema and '"include"' in schema


@pytest.mark.skipif(not _has_turn_forms(), reason="the §24 click:, include: and capture mappings are not in this tree yet")
def test_imported_botium_convo_runs_against_a_loopback_bot(tmp_path):
    """A capture, a partial's leading #bot, a #bot after INCLUDE and a negation, played against an echo bot."""
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "code.convo.txt").write_text("code\n\n#me\nmy code is 42\n\n#bot\nMY CODE IS $code\n\n"
                                           "#me\ncode $code\nINCLUDE tail\n\n#bot\n!wrong\n", encoding="utf-8")
    (folder / "tail.pconvo.txt").write_text("tail\n\n#bot\ncode 42\n\n#me\nbye\n", encoding="utf-8")
    with LoopbackServer(lambda method, path, body, headers: Reply(body={"reply": body.get("message")})) as server:
        code, out = invoke("import", "botium", str(folder), "-o", str(tmp_path / "out"),
                           "--provider", f"http:{server.url}/chat")
        assert code == 0, out
        code, out = invoke("run", str(tmp_path / "out" / "code.yaml"), "-o", str(tmp_path / "run.json"))
        assert code == 0, out
        assert [r.get("message") for r in server.requests] == ["my code is 42", "code 42", "bye"]


@needs_state
def test_imported_rasa_booking_flow_passes_against_the_loopback_rasa_server(tmp_path):
    """Every converted assertion form (flows, slots, actions, utterances, buttons, text) graded on a real run."""
    from tests.servers import RasaServer

    with RasaServer() as server:
        code, out = invoke("import", "rasa", str(RASA / "flows" / "test_drive.yml"), "-o", str(tmp_path / "out"),
                           "--provider", json.dumps({"rasa": {"url": server.url}}))
        assert code == 0, out
        code, out = invoke("run", str(tmp_path / "out" / "test-drive.yaml"), "-o", str(tmp_path / "run.json"))
        assert code == 0, out
        tracker, = server.trackers.values()
    assert tracker["slots"]["city"] == "北京"  # the fixture, seeded before turn 1
    users = [e for e in tracker["events"] if e["event"] == "user"]
    assert [e["metadata"] for e in users] == [{"channel": "web"}] * 3


WRONG_SLOT = """\
test_cases:
  - test_case: books saturday
    steps:
      - user: 我想试驾瑶光
      - user: 周六
        assertions:
          - slot_was_set:
              - name: day
                value: 周六
  - test_case: expects sunday
    steps:
      - user: 我想试驾瑶光
      - user: 周六
        assertions:
          - slot_was_set:
              - name: day
                value: 周日
"""


@needs_state
def test_an_imported_rasa_test_that_expects_the_wrong_slot_fails_on_that_slot_and_the_right_one_passes(tmp_path):
    from tests.servers import RasaServer

    (tmp_path / "e2e.yml").write_text(WRONG_SLOT, encoding="utf-8")
    with RasaServer() as server:
        code, out = invoke("import", "rasa", str(tmp_path / "e2e.yml"), "-o", str(tmp_path / "out"),
                           "--provider", json.dumps({"rasa": {"url": server.url}}))
        assert code == 0, out
        code, out = invoke("run", str(tmp_path / "out" / "e2e.yaml"), "-o", str(tmp_path / "run.json"))
    assert code == 1, out  # the gate fails on the test whose author expected the wrong slot value
    records = {r["test_id"]: r for r in json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["results"]}
    assert len(records) == 2
    by_status = {r["status"]: r for r in records.values()}
    assert set(by_status) == {"passed", "failed"}
    failed = [a for a in by_status["failed"]["assertions"] if not a["pass"]]
    assert len(failed) == 1 and failed[0]["turn"] == 2 and "周日" in json.dumps(failed[0], ensure_ascii=False)


@needs_state
def test_an_imported_botium_convo_presses_a_rasa_button_and_passes(tmp_path):
    """A BotiumScript convo written against the loopback Rasa bot: its BUTTON becomes a click: that sends the
    button's payload, its #bot lines Botium's case-insensitive search — the verdict its author meant."""
    from tests.servers import RasaServer

    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "book.convo.txt").write_text("book\n\n#me\n我想试驾瑶光\n\n#bot\n哪天\n\n#me\nBUTTON 周六\n\n#bot\n预约号 B-*\n",
                                           encoding="utf-8")
    with RasaServer() as server:
        code, out = invoke("import", "botium", str(folder), "-o", str(tmp_path / "out"),
                           "--provider", json.dumps({"rasa": {"url": server.url}}))
        assert code == 0, out
        code, out = invoke("run", str(tmp_path / "out" / "book.yaml"), "-o", str(tmp_path / "run.json"))
        assert code == 0, out
    record, = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["results"]
    assert record["status"] == "passed"
    assert record["transcript"][2]["click"] == "周六" and record["transcript"][2]["content"].startswith("/choose_day")
