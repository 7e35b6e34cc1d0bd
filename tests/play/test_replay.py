"""`evalspec grade`, `evalspec rerun --failed` and `evalspec init`."""

from __future__ import annotations

import json
from pathlib import Path

from tests import ROOT
from tests.helpers import invoke

BOT = '''
import os, threading
lock = threading.Lock()
flaky_calls = [0]

def respond(messages, context):
    with open("calls.log", "a") as f:
        f.write(context["test_id"] + "\\n")
    if context["test_id"] == "flaky":
        with lock:
            flaky_calls[0] += 1
            return "yes" if flaky_calls[0] % 2 == 0 else "no"   # fails, passes, fails, ...
    if context["test_id"] == "broken" and os.path.exists("break"):
        raise RuntimeError("down")
    return "no"
'''
SUITE = """\
options: {cache: false}
providers:
  - id: b
    python: bot.py:respond
tests:
  - id: steady
    conversation: [{user: hi, assert: [{equals: "yes"}]}]
  - id: flaky
    conversation: [{user: hi, assert: [{equals: "yes"}]}]
  - id: broken
    conversation: [{user: hi, assert: [{equals: "yes"}]}]
"""


def setup(tmp: Path) -> Path:
    (tmp / "bot.py").write_text(BOT)
    (tmp / "s.yaml").write_text(SUITE)
    code, out = invoke("run", "s.yaml", "-o", "run.json")
    assert code == 1, out
    return tmp / "run.json"


def test_grade_reruns_assertions_without_calling_the_system(in_tmp: Path) -> None:
    run_json = setup(in_tmp)
    calls = (in_tmp / "calls.log").read_text()
    (in_tmp / "s.yaml").write_text(SUITE.replace('equals: "yes"', 'equals: "no"'))
    code, out = invoke("grade", str(run_json), "-o", "regraded.json")
    assert (in_tmp / "calls.log").read_text() == calls
    regraded = json.loads((in_tmp / "regraded.json").read_text())
    original = json.loads(run_json.read_text())
    assert [r["status"] for r in original["results"]] == ["failed", "failed", "failed"]
    assert regraded["results"][0]["status"] == "passed"
    assert regraded["results"][0]["transcript"] == original["results"][0]["transcript"]
    assert "changed since the run" in out


def test_rerun_failed_labels_reproduced_flaky_and_error(in_tmp: Path) -> None:
    run_json = setup(in_tmp)
    (in_tmp / "break").write_text("")
    code, out = invoke("rerun", str(run_json), "--failed", "--times", "2")
    assert code == 1, out
    rows = {r["test_id"]: r for r in json.loads((in_tmp / "rerun.json").read_text())["results"]}
    assert rows["steady"]["label"] == "reproduced" and rows["steady"]["statuses"] == ["failed", "failed"]
    assert rows["flaky"]["label"] == "flaky"
    assert rows["broken"]["label"] == "error" and "down" in rows["broken"]["errors"][0]


def test_init_scaffolds_a_runnable_project(in_tmp: Path) -> None:
    code, out = invoke("init", "proj")
    assert code == 0 and "created" in out
    assert (in_tmp / "proj" / ".github" / "workflows" / "evalspec.yml").exists()
    code, out = invoke("validate", str(in_tmp / "proj" / "suites" / "example.yaml"))
    assert code == 0, out
    assert invoke("init", "proj")[0] == 2  # never overwrites


OUTAGE = '''
import os

def respond(messages, context):
    if os.path.exists(context["test_id"] + ".down"):
        raise RuntimeError("down")
    return "yes"
'''


def test_rerun_failed_replays_errored_records_too(in_tmp: Path) -> None:
    (in_tmp / "bot.py").write_text(OUTAGE)
    (in_tmp / "s.yaml").write_text(SUITE.replace("steady", "back").replace("flaky", "still-down")
                                   .replace("broken", "fine"))
    for test in ("back", "still-down"):
        (in_tmp / f"{test}.down").write_text("")
    code, out = invoke("run", "s.yaml", "-o", "run.json")
    assert code == 3, out
    (in_tmp / "back.down").unlink()
    code, out = invoke("rerun", "run.json", "--failed", "--times", "2")
    rows = {r["test_id"]: r for r in json.loads((in_tmp / "rerun.json").read_text())["results"]}
    assert set(rows) == {"back", "still-down"}
    assert rows["back"]["label"] == "flaky" and rows["still-down"]["label"] == "error"
    attributed = {r["test_id"]: r.get("attribution") for r in json.loads((in_tmp / "run.json").read_text())["results"]}
    assert attributed == {"back": "model_fluctuation", "still-down": "infrastructure", "fine": None}


LONG_BOT = '''
def respond(messages, context):
    if messages[-1]["content"] == "short":
        return "fine, nothing to see"
    return "好" * 150 + " call me on 13812345678"   # the number lies after the first 100 characters
'''
LONG_SUITE = """\
options: {cache: false, max_reply_chars: 100}
providers: [{id: b, python: bot.py:respond}]
tests:
  - id: long
    conversation:
      - user: short
      - user: long
        assert: [{not-regex: "1[3-9]\\\\d{9}", severity: critical}, {contains: "好"}]
"""


def test_grade_keeps_run_s_verdicts_on_a_cut_reply_and_errs_on_new_rules(in_tmp: Path) -> None:
    (in_tmp / "bot.py").write_text(LONG_BOT, encoding="utf-8")
    (in_tmp / "s.yaml").write_text(LONG_SUITE, encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-o", "run.json")
    assert code == 1, out
    record = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))["results"][0]
    reply = record["transcript"][-1]
    assert reply["original_chars"] == 173 and reply["cut_at"] == 100 and "13812345678" not in reply["content"]
    assert record["status"] == "failed" and record["critical_failed"]

    code, out = invoke("grade", "run.json", "-o", "graded.json")  # the same suite: run's verdicts stand
    assert code == 1, out
    graded = json.loads((in_tmp / "graded.json").read_text(encoding="utf-8"))
    assert [a["pass"] for a in graded["results"][0]["assertions"]] == [False, True]
    assert graded["results"][0]["status"] == "failed" and graded["gate"]["passed"] is False

    # a changed rule on the cut reply cannot be graded on what was stored; an unchanged one keeps run's verdict
    (in_tmp / "s.yaml").write_text(LONG_SUITE.replace('{contains: "好"}', '{contains: "call me"}'), encoding="utf-8")
    code, out = invoke("grade", "run.json", "-o", "graded.json")
    assert code != 0, out  # never a pass (1 or 3: how an error beside a failure gates is another rule's)
    first, second = json.loads((in_tmp / "graded.json").read_text(encoding="utf-8"))["results"][0]["assertions"]
    assert first["pass"] is False and second["pass"] is None
    assert "the stored reply was cut at 100 characters" in second["error"]
    # a rule on a reply that was not cut is graded again as usual
    (in_tmp / "s.yaml").write_text(LONG_SUITE.replace("      - user: short\n",
                                                      "      - user: short\n        assert: [{contains: fine}]\n"),
                                   encoding="utf-8")
    code, out = invoke("grade", "run.json", "-o", "graded.json")
    checks = json.loads((in_tmp / "graded.json").read_text(encoding="utf-8"))["results"][0]["assertions"]
    assert [(a["pass"], a["error"]) for a in checks] == [(True, None), (False, None), (True, None)]
    import jsonschema

    schema = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))
    for name in ("run.json", "graded.json"):  # the schema names what a cut record keeps
        jsonschema.validate(json.loads((in_tmp / name).read_text(encoding="utf-8")), schema)
    assert {"original_chars", "cut_at"} <= set(schema["$defs"]["message"]["properties"])
    assert "rule" in schema["$defs"]["assertion"]["properties"]


def test_grade_keeps_the_bots_state_and_parts_of_every_turn(in_tmp: Path) -> None:
    """SPEC §24: state and parts are kept by `grade` like a reply."""
    run_json = setup(in_tmp)
    data = json.loads(run_json.read_text())
    state = {"slots": {"city": "北京", "car_model": "瑶光"}, "active_flow": "book_test_drive"}
    parts = [{"text": "no", "buttons": [{"title": "周六", "payload": "/choose_date"}], "image": None, "custom": None}]
    for r in data["results"]:
        for m in r["transcript"]:
            if m["role"] == "assistant":
                m.update(state=state, parts=parts)
    run_json.write_text(json.dumps(data, ensure_ascii=False))
    code, out = invoke("grade", str(run_json), "-o", "regraded.json")
    regraded = json.loads((in_tmp / "regraded.json").read_text())
    replies = [m for r in regraded["results"] for m in r["transcript"] if m["role"] == "assistant"]
    assert len(replies) == 3
    assert all(m["state"] == state and m["parts"] == parts for m in replies), out


def test_a_reply_stored_cut_keeps_its_state_and_parts() -> None:
    from evalspec.play.runner import cap_replies

    reply = {"role": "assistant", "content": "x" * 50, "turn": 1, "latency_ms": None, "tokens": None, "cost": None,
             "state": {"slots": {"city": "北京"}}, "parts": [{"text": "x" * 50, "buttons": [{"title": "周六"}]}]}
    cut = cap_replies([reply], 10)[0]  # type: ignore[list-item]
    assert cut["cut_at"] == 10 and cut["state"] == reply["state"] and cut["parts"] == reply["parts"]
