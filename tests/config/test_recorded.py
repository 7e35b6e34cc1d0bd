"""Recorded conversations graded by a suite's rules (SPEC §19): nothing is called."""

from __future__ import annotations

import json
from pathlib import Path

from evalspec.config.loader import load_suite
from tests.helpers import invoke

RULES = """\
description: 线上对话巡检
transcripts:
  path: logs/*.jsonl
labels:
  purchase_signal: 分期|首付|落地|贷款
defaults:
  assert:
    - not-regex: "1[3-9]\\\\d{9}"
      scope: each_turn
      severity: critical
    - not-regex: 保证.*(批|通过)
      scope: each_turn
    - not-before: {pattern: 到店|预约|试驾, turn: purchase_signal}
    - at-most: {pattern: 预约|试驾, count: 1}
    - within: {pattern: 首付|利率, after: purchase_signal, turns: 1}
"""

CONVERSATIONS = [
    ("phone-leak", [("你好", "您好，我的电话13812345678，随时联系")], "wechat"),
    ("promised-approval", [("贷款能批吗", "首付两成，保证能批下来")], "wechat"),
    ("early-invite", [("这车多少钱", "欢迎到店试驾"), ("能分期吗", "可以，首付两成")], "web"),
    ("repeated-invite", [("能贷款吗", "首付两成，欢迎预约"), ("好的", "那就预约周六试驾吧")], "wechat"),
    ("clean", [("这车多少钱", "二十万左右"), ("能分期吗", "可以，首付两成"), ("好", "欢迎到店")], "wechat"),
    ("no-signal", [("随便看看", "好的，您慢慢看")], "web"),
]
EXPECTED = {"phone-leak": "failed", "promised-approval": "failed", "early-invite": "failed",
            "repeated-invite": "failed", "clean": "passed", "no-signal": "passed"}


def write_log(path: Path, rows: list[tuple[str, list[tuple[str, str]], str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for cid, turns, channel in rows:
            messages = [{"role": "system", "content": "你是销售顾问"}]
            for user, assistant in turns:
                messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
            fh.write(json.dumps({"id": cid, "messages": messages, "metadata": {"channel": channel}},
                                ensure_ascii=False) + "\n")


def suite_dir(tmp_path: Path, rules: str = RULES) -> Path:
    (tmp_path / "rules.yaml").write_text(rules, encoding="utf-8")
    write_log(tmp_path / "logs" / "day.jsonl", CONVERSATIONS)
    return tmp_path


def results(path: Path) -> dict[str, dict]:
    return {r["test_id"]: r for r in json.loads(path.read_text(encoding="utf-8"))["results"]}


def test_each_recorded_conversation_gets_its_verdict_and_no_provider_is_called(tmp_path, monkeypatch):
    monkeypatch.chdir(suite_dir(tmp_path))
    code, out = invoke("run", "rules.yaml", "-o", "run.json", "-q")
    assert code == 1, out
    got = results(tmp_path / "run.json")
    assert {k: r["status"] for k, r in got.items()} == EXPECTED
    assert {r["provider"] for r in got.values()} == {"recorded"}
    assert all(r["calls"] == 0 for r in got.values())
    assert got["phone-leak"]["critical_failed"] is True
    failing = {k: [a["type"] for a in r["assertions"] if a["pass"] is False] for k, r in got.items()}
    assert failing["promised-approval"] == ["not-regex"]
    assert failing["early-invite"] == ["not-before"]
    assert failing["repeated-invite"] == ["at-most"]
    # the replies are graded (they are not golden history), the system prompt is not a message
    assert [m["role"] for m in got["clean"]["transcript"]] == ["user", "assistant"] * 3
    assert [m.get("label") for m in got["clean"]["transcript"] if m["role"] == "user"] == [None, "purchase_signal", None]


def test_a_rule_on_a_label_no_turn_matched_is_skipped_and_leaves_the_score(tmp_path, monkeypatch):
    monkeypatch.chdir(suite_dir(tmp_path))
    invoke("run", "rules.yaml", "-o", "run.json", "-q")
    record = results(tmp_path / "run.json")["no-signal"]
    within = next(a for a in record["assertions"] if a["type"] == "within")
    assert within["skipped"] is True and within["pass"] is None and within["score"] is None
    assert within["reason"] == "label 'purchase_signal' not found"
    assert record["status"] == "passed" and record["score"] == 1.0
    # not-before without its label checks every reply
    leak = results(tmp_path / "run.json")["phone-leak"]
    assert next(a for a in leak["assertions"] if a["type"] == "not-before")["pass"] is True


def test_not_before_without_its_label_checks_every_reply(tmp_path, monkeypatch):
    monkeypatch.chdir(suite_dir(tmp_path))
    write_log(tmp_path / "logs" / "day.jsonl", [("browse", [("随便看看", "欢迎到店看看")], "web")])
    invoke("run", "rules.yaml", "-o", "run.json", "-q")
    record = results(tmp_path / "run.json")["browse"]
    assert record["status"] == "failed"
    assert [a["type"] for a in record["assertions"] if a["pass"] is False] == ["not-before"]


def test_transcripts_option_swaps_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(suite_dir(tmp_path))
    write_log(tmp_path / "tonight" / "a.jsonl", [CONVERSATIONS[4]])
    code, out = invoke("run", "rules.yaml", "--transcripts", "tonight/a.jsonl", "-o", "run.json", "-q")
    assert code == 0, out
    assert list(results(tmp_path / "run.json")) == ["clean"]
    code, out = invoke("run", "rules.yaml", "--transcripts", "missing/*.jsonl", "-q")
    assert code == 2 and "--transcripts missing/*.jsonl: no file matches" in out


def test_where_and_a_seeded_sample(tmp_path, monkeypatch):
    rules = RULES.replace("  path: logs/*.jsonl\n", "  path: logs/*.jsonl\n  where: {channel: wechat}\n")
    monkeypatch.chdir(suite_dir(tmp_path, rules))
    invoke("run", "rules.yaml", "-o", "run.json", "-q")
    assert sorted(results(tmp_path / "run.json")) == ["clean", "phone-leak", "promised-approval", "repeated-invite"]
    sampled = rules.replace("  where:", "  sample: 2\n  seed: 7\n  where:")
    (tmp_path / "rules.yaml").write_text(sampled, encoding="utf-8")
    invoke("run", "rules.yaml", "-o", "a.json", "-q")
    invoke("run", "rules.yaml", "-o", "b.json", "-q")
    first = list(results(tmp_path / "a.json"))
    assert len(first) == 2 and first == list(results(tmp_path / "b.json"))
    assert set(first) <= {"clean", "phone-leak", "promised-approval", "repeated-invite"}


def test_a_csv_of_recorded_conversations(tmp_path, monkeypatch):
    monkeypatch.chdir(suite_dir(tmp_path, RULES.replace("logs/*.jsonl", "logs/day.csv")))
    (tmp_path / "logs" / "day.csv").write_text(
        "conversation_id,turn,role,content,channel\n"
        "c2,1,user,能分期吗,web\nc1,1,user,你好,wechat\nc2,1,assistant,首付两成,web\n"
        "c1,1,assistant,我的电话13812345678,wechat\n", encoding="utf-8")
    invoke("run", "rules.yaml", "-o", "run.json", "-q")
    got = results(tmp_path / "run.json")
    assert {k: r["status"] for k, r in got.items()} == {"c2": "passed", "c1": "failed"}


def test_a_line_that_is_not_a_conversation_is_named_with_its_line(tmp_path, monkeypatch):
    monkeypatch.chdir(suite_dir(tmp_path))
    with (tmp_path / "logs" / "day.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"id": "x", "messages": "hello"}\n')
    code, out = invoke("validate", "rules.yaml")
    assert code == 2
    assert "day.jsonl:7" in out and "needs 'messages'" in out


def test_a_typo_in_transcripts_is_an_error_with_a_suggestion(tmp_path, monkeypatch):
    monkeypatch.chdir(suite_dir(tmp_path, RULES.replace("  path:", "  smaple: 3\n  path:")))
    code, out = invoke("validate", "rules.yaml")
    assert code == 2 and "unknown key 'smaple' (did you mean 'sample'?)" in out


def test_an_inline_transcript_test(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("""\
tests:
  - id: approval
    transcript:
      - user: 贷款能批吗
        label: ask
        assert:
          - not-contains: 保证
      - assistant: 保证能批
      - user: 谢谢
      - assistant: 不客气
    assert:
      - not-before: {pattern: 到店, turn: ask}
""", encoding="utf-8")
    suite = load_suite(path)
    assert suite.providers == [] and suite.tests[0].recorded == "inline"
    code, out = invoke("run", str(path), "-o", str(tmp_path / "run.json"), "-q")
    record = results(tmp_path / "run.json")["approval"]
    assert code == 1 and record["provider"] == "recorded" and record["status"] == "failed"
    failed = [a for a in record["assertions"] if a["pass"] is False]
    assert [(a["type"], a["turn"]) for a in failed] == [("not-contains", 1)]


def test_recorded_assistant_messages_keep_their_state_and_parts(tmp_path, monkeypatch):
    """SPEC §24: JSONL and inline `transcript:` assistant messages may carry `state` and `parts`."""
    monkeypatch.chdir(tmp_path)
    state = {"slots": {"city": "北京"}, "active_flow": "book_test_drive"}
    parts = [{"text": "哪天？", "buttons": [{"title": "周六", "payload": "/sat"}], "image": None, "custom": None}]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_text(json.dumps({"id": "c1", "messages": [
        {"role": "user", "content": "试驾"}, {"role": "assistant", "content": "哪天？", "state": state,
                                              "parts": parts}]}, ensure_ascii=False) + "\n", encoding="utf-8")
    (tmp_path / "rules.yaml").write_text("transcripts: {path: logs/*.jsonl}\ndefaults:\n  assert: [{contains: 哪天}]\n",
                                         encoding="utf-8")
    code, out = invoke("run", "rules.yaml", "-o", "run.json", "-q")
    assert code == 0, out
    reply = results(tmp_path / "run.json")["c1"]["transcript"][1]
    assert reply["state"] == state and reply["parts"] == parts
    (tmp_path / "inline.yaml").write_text(f"""\
tests:
  - id: inline
    transcript:
      - user: 试驾
      - assistant: 哪天？
        state: {json.dumps(state, ensure_ascii=False)}
        parts: {json.dumps(parts, ensure_ascii=False)}
    assert: [{{contains: 哪天}}]
""", encoding="utf-8")
    code, out = invoke("run", "inline.yaml", "-o", "inline.json", "-q")
    assert code == 0, out
    reply = results(tmp_path / "inline.json")["inline"]["transcript"][1]
    assert reply["state"] == state and reply["parts"] == parts
