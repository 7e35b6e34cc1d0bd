"""Failure attribution: set by rerun, recorded by triage, carried over to later runs, grouped in reports."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests import ROOT
from tests.helpers import invoke

RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))
BOT = """\
from pathlib import Path


def respond(messages, context):
    mode = Path(__file__).with_name("mode.txt").read_text().strip()
    if mode == "error":
        raise RuntimeError("backend down")
    return "yes" if mode == "pass" else "no"
"""


def setup(tmp: Path, mode: str) -> Path:
    (tmp / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp / "mode.txt").write_text(mode, encoding="utf-8")
    path = tmp / "s.yaml"
    path.write_text("providers: [{id: bot, python: 'bot.py:respond'}]\n"
                    "tests: [{id: answer, conversation: [{user: hi, assert: [{equals: 'yes'}]}]}]\n", encoding="utf-8")
    return path


def record(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validate(data, RUN_SCHEMA)
    return dict(data["results"][0])


def test_rerun_writes_the_attribution_of_each_label_into_run_json(in_tmp: Path) -> None:
    suite = setup(in_tmp, "fail")
    for replay_mode, expected in (("fail", "bot_defect"), ("pass", "model_fluctuation"), ("error", "infrastructure")):
        (in_tmp / "mode.txt").write_text("fail", encoding="utf-8")
        assert invoke("run", str(suite), "-o", "run.json", "--no-cache")[0] == 1
        (in_tmp / "mode.txt").write_text(replay_mode, encoding="utf-8")
        invoke("rerun", "run.json", "--failed", "--times", "2")
        r = record(in_tmp / "run.json")
        assert (r["attribution"], r["attribution_by"]) == (expected, "rerun"), replay_mode


def test_triage_is_recorded_and_carried_over_until_the_status_changes(in_tmp: Path) -> None:
    suite = setup(in_tmp, "fail")
    invoke("run", str(suite), "-o", "run1.json", "--no-cache")
    code, out = invoke("triage", "run1.json", "answer", "--as", "pending_fact", "--note", "退款政策还没定")
    assert code == 0, out
    first = record(in_tmp / "run1.json")
    assert first["attribution"] == "pending_fact" and first["triage"]["note"] == "退款政策还没定"  # type: ignore[index]
    lines = (in_tmp / ".evalspec" / "triage.jsonl").read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[-1])
    assert (entry["test_id"], entry["provider"], entry["as"], entry["status"]) == ("answer", "bot", "pending_fact", "failed")

    invoke("run", str(suite), "-o", "run2.json", "--no-cache", "--md", "run2.md")
    second = record(in_tmp / "run2.json")
    assert second["attribution"] == "pending_fact" and second["triage"]["carried"] is True  # type: ignore[index]
    report = (in_tmp / "run2.md").read_text(encoding="utf-8")
    assert "Failures by attribution" in report and "pending fact** (1): answer @ bot (triage) — 退款政策还没定" in report

    (in_tmp / "mode.txt").write_text("error", encoding="utf-8")  # the status changes: the call no longer applies
    invoke("run", str(suite), "-o", "run3.json", "--no-cache")
    third = record(in_tmp / "run3.json")
    assert third["status"] == "error" and "attribution" not in third


def test_triage_names_what_it_cannot_find(in_tmp: Path) -> None:
    suite = setup(in_tmp, "pass")
    invoke("run", str(suite), "-o", "run.json", "--no-cache")
    code, out = invoke("triage", "run.json", "answr", "--as", "bot_defect")
    assert code == 2 and "did you mean 'answer'" in out
    code, out = invoke("triage", "run.json", "answer", "--as", "bot_defect")
    assert code == 2 and "nothing to attribute" in out


def test_a_triage_is_carried_over_into_a_run_too_large_to_hold_in_memory(
        in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalspec.play import runner

    # a run is read back from its journal above STREAM_ABOVE records (5,000): the same path with 20
    monkeypatch.setattr(runner, "STREAM_ABOVE", 20)
    STREAM_ABOVE = runner.STREAM_ABOVE

    setup(in_tmp, "fail")
    suite = in_tmp / "big.yaml"  # more records than a run keeps in memory: they are read back from the journal
    suite.write_text("providers: [{id: bot, python: 'bot.py:respond'}]\noptions: {cache: false}\ntests:\n"
                     f"  - {{id: filler, repeat: {STREAM_ABOVE}, conversation: [{{user: hi}}]}}\n"
                     "  - {id: answer, conversation: [{user: hi, assert: [{equals: 'yes'}]}]}\n", encoding="utf-8")
    assert invoke("run", str(suite), "-q", "-j", "64", "-o", "run1.json")[0] == 1
    code, out = invoke("triage", "run1.json", "answer", "--as", "pending_fact", "--note", "退款政策还没定")
    assert code == 0, out

    invoke("run", str(suite), "-q", "-j", "64", "-o", "run2.json", "--md", "run2.md")
    data = json.loads((in_tmp / "run2.json").read_text(encoding="utf-8"))
    assert len(data["results"]) == STREAM_ABOVE + 1
    answer = next(r for r in data["results"] if r["test_id"] == "answer")
    assert (answer["attribution"], answer["attribution_by"], answer["triage"]["carried"]) == \
        ("pending_fact", "triage", True)
    assert sum(1 for r in data["results"] if "attribution" in r) == 1
    report = (in_tmp / "run2.md").read_text(encoding="utf-8")
    assert "pending fact** (1): answer @ bot (triage) — 退款政策还没定" in report


def test_triage_records_who_made_the_call(in_tmp: Path) -> None:
    import getpass

    suite = setup(in_tmp, "fail")
    invoke("run", str(suite), "-o", "run.json", "--no-cache")
    assert invoke("triage", "run.json", "answer", "--as", "bot_defect")[0] == 0
    entry = json.loads((in_tmp / ".evalspec" / "triage.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert entry["who"] == getpass.getuser() and record(in_tmp / "run.json")["triage"]["who"] == getpass.getuser()  # type: ignore[index]
