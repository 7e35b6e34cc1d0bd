"""Real data: MT-Bench-101 dialogues as golden-history suites, played against a loopback model server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from evalspec import run
from evalspec.play.runner import RunOptions
from tests import TESTS
from tests.servers import OpenAIServer, Reply, chat_body

DATA = TESTS / "data" / "mtbench101-sample.jsonl"
RUBRICS = {"CM": "The reply correctly recalls information from earlier turns.",
           "AR": "The reply resolves pronouns to the right entities.",
           "SC": "The reply follows the user's correction."}


def dialogues() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


def to_suite(rows: list[dict[str, Any]], base: str, history: dict[str, Any] | None = None) -> dict[str, Any]:
    """Golden history as `user` + `assistant` pairs; only the last user turn is sent to the model."""
    provider: dict[str, Any] = {"id": "m", "model": "openai/under-test", "api_base": base}
    if history:
        provider["history"] = history
    tests = []
    for row in rows:
        conversation: list[dict[str, Any]] = []
        for turn in row["history"][:-1]:
            conversation += [{"user": turn["user"]}, {"assistant": turn["bot"]}]
        last = {"user": row["history"][-1]["user"]}
        if row["task"] in RUBRICS:
            last["assert"] = [{"llm-rubric": RUBRICS[row["task"]], "scope": "turn"}]
        conversation.append(last)
        tests.append({"id": f"{row['task']}-{row['id']}", "tags": [row["task"]], "conversation": conversation})
    return {"providers": [provider], "judge": {"model": "openai/judge", "api_base": base},
            "options": {"cache": False}, "tests": tests}


def script(request: dict[str, Any], n: int) -> Reply:
    if request["model"] == "judge":
        return Reply(body=chat_body('{"reason": "checked", "pass": true}'))
    return Reply(body=chat_body("golden answer"))


def test_golden_histories_send_only_the_last_turn(tmp_path: Path) -> None:
    rows = dialogues()
    assert len(rows) == 39
    with OpenAIServer(script) as server:
        (tmp_path / "mt.yaml").write_text(yaml.safe_dump(to_suite(rows, server.base), allow_unicode=True),
                                          encoding="utf-8")
        data = run([tmp_path / "mt.yaml"], options=RunOptions(run_dir=tmp_path / "run", concurrency=8)).data
    calls = [r for r in server.chats() if r["model"] == "under-test"]
    assert len(calls) == 39  # one call per dialogue: the golden turns are history
    by_last = {c["messages"][-1]["content"]: c for c in calls}
    for row in rows:
        sent = by_last[row["history"][-1]["user"]]["messages"]
        expected = [m for t in row["history"][:-1] for m in ({"role": "user", "content": t["user"]},
                                                            {"role": "assistant", "content": t["bot"]})]
        assert sent[:-1] == expected
    judged = [r for r in data["results"] if r["assertions"]]
    assert len(judged) == 9 and all(r["status"] == "passed" for r in judged)
    turns = {r["test_id"]: max(m["turn"] for m in r["transcript"]) for r in data["results"]}
    assert turns["GR-1"] == 3  # history-only user turns count


def test_window_strategy_on_golden_histories(tmp_path: Path) -> None:
    rows = [r for r in dialogues() if len(r["history"]) >= 4][:5]
    with OpenAIServer(script) as server:
        (tmp_path / "mt.yaml").write_text(yaml.safe_dump(to_suite(rows, server.base, {"mode": "window", "turns": 1}),
                                                         allow_unicode=True), encoding="utf-8")
        run([tmp_path / "mt.yaml"], options=RunOptions(run_dir=tmp_path / "run"))
    for call in (r for r in server.chats() if r["model"] == "under-test"):
        assert [m["role"] for m in call["messages"]] == ["user", "assistant", "user"]
