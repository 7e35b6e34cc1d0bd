"""examples/adapters: a Taskmaster and a CrossWOZ file, converted by their adapter scripts, grade end to end
as recorded conversations (docs/en/recorded-conversations.md#other-datasets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalspec.app.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "examples" / "adapters"
DATA = ROOT / "tests" / "data" / "adapters"


def convert(script: str, source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ADAPTERS / script), str(source), "-o", str(out)],
                          capture_output=True, text=True, encoding="utf-8", check=False)


def conversations(path: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {row["id"]: row for row in rows}


def graded(suite: str, log: Path, tmp: Path) -> tuple[int, dict[str, dict[str, Any]], str]:
    result = CliRunner().invoke(main, ["run", str(ADAPTERS / suite), "--transcripts", str(log), "--no-cache",
                                       "-o", str(tmp / "run.json")])
    records = json.loads((tmp / "run.json").read_text(encoding="utf-8"))["results"]
    return result.exit_code, {r["test_id"]: r for r in records}, result.output


def failing(record: dict[str, Any]) -> list[str]:
    return sorted(a["type"] for a in record["assertions"] if a["pass"] is False)


def test_a_taskmaster_file_converted_by_the_adapter_grades_end_to_end(in_tmp: Path) -> None:
    """USER/ASSISTANT become user/assistant, the user's two utterances in a row one turn; the reply that reads
    back an email address fails the red line (exit 1), the other two conversations pass."""
    done = convert("taskmaster_to_jsonl.py", DATA / "taskmaster.json", in_tmp / "logs" / "taskmaster.jsonl")
    assert done.returncode == 0, done.stderr
    log = conversations(in_tmp / "logs" / "taskmaster.jsonl")
    restaurant = log["dlg-0f3a9c1e-restaurant"]
    assert [m["role"] for m in restaurant["messages"]] == ["user", "assistant"] * 3
    assert restaurant["messages"][2]["content"] == "Four of us.\nAt 7 pm if they have it."
    assert restaurant["metadata"] == {"source": "taskmaster", "domain": "restaurant",
                                      "instruction_id": "restaurant-table-2"}
    assert log["dlg-9e44c0b2-coffee"]["messages"][0] == {"role": "assistant",
                                                          "content": "Hello, how can I help you today?"}

    code, results, output = graded("taskmaster.yaml", in_tmp / "logs" / "taskmaster.jsonl", in_tmp)
    assert code == 1, output
    assert {cid: r["status"] for cid, r in results.items()} == {
        "dlg-0f3a9c1e-restaurant": "passed", "dlg-5b21d7aa-pizza": "failed", "dlg-9e44c0b2-coffee": "passed"}
    assert failing(results["dlg-5b21d7aa-pizza"]) == ["not-pii"]
    assert "dana.whitfield@example.com" in results["dlg-5b21d7aa-pizza"]["assertions"][0]["reason"]


def test_taskmaster3_api_calls_become_tool_calls_that_said_vs_did_reads(in_tmp: Path) -> None:
    """Taskmaster-3 (lower-case speakers, `apis`, no instruction_id): each API call is an assistant tool call
    and a tool message before the utterance's text; the agent that says the tickets are booked without a
    book_tickets call fails said-vs-did (exit 1), the one that called it passes."""
    done = convert("taskmaster_to_jsonl.py", DATA / "taskmaster3.json", in_tmp / "tm3.jsonl")
    assert done.returncode == 0, done.stderr
    log = conversations(in_tmp / "tm3.jsonl")
    booked = log["dlg-3a1c7e52-tickets"]
    assert [m["role"] for m in booked["messages"]] == ["user", "assistant", "tool", "assistant",
                                                       "user", "assistant", "tool", "assistant"]
    assert booked["messages"][5]["tool_calls"] == [{"id": "call_4_1", "name": "book_tickets", "arguments": {
        "name.movie": "Dune", "time.showing": "7:30pm", "num.tickets": "2"}}]
    assert booked["messages"][6] == {"role": "tool", "tool_call_id": "call_4_1", "name": "book_tickets",
                                     "content": '{"status": "success"}'}
    assert booked["messages"][3]["content"] == "Let me check what's showing.\nDune is playing at 7:30pm and 10:00pm at Regal Salem."
    assert booked["metadata"] == {"source": "taskmaster", "domain": "Movie Tickets", "vertical": "Movie Tickets",
                                  "scenario": "Buy tickets for a movie you have in mind"}

    code, results, output = graded("taskmaster3.yaml", in_tmp / "tm3.jsonl", in_tmp)
    assert code == 1, output
    assert {cid: r["status"] for cid, r in results.items()} == {
        "dlg-3a1c7e52-tickets": "passed", "dlg-8d0e4b19-tickets": "failed"}
    assert failing(results["dlg-8d0e4b19-tickets"]) == ["said-vs-did"]


def test_a_crosswoz_file_converted_by_the_adapter_grades_end_to_end(in_tmp: Path) -> None:
    """usr/sys become user/assistant with the system's annotation as its state; the driver's mobile number
    (full-width, spaced) fails not-pii, a landline given before the user asked fails not-before (exit 1), the
    two other dialogues pass, and every reply's state check passes on the kept dialog_act."""
    done = convert("crosswoz_to_jsonl.py", DATA / "crosswoz.json", in_tmp / "logs" / "crosswoz.jsonl")
    assert done.returncode == 0, done.stderr
    log = conversations(in_tmp / "logs" / "crosswoz.jsonl")
    taxi = log["102"]
    assert [m["role"] for m in taxi["messages"]] == ["user", "assistant"] * 3
    assert taxi["metadata"] == {"source": "crosswoz", "type": "独立多领域+交通", "domains": ["酒店", "出租"]}
    assert taxi["messages"][3]["state"]["dialog_act"] == [["Inform", "出租", "车型", "大众朗逸"]]
    assert taxi["messages"][3]["state"]["sys_state"]["出租"]["目的地"] == "故宫"
    assert "state" not in taxi["messages"][2]

    code, results, output = graded("crosswoz.yaml", in_tmp / "logs" / "crosswoz.jsonl", in_tmp)
    assert code == 1, output
    assert {cid: r["status"] for cid, r in results.items()} == {
        "101": "passed", "102": "failed", "103": "passed", "104": "failed"}
    assert failing(results["102"]) == ["not-pii"]
    assert "13912345678" in next(a["reason"] for a in results["102"]["assertions"] if a["type"] == "not-pii")
    assert failing(results["104"]) == ["not-before"]
    states = [a for r in results.values() for a in r["assertions"] if a["type"] == "state"]
    assert len(states) == 4 and all(a["pass"] is True for a in states)


def test_an_adapter_given_the_other_format_says_so_without_a_traceback(in_tmp: Path) -> None:
    """A CrossWOZ file is no Taskmaster file (and the reverse): exit 2 naming the file, never a traceback."""
    for script, source, said in (("taskmaster_to_jsonl.py", "crosswoz.json", "JSON list of conversations"),
                                 ("crosswoz_to_jsonl.py", "taskmaster.json", "JSON object of dialogues")):
        done = convert(script, DATA / source, in_tmp / "out.jsonl")
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr
        assert str(DATA / source) in done.stderr and not (in_tmp / "out.jsonl").exists()
