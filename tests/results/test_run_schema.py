"""run.json's `record` and `message` schemas are generated from the `Record` and `Message` types."""

from __future__ import annotations

import json
from typing import Annotated, Literal, TypedDict

from evalspec.extend.params import Keywords
from evalspec.extend.transcript import Message, sent_user_turns, written_user_turns
from evalspec.results.record import Record, ref
from evalspec.results.schema import object_schema, run_schema
from tests import ROOT


def test_the_committed_schema_is_the_generated_one() -> None:
    committed = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))
    assert run_schema() == committed
    assert set(committed["$defs"]["record"]["properties"]) == set(Record.__required_keys__ | Record.__optional_keys__)
    assert set(committed["$defs"]["message"]["properties"]) == set(Message.__required_keys__ | Message.__optional_keys__)
    assert set(committed["$defs"]["record"]["required"]) == set(Record.__required_keys__)
    assert {"state", "parts"} <= Message.__optional_keys__  # SPEC §24, reserved


class _Row(TypedDict, total=False):
    name: Annotated[str, Keywords(minLength=1)]
    kind: Literal["a", "b", None]
    status: Annotated[str, ref("status")]
    score: float | None
    rows: list[Annotated[Message, ref("message")]]


def test_annotations_map_onto_json_schema() -> None:
    assert object_schema(_Row) == {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1}, "kind": {"enum": ["a", "b", None]},
        "status": {"$ref": "#/$defs/status"}, "score": {"type": ["number", "null"]},
        "rows": {"type": "array", "items": {"$ref": "#/$defs/message"}}}}


def test_sent_and_written_user_turns_differ_by_fillers_and_history() -> None:
    def user(turn: int | None, **flags: bool) -> Message:
        m: Message = {"role": "user", "content": "hi", "turn": turn, "latency_ms": None, "tokens": None, "cost": None}
        m.update(flags)  # type: ignore[typeddict-item]
        return m
    transcript = [user(1, history=True), user(2, filler=True), user(3),
                  {"role": "assistant", "content": "ok", "turn": 3, "latency_ms": 1.0, "tokens": None, "cost": None},
                  user(None, not_sent=True)]
    assert [m["turn"] for m in sent_user_turns(transcript)] == [1, 2, 3]
    assert [m["turn"] for m in written_user_turns(transcript)] == [3]
