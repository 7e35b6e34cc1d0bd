"""`evalspec import transcripts` (SPEC §25 "Tests from conversations"): played (run.json) or recorded
(JSONL) conversations written as draft scripted tests that validate, and replay the same user turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import invoke

BOT = '''
def bot(messages, context):
    text = messages[-1]["content"]
    state = {"intent": "finance"} if "分期" in text else {}
    return {"content": "好的，" + text + ("，欢迎来店" if "看看" in text else ""), "state": state}
'''

SUITE = """\
# the source suite
labels:
  purchase_signal: 分期|首付
defaults:
  assert:
    - not-regex: 来店
      scope: each_turn
providers:
  - id: p
    python: bots/bot.py:bot
tests:
  - id: visit
    conversation:
      - user: 这台车是哪年的？
        label: opening
      - user: 能分期吗？
      - user: 那我周六去看看
  - id: hello
    vars: {name: 小王}
    conversation:
      - user: 你好，我是{{ name }}
"""


def _played(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A run of the source suite (its bot in a sub-folder, so a relocated provider path is exercised)."""
    (tmp_path / "src" / "bots").mkdir(parents=True)
    (tmp_path / "src" / "bots" / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "src" / "s.yaml").write_text(SUITE, encoding="utf-8")
    data = run([tmp_path / "src" / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return tmp_path / "run" / "run.json", data


def _user_turns(data: dict[str, Any]) -> dict[str, list[str]]:
    return {r["base_id"]: [m["content"] for m in r["transcript"] if m["role"] == "user"] for r in data["results"]}


def test_played_conversations_become_draft_tests_that_validate_and_replay_the_same_turns(tmp_path: Path) -> None:
    run_json, played = _played(tmp_path)
    out = tmp_path / "new" / "from_run.yaml"
    code, output = invoke("import", "transcripts", str(run_json), "-o", str(out))
    assert code == 0, output
    text = out.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert [t["id"] for t in data["tests"]] == ["visit", "hello"]
    assert all(t["draft"] is True for t in data["tests"])
    visit = data["tests"][0]["conversation"]
    assert [e.get("label") for e in visit] == ["opening", "purchase_signal", None]  # own label kept, pattern applied
    assert data["defaults"] == {"assert": [{"not-regex": "来店", "scope": "each_turn"}]}
    assert data["labels"] == {"purchase_signal": "分期|首付"}
    assert data["providers"] == [{"id": "p", "python": "../src/bots/bot.py:bot"}]
    assert "# failed there:" in text and "not-regex: 来店" in text  # the failed rule named for 'visit' only
    assert text.index("failed there") < text.index("id: visit") < text.index("id: hello")
    assert text.count("failed there") == 1

    code, output = invoke("validate", str(out))
    assert code == 0, output
    replayed = run([out], options=RunOptions(run_dir=tmp_path / "replay", use_cache=False)).data
    assert _user_turns(replayed) == _user_turns(played)
    assert _user_turns(played)["hello"] == ["你好，我是小王"]
    by_id = {r["base_id"]: r for r in replayed["results"]}
    assert by_id["visit"]["status"] == "failed" and by_id["visit"]["draft"] is True  # it checks what the source did
    assert by_id["hello"]["status"] == "passed"


def test_append_keeps_the_suite_as_written_and_numbers_clashing_ids(tmp_path: Path) -> None:
    run_json, _ = _played(tmp_path)
    suite = tmp_path / "src" / "s.yaml"
    code, output = invoke("import", "transcripts", str(run_json), "--ids", "visit", "-o", str(suite))
    assert code == 0, output
    code, output = invoke("import", "transcripts", str(run_json), "--ids", "visit", "-o", str(suite))
    assert code == 0, output
    text = suite.read_text(encoding="utf-8")
    assert text.startswith(SUITE)  # comments, flow mappings, quoting: the source untouched
    ids = [t["id"] for t in yaml.safe_load(text)["tests"]]
    assert ids == ["visit", "hello", "visit-2", "visit-3"]
    code, output = invoke("validate", str(suite))
    assert code == 0, output


def test_append_before_a_later_key_and_to_an_empty_list(tmp_path: Path) -> None:
    run_json, _ = _played(tmp_path)
    suite = tmp_path / "src" / "later.yaml"
    suite.write_text("tests: []   # none yet\n\n# who answers\nproviders:\n  - id: p\n    python: bots/bot.py:bot\n",
                     encoding="utf-8")
    code, output = invoke("import", "transcripts", str(run_json), "--ids", "hello", "-o", str(suite), "--allow-empty")
    assert code == 0, output
    text = suite.read_text(encoding="utf-8")
    assert text.startswith("tests:   # none yet\n") and text.endswith("\n\n# who answers\nproviders:\n  - id: p\n"
                                                                        "    python: bots/bot.py:bot\n")
    assert [t["id"] for t in yaml.safe_load(text)["tests"]] == ["hello"]
    assert invoke("validate", str(suite))[0] == 0


def test_expect_state_writes_a_check_per_turn_that_passes_on_replay(tmp_path: Path) -> None:
    run_json, _ = _played(tmp_path)
    out = tmp_path / "state.yaml"
    code, output = invoke("import", "transcripts", str(run_json), "--ids", "visit", "--expect-state", "intent",
                          "-o", str(out))
    assert code == 0, output
    turns = yaml.safe_load(out.read_text(encoding="utf-8"))["tests"][0]["conversation"]
    assert [e["assert"] for e in turns] == [
        [{"state": {"path": "intent", "exists": False}}],
        [{"state": {"path": "intent", "equals": "finance"}}],
        [{"state": {"path": "intent", "exists": False}}],
    ]
    replayed = run([out], options=RunOptions(run_dir=tmp_path / "replay", use_cache=False)).data
    states = [a for a in replayed["results"][0]["assertions"] if a["type"] == "state"]
    assert len(states) == 3 and all(a["pass"] for a in states), states


def test_a_recorded_jsonl_gets_a_stub_provider_and_validates(tmp_path: Path) -> None:
    rows = [
        {"id": "c1", "messages": [{"role": "system", "content": "你是销售"}, {"role": "user", "content": "价格 {{ 多少 }}"},
                                  {"role": "assistant", "content": "20万", "state": {"intent": "price"}},
                                  {"role": "user", "content": [{"type": "text", "text": "再见"}]},
                                  {"role": "assistant", "content": "再见"}]},
        {"id": "c2", "messages": [{"role": "user", "content": "不要这条"}]},
    ]
    source = tmp_path / "logs.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "suite" / "s.yaml"
    code, output = invoke("import", "transcripts", str(source), "--ids", "c1", "--expect-state", "intent",
                          "-o", str(out))
    assert code == 0, output
    assert (tmp_path / "suite" / "provider_stub.py").is_file()
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert data["providers"] == [{"id": "stub", "python": "provider_stub.py:respond"}]
    assert [t["id"] for t in data["tests"]] == ["c1"]
    assert invoke("validate", str(out))[0] == 0
    replayed = run([out], options=RunOptions(run_dir=tmp_path / "replay", use_cache=False)).data
    assert _user_turns(replayed) == {"c1": ["价格 {{ 多少 }}", "再见"]}  # sent as written, not as a template


def test_unknown_ids_are_a_usage_error(tmp_path: Path) -> None:
    run_json, _ = _played(tmp_path)
    code, output = invoke("import", "transcripts", str(run_json), "--ids", "nope", "-o", str(tmp_path / "x.yaml"))
    assert code == 2 and "none of nope is in the run" in output
    assert not (tmp_path / "x.yaml").exists()


def test_a_graded_recorded_run_gets_its_rules_and_labels_and_a_stub(tmp_path: Path) -> None:
    row = {"id": "c1", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "要预约试驾吗"},
                                    {"role": "user", "content": "能分期吗"}, {"role": "assistant", "content": "可以"}]}
    (tmp_path / "logs.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    (tmp_path / "rec.yaml").write_text("transcripts: {path: logs.jsonl}\nlabels: {purchase_signal: 分期}\n"
                                       "defaults:\n  assert:\n    - not-before: {pattern: 预约, turn: purchase_signal}\n",
                                       encoding="utf-8")
    run([tmp_path / "rec.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False))
    out = tmp_path / "out" / "s.yaml"
    code, output = invoke("import", "transcripts", str(tmp_path / "run" / "run.json"), "-o", str(out))
    assert code == 0, output
    text = out.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert data["providers"] == [{"id": "stub", "python": "provider_stub.py:respond"}]
    assert data["labels"] == {"purchase_signal": "分期"} and data["defaults"]["assert"][0]["not-before"]["turn"] == \
        "purchase_signal"
    assert data["tests"][0]["conversation"] == [{"user": "hi"}, {"user": "能分期吗", "label": "purchase_signal"}]
    assert "not-before" in text.split("- id: c1")[0]  # the rule that failed on the recording, named above it
    assert invoke("validate", str(out))[0] == 0
