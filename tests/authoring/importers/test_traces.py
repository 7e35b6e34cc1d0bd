"""`evalspec import traces FILE --format otel|langfuse` (docs/en/importers.md#from-traces): production
traces become recorded conversations that `transcripts:` grades end to end — one conversation per
conversation id or session however far apart its turns, whole-history spans adding only their new
messages, anonymous spans joined by time — and what cannot be converted is named, never dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import invoke

DATA = Path(__file__).parents[2] / "data" / "traces"
RED_LINE = """transcripts: {path: logs.jsonl}
defaults:
  assert:
    - not-regex: "1[3-9]\\\\d{9}"
      scope: each_turn
      severity: critical
    - not-tool-called: cancel_booking
"""


def imported(tmp_path: Path, source: Path, kind: str, *extra: str) -> tuple[dict[str, dict[str, Any]], str]:
    code, output = invoke("import", "traces", str(source), "--format", kind, "-o", str(tmp_path / "logs.jsonl"),
                          *extra)
    assert code == 0, output
    lines = (tmp_path / "logs.jsonl").read_text(encoding="utf-8").splitlines()
    return {c["id"]: c for c in map(json.loads, lines)}, output


def said(conversation: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content") if not m.get("tool_calls") else
             [c["function"]["name"] for c in m["tool_calls"]]) for m in conversation["messages"]]


def graded(tmp_path: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    (tmp_path / "rules.yaml").write_text(RED_LINE, encoding="utf-8")
    code, output = invoke("run", str(tmp_path / "rules.yaml"), "-o", str(tmp_path / "run.json"))
    data = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    return code, {r["test_id"]: r for r in data["results"]}


def test_otel_spans_become_one_conversation_per_conversation_id(tmp_path: Path) -> None:
    conversations, output = imported(tmp_path, DATA / "otel.json", "otel")
    assert list(conversations) == ["conv_7f3a", "conv_9c21", "otel-c0ffee00000000000000000000000001",
                                   "otel-c0ffee00000000000000000000000003", "conv_photo"]
    # whole-history chat spans (the first in a trace whose agent span names the conversation) add only
    # their new messages; the second turn, twelve minutes later in another trace, joins by id
    assert said(conversations["conv_7f3a"]) == [
        ("system", "你是瑶光汽车的销售顾问，只回答购车相关的问题。"), ("user", "瑶光在北京有现车吗？"),
        ("assistant", ["lookup_stock"]), ("tool", '{"in_stock": 3, "store": "朝阳店"}'),
        ("assistant", "北京朝阳店有 3 台现车，欢迎到店看车。"), ("user", "可以留个电话吗？我想约周六试驾。"),
        ("assistant", ["book_test_drive"]), ("tool", '{"booked": true, "time": "10:00"}'),
        ("assistant", "已为您预约周六上午十点在朝阳店试驾，顾问电话 13812345678。")]
    call = conversations["conv_7f3a"]["messages"][2]["tool_calls"][0]
    assert call == {"id": "call_stock_1", "type": "function",
                    "function": {"name": "lookup_stock", "arguments": '{"model": "瑶光", "city": "北京"}'}}
    # the older prompt / completion events, turns fifty minutes apart (more than the gap): one conversation
    assert said(conversations["conv_9c21"]) == [("user", "分期首付最低多少？"), ("assistant", "首付最低 15%，可分 36 期。"),
                                                ("user", "利息怎么算？"), ("assistant", "年化利率 3.5%，以审批为准。")]
    # no conversation id: five minutes apart join (one attribute per field, whole history), three hours do not
    assert said(conversations["otel-c0ffee00000000000000000000000001"]) == [
        ("user", "你们周末营业吗？"), ("assistant", "周末正常营业，9:00-18:00。"),
        ("user", "店在哪里？"), ("assistant", "朝阳区建国路 88 号。")]
    assert conversations["conv_7f3a"]["metadata"]["service"] == "car-sales-bot"
    # named, never dropped: the span whose messages are broken JSON, the image part left out
    assert "not converted: span d000000000000001 (resourceSpans[0].scopeSpans[0].spans[7]): not JSON" in output
    assert "span d000000000000002 (resourceSpans[0].scopeSpans[0].spans[8]): input message 1 part 1 (uri) left out" \
        in output
    assert "read 14 spans: 5 conversation(s); 1 not converted; 3 without chat messages" in output


def test_a_shorter_gap_splits_spans_without_an_id_but_never_a_conversation_id(tmp_path: Path) -> None:
    conversations, _ = imported(tmp_path, DATA / "otel.json", "otel", "--session-gap", "4m")
    assert "otel-c0ffee00000000000000000000000002" in conversations
    assert len(conversations["conv_9c21"]["messages"]) == 4


def test_imported_otel_logs_are_graded_and_the_red_line_catches_the_phone_number(tmp_path: Path) -> None:
    imported(tmp_path, DATA / "otel.json", "otel")
    code, records = graded(tmp_path)
    assert code == 1
    assert records["conv_7f3a"]["status"] == "failed"
    failed = [a for a in records["conv_7f3a"]["assertions"] if not a["pass"]]
    assert [a["type"] for a in failed] == ["not-regex"] and "13812345678" in json.dumps(failed, ensure_ascii=False)
    assert {k: r["status"] for k, r in records.items() if k != "conv_7f3a"} == dict.fromkeys(
        ["conv_9c21", "otel-c0ffee00000000000000000000000001", "otel-c0ffee00000000000000000000000003", "conv_photo"],
        "passed")
    calls = [c for m in records["conv_7f3a"]["transcript"] for c in m.get("tool_calls") or []]
    assert calls[1] == {"id": "call_book_1", "name": "book_test_drive", "arguments": {"day": "周六", "store": "朝阳店"}}


def test_langfuse_traces_become_one_conversation_per_session_and_are_graded(tmp_path: Path) -> None:
    conversations, output = imported(tmp_path, DATA / "langfuse.json", "langfuse")
    assert list(conversations) == ["sess-001", "sess-002", "langfuse-tr-0006"]
    assert said(conversations["sess-001"]) == [
        ("system", "你是瑶光汽车的销售顾问。"), ("user", "我想看看瑶光的 SUV"), ("assistant", "好的，瑶光 SUV 起售价 18.98 万。"),
        ("user", "帮我约个周六的试驾"), ("assistant", ["book_test_drive"]), ("tool", '{"booked": true}'),
        ("assistant", "已预约周六上午，销售顾问王先生（13987654321）会联系您。")]
    # sess-002's turns are ninety minutes apart, interleaved with sess-001's
    assert said(conversations["sess-002"])[-1] == ("assistant", "不客气！")
    assert conversations["sess-002"]["metadata"]["user"] == "u-2048"
    assert "not converted: trace tr-0007 (data[6]): input is dict, not a list of chat messages" in output
    code, records = graded(tmp_path)
    assert code == 1 and records["sess-001"]["status"] == "failed"
    assert records["sess-002"]["status"] == records["langfuse-tr-0006"]["status"] == "passed"


def test_the_langfuse_ui_array_is_read_like_the_api_page(tmp_path: Path) -> None:
    page = json.loads((DATA / "langfuse.json").read_text(encoding="utf-8"))
    (tmp_path / "ui.json").write_text(json.dumps(page["data"], ensure_ascii=False), encoding="utf-8")
    conversations, output = imported(tmp_path, tmp_path / "ui.json", "langfuse")
    assert list(conversations) == ["sess-001", "sess-002", "langfuse-tr-0006"]
    assert "trace tr-0007 ([6]): input is dict" in output


def test_a_trace_without_output_is_kept_as_no_reply_not_an_empty_one(tmp_path: Path) -> None:
    traces = [{"id": "t1", "timestamp": "2026-11-30T10:00:00Z", "sessionId": "s1",
               "input": [{"role": "user", "content": "你的电话是多少？"}], "output": None}]
    (tmp_path / "lf.json").write_text(json.dumps(traces, ensure_ascii=False), encoding="utf-8")
    conversations, output = imported(tmp_path, tmp_path / "lf.json", "langfuse")
    assert conversations["s1"]["messages"][-1] == {"role": "assistant", "content": None}
    assert "trace t1 ([0]): no reply recorded" in output
    code, records = graded(tmp_path)
    assert code == 3 and records["s1"]["status"] == "error" and "no reply" in records["s1"]["error"]


@pytest.mark.parametrize(("kind", "content", "expected"), [
    pytest.param("otel", '{"resourceSpans": ', "not JSON", id="otel-truncated"),
    pytest.param("otel", '[{"id": "t1", "input": "hi"}]', "not an OTLP JSON trace export", id="otel-given-langfuse"),
    pytest.param("langfuse", '{"resourceSpans": []}', "not a Langfuse trace export (an object with keys "
                 "resourceSpans)", id="langfuse-given-otel"),
    pytest.param("langfuse", "[1, 2]", "not a Langfuse trace export (list)", id="langfuse-not-traces"),
    pytest.param("otel", '{"resourceSpans": []}', "no conversation found", id="otel-empty"),
])
def test_a_file_of_the_wrong_shape_is_exit_2_naming_it(tmp_path: Path, kind: str, content: str, expected: str) -> None:
    source = tmp_path / "export.json"
    source.write_text(content, encoding="utf-8")
    code, output = invoke("import", "traces", str(source), "--format", kind, "-o", str(tmp_path / "logs.jsonl"))
    assert code == 2, output
    assert str(source) in output and expected in output, output
    assert "Traceback" not in output and not (tmp_path / "logs.jsonl").exists()


def test_a_bad_session_gap_is_a_usage_error(tmp_path: Path) -> None:
    code, output = invoke("import", "traces", str(DATA / "otel.json"), "--format", "otel", "--session-gap", "soon")
    assert code == 2 and "'soon' is not a duration" in output, output


def test_the_collectors_one_request_a_line_file_is_read(tmp_path: Path) -> None:
    export = json.loads((DATA / "otel.json").read_text(encoding="utf-8"))
    scopes = export["resourceSpans"][0]["scopeSpans"]
    lines = [json.dumps({"resourceSpans": [{**export["resourceSpans"][0], "scopeSpans": [s]}]}, ensure_ascii=False)
             for s in scopes]
    (tmp_path / "spans.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    conversations, _ = imported(tmp_path, tmp_path / "spans.jsonl", "otel")
    assert set(conversations) == {"conv_7f3a", "conv_9c21", "otel-c0ffee00000000000000000000000001",
                                  "otel-c0ffee00000000000000000000000003", "conv_photo"}
