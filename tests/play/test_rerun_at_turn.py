"""`evalspec rerun RUN.json --at-turn`: the failing turn asked again N times given its frozen history
(docs/en/statistics.md#replay-at-the-failing-turn)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tests.helpers import invoke

BOT = '''
import json, os, random

def respond(messages, context):
    turn, test = context["turn"], context["test_id"]
    with open("calls.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"test": test, "turn": turn, "messages": messages}, ensure_ascii=False) + "\\n")
    if turn == 1:
        return "你好 " + os.urandom(6).hex()   # a history the replay must keep as it was
    if turn == 2:
        return "ok"
    if test == "always":
        return "bad"
    if test == "once":                          # fails the first time only
        if os.path.exists("once.done"):
            return "good"
        open("once.done", "w").close()
        return "bad"
    n = int(open("seeded.n").read()) + 1 if os.path.exists("seeded.n") else 1
    open("seeded.n", "w").write(str(n))
    return "bad" if random.Random(n).random() < 0.4 else "good"   # call n fails with a known draw
'''

CONVERSATION = """
    conversation:
      - user: 你好
      - user: 我想退货
      - user: 订单号 12345
        assert: [{not-contains: bad}]"""
SUITE = "options: {cache: false}\nproviders: [{id: b, python: bot.py:respond}]\ntests:\n" + "".join(
    f"  - id: {name}{CONVERSATION}\n" for name in ("always", "once", "seeded"))


def seeded_fails(calls: range) -> int:
    return sum(random.Random(n).random() < 0.4 for n in calls)


def played(tmp: Path) -> Path:
    (tmp / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp / "s.yaml").write_text(SUITE, encoding="utf-8")
    assert seeded_fails(range(1, 2)) == 1  # the run's own call fails, so `seeded` is a failed conversation
    code, out = invoke("run", "s.yaml", "-o", "run.json", "-j", "1")
    assert code == 1, out
    return tmp / "run.json"


def calls(tmp: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (tmp / "calls.jsonl").read_text(encoding="utf-8").splitlines()]


def test_each_failed_turn_is_asked_again_given_its_frozen_history(in_tmp: Path) -> None:
    run_json = played(in_tmp)
    before = calls(in_tmp)
    code, out = invoke("rerun", str(run_json), "--at-turn", "-j", "1")
    assert code == 0, out
    assert "always @ b: turn 3: fails 10/10 given this history (72–100 %)" in out
    expected = seeded_fails(range(2, 12))
    assert 0 < expected < 10
    records = {r["test_id"]: r for r in json.loads(run_json.read_text(encoding="utf-8"))["results"]}
    assert records["always"]["at_turn"] == {"turn": 3, "times": 10, "failed": 10, "ci": [0.722467, 1.0]}
    assert records["seeded"]["at_turn"]["failed"] == expected
    assert f"seeded @ b: turn 3: fails {expected}/10 given this history" in out
    asked = calls(in_tmp)[len(before):]
    # only turn 3 was asked, 10 times per conversation, each time with the recorded turns 1 and 2 as history
    assert sorted({c["test"] for c in asked}) == ["always", "once", "seeded"] and len(asked) == 30
    assert all(c["turn"] == 3 for c in asked)
    recorded = [m for m in records["always"]["transcript"] if m["role"] == "assistant"]
    for c in asked:
        if c["test"] == "always":
            assert [m["content"] for m in c["messages"]] == ["你好", recorded[0]["content"], "我想退货", "ok",
                                                              "订单号 12345"]


def test_a_turn_that_never_fails_again_is_marked_derailed_earlier(in_tmp: Path) -> None:
    run_json = played(in_tmp)
    code, out = invoke("rerun", str(run_json), "--at-turn", "--ids", "once", "--times", "4")
    assert code == 0, out
    assert "once @ b: turn 3: fails 0/4 given this history (0–49 %): derailed earlier" in out
    records = {r["test_id"]: r for r in json.loads(run_json.read_text(encoding="utf-8"))["results"]}
    assert records["once"]["at_turn"]["derailed_earlier"] is True
    assert "at_turn" not in records["always"]  # not named by --ids
    code, out = invoke("report", str(run_json), "--md", "r.md", "--html", "r.html")
    assert "turn 3: fails 0/4 given this history (0–49 %): derailed earlier" in (in_tmp / "r.md").read_text(encoding="utf-8")
    assert "derailed earlier" in (in_tmp / "r.html").read_text(encoding="utf-8")
    code, out = invoke("report", str(run_json), "--md", "zh.md", "--lang", "zh")
    assert "第 3 轮：在此历史下失败 0/4（0–49 %）：更早已偏离" in (in_tmp / "zh.md").read_text(encoding="utf-8")


def test_usage_errors_exit_2(in_tmp: Path) -> None:
    run_json = played(in_tmp)
    assert invoke("rerun", str(run_json), "--at-turn", "--ids", "nope")[0] == 2
    assert invoke("rerun", str(run_json), "--at-turn", "--failed")[0] == 2
    assert invoke("rerun", str(run_json))[0] == 2
