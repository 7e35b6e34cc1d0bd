"""Recorded tool calls in OpenAI's own shape (`{id, type: function, function: {name, arguments}}`, the
arguments JSON text) are read like evalspec's flat `{id, name, arguments}` in every recorded source — a
JSONL log, a CSV with a `tool_calls` column, an inline `transcript:` — so the tool checks grade them
instead of erroring; arguments that are not JSON text are an error naming the file and line
(docs/en/recorded-conversations.md#tool-calls)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import invoke

ARGS = json.dumps({"day": "周六", "store": "北京朝阳店"}, ensure_ascii=False)


def openai_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def flat_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": json.loads(arguments)}


def messages(shape: Callable[[str, str, str], dict[str, Any]], arguments: str = ARGS) -> list[dict[str, Any]]:
    """A test-drive booking: a lookup and a booking in one turn, each answered by a tool message."""
    return [
        {"role": "system", "content": "你是汽车销售顾问"},
        {"role": "user", "content": "周六能在朝阳店试驾瑶光吗？"},
        {"role": "assistant", "content": None, "tool_calls": [openai_call("call_1", "lookup_stock",
                                                                          '{"model": "瑶光"}')]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"in_stock": true}'},
        {"role": "assistant", "content": None, "tool_calls": [shape("call_2", "book_test_drive", arguments)]},
        {"role": "tool", "tool_call_id": "call_2", "content": '{"booked": true}'},
        {"role": "assistant", "content": "已为您预约周六在朝阳店试驾瑶光。"},
    ]


def write_jsonl(tmp_path: Path, rows: list[dict[str, Any]]) -> str:
    line = json.dumps({"id": "c1", "messages": [{"role": "user", "content": "你好"},
                                                {"role": "assistant", "content": "您好，请问想了解哪款车？"}]},
                      ensure_ascii=False)
    second = json.dumps({"id": "c2", "messages": rows}, ensure_ascii=False)
    (tmp_path / "log.jsonl").write_text(line + "\n" + second + "\n", encoding="utf-8")
    return "transcripts: {path: log.jsonl}\ndefaults:\n  assert:\n{rules}"


def write_csv(tmp_path: Path, rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["conversation_id", "turn", "role", "content", "tool_calls", "tool_call_id", "channel"])
    writer.writerow(["c1", 1, "user", "你好", "", "", "wechat"])
    writer.writerow(["c1", 2, "assistant", "您好，请问想了解哪款车？", "", "", "wechat"])
    for k, m in enumerate(rows, 1):
        calls = json.dumps(m["tool_calls"], ensure_ascii=False) if m.get("tool_calls") else ""
        writer.writerow(["c2", k, m["role"], m["content"] or "", calls, m.get("tool_call_id", ""), "wechat"])
    (tmp_path / "log.csv").write_text(out.getvalue(), encoding="utf-8")
    return "transcripts: {path: log.csv}\ndefaults:\n  assert:\n{rules}"


def write_inline(tmp_path: Path, rows: list[dict[str, Any]]) -> str:
    entries: list[dict[str, Any]] = []
    for m in rows:
        if m["role"] == "system":
            continue
        entry: dict[str, Any] = {m["role"]: m["content"]}
        entry.update({k: m[k] for k in ("tool_calls", "tool_call_id") if k in m})
        entries.append(entry)
    test = yaml.safe_dump([{"id": "c2", "transcript": entries}], allow_unicode=True, sort_keys=False)
    return "tests:\n" + "\n".join("  " + line for line in test.splitlines()) + "\n    assert:\n{rules}"


SOURCES = [pytest.param(write_jsonl, id="jsonl"), pytest.param(write_csv, id="csv"),
           pytest.param(write_inline, id="inline")]
SHAPES = [pytest.param(openai_call, id="openai-shape"), pytest.param(flat_call, id="flat-shape")]


def graded(tmp_path: Path, suite: str, rules: list[str]) -> dict[str, Any]:
    text = suite.replace("{rules}", "".join(f"    - {r}\n" for r in rules))
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return {r["test_id"]: r for r in data["results"]}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("write", SOURCES)
def test_tool_rules_grade_recorded_calls_in_either_shape(
        tmp_path: Path, write: Callable[[Path, list[dict[str, Any]]], str],
        shape: Callable[[str, str, str], dict[str, Any]]) -> None:
    suite = write(tmp_path, messages(shape))
    records = graded(tmp_path, suite, [
        "tool-called: {name: book_test_drive, args: {day: 周六, store: 're:北京.*'}}",
        "tool-sequence: {calls: [lookup_stock, book_test_drive], mode: strict}",
        "not-tool-called: cancel_booking",
    ])
    record = records["c2"]
    assert record["status"] == "passed", record.get("error") or record["assertions"]
    calls = [c for m in record["transcript"] for c in m.get("tool_calls") or []]
    assert calls == [{"id": "call_1", "name": "lookup_stock", "arguments": {"model": "瑶光"}},
                     {"id": "call_2", "name": "book_test_drive", "arguments": {"day": "周六", "store": "北京朝阳店"}}]
    # each result names its tool, as a played one does (what a judge reads: "Tool book_test_drive returned")
    assert [m.get("name") for m in record["transcript"] if m["role"] == "tool"] == ["lookup_stock", "book_test_drive"]


@pytest.mark.parametrize("write", SOURCES)
def test_a_recorded_call_with_other_arguments_fails_the_argument_check(
        tmp_path: Path, write: Callable[[Path, list[dict[str, Any]]], str]) -> None:
    suite = write(tmp_path, messages(openai_call, json.dumps({"day": "周日"}, ensure_ascii=False)))
    record = graded(tmp_path, suite, ["tool-called: {name: book_test_drive, args: {day: 周六}}",
                                      "not-tool-called: book_test_drive"])["c2"]
    assert record["status"] == "failed", record.get("error") or record
    assert [a["pass"] for a in record["assertions"]] == [False, False]
    assert not any(a.get("error") for a in record["assertions"]), record["assertions"]


@pytest.mark.parametrize(("write", "where"), [
    pytest.param(write_jsonl, "log.jsonl:2: conversation 'c2', message 5: ", id="jsonl"),
    pytest.param(write_csv, "log.csv:8: conversation 'c2': ", id="csv"),
    pytest.param(write_inline, "rules.yaml:", id="inline"),
])
def test_arguments_that_are_not_json_text_are_an_error_naming_file_and_line(
        tmp_path: Path, write: Callable[[Path, list[dict[str, Any]]], str], where: str) -> None:
    suite = write(tmp_path, messages(openai_call, "{day: 周六"))
    (tmp_path / "rules.yaml").write_text(suite.replace("{rules}", "    - not-tool-called: cancel_booking\n"),
                                         encoding="utf-8")
    code, output = invoke("run", str(tmp_path / "rules.yaml"), "-o", str(tmp_path / "run"))
    assert code == 2, output
    assert where in output, output
    assert "tool call 1 (book_test_drive): arguments are not valid JSON text" in output, output
    assert "'{day: 周六'" in output and "KeyError" not in output, output


def test_a_call_without_a_name_is_an_error_not_a_key_error(tmp_path: Path) -> None:
    rows = messages(openai_call)
    rows[4]["tool_calls"] = [{"id": "call_2", "type": "function", "function": {"arguments": "{}"}}]
    suite = write_jsonl(tmp_path, rows)
    (tmp_path / "rules.yaml").write_text(suite.replace("{rules}", "    - tool-called: book_test_drive\n"),
                                         encoding="utf-8")
    code, output = invoke("run", str(tmp_path / "rules.yaml"), "-o", str(tmp_path / "run"))
    assert code == 2 and "log.jsonl:2:" in output and "tool call 1 has no name" in output, output
