"""Conversations run concurrently within -j and per-provider limits; results keep suite order."""

from __future__ import annotations

import json
from pathlib import Path

from evalspec import run
from evalspec.play.runner import RunOptions

BOT = '''
import asyncio, time
state = {"now": 0, "peak": 0, "starts": []}

async def respond(messages, context):
    state["now"] += 1
    state["peak"] = max(state["peak"], state["now"])
    state["starts"].append(time.monotonic())
    index = int(context["test_id"][1:])
    await asyncio.sleep(0.05 * (8 - index))   # later tests finish first
    state["now"] -= 1
    with open("peak.json", "w") as f:
        f.write(__import__("json").dumps({"peak": state["peak"], "starts": state["starts"]}))
    return f"reply {index} turn {context['turn']} saw {len(messages)} messages"
'''


def go(tmp_path: Path, jobs: int, provider_extra: str = "", turns: int = 2) -> dict:
    (tmp_path / "bot.py").write_text(BOT)
    convo = ", ".join(f"{{user: q{i}}}" for i in range(turns))
    tests = "".join(f"  - id: t{i}\n    conversation: [{convo}]\n" for i in range(8))
    path = tmp_path / "s.yaml"
    path.write_text(f"options: {{cache: false}}\nproviders:\n  - id: b\n    python: bot.py:respond\n{provider_extra}"
                    f"tests:\n{tests}")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", concurrency=jobs)).data


def peak(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "peak.json").read_text())


def test_results_are_in_suite_order_whatever_finishes_first(in_tmp: Path) -> None:
    data = go(in_tmp, jobs=8)
    assert [r["test_id"] for r in data["results"]] == [f"t{i}" for i in range(8)]
    assert peak(in_tmp)["peak"] == 8
    journal = (in_tmp / "run" / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line)["test_id"] for line in journal] != [f"t{i}" for i in range(8)]


def test_turns_inside_a_conversation_are_sequential(in_tmp: Path) -> None:
    data = go(in_tmp, jobs=8, turns=3)
    for r in data["results"]:
        replies = [m["content"] for m in r["transcript"] if m["role"] == "assistant"]
        assert [x.split(" saw ")[1] for x in replies] == ["1 messages", "3 messages", "5 messages"]


def test_concurrency_flag_limits_conversations(in_tmp: Path) -> None:
    go(in_tmp, jobs=3)
    assert peak(in_tmp)["peak"] == 3


def test_provider_max_concurrency(in_tmp: Path) -> None:
    go(in_tmp, jobs=8, provider_extra="    max_concurrency: 2\n")
    assert peak(in_tmp)["peak"] == 2


def test_provider_rpm_spaces_calls(in_tmp: Path) -> None:
    go(in_tmp, jobs=8, provider_extra="    rpm: 600\n", turns=1)  # one call every 100 ms
    starts = sorted(peak(in_tmp)["starts"])
    # 8 calls at one every 100 ms span at least 700 ms (unlimited, they would all start at once); a thread
    # that starts late on a loaded machine can bunch two starts, so allow two intervals of slack
    assert starts[-1] - starts[0] >= 0.5, starts
