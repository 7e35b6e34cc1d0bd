"""Tests made from conversations replay their conditions (SPEC §26): `evalspec import transcripts` and the
review app's "make a test" keep the source test's `vars:`, `state:` seed, the provider's `setup:`, the
test's `tool_results:` stubs and the provider it failed on, so the new test fails as the source did; a
test that would check nothing is refused (exit 2) unless `--allow-empty`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.app.view.project import View, post
from tests.helpers import invoke
from tests.servers import AgentScript, OpenAIServer

BOT = '''
from pathlib import Path

HERE = Path(__file__).parent


def setup(context):
    (HERE / f"prepared-{context['thread_id']}").write_text("ok")


def respond(messages, context):
    prepared = (HERE / f"prepared-{context['thread_id']}").exists()
    vars, state = context.get("vars") or {}, context.get("state") or {}
    leaks = prepared and vars.get("tier") == "vip" and vars.get("shop") == "望京店" \\
        and state.get("slots", {}).get("city") == "北京"
    return "请拨打 13812345678 联系店长" if leaks else "请在线留言"


def safe(messages, context):
    return "请在线留言"
'''

SUITE = """\
vars: {shop: 望京店}
providers:
  - id: safe
    python: bots/bot.py:safe
  - id: leaky
    python: bots/bot.py:respond
    setup: bots/bot.py:setup
tests:
  - id: vip
    vars: {tier: vip}
    state: {slots: {city: 北京}}
    conversation:
      - user: 怎么联系你们？
    assert:
      - not-regex: "1[3-9]\\\\d{9}"
"""


def _project(root: Path) -> Path:
    (root / "src" / "bots").mkdir(parents=True)
    (root / "src" / "bots" / "bot.py").write_text(BOT, encoding="utf-8")
    (root / "src" / "s.yaml").write_text(SUITE, encoding="utf-8")
    return root / "src" / "s.yaml"


def _statuses(data: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(r["base_id"], r["provider"]): r["status"] for r in data["results"]}


def test_an_imported_failure_keeps_vars_state_setup_and_provider_and_fails_again(tmp_path: Path) -> None:
    suite = _project(tmp_path)
    played = run([suite], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert _statuses(played) == {("vip", "safe"): "passed", ("vip", "leaky"): "failed"}
    out = tmp_path / "new" / "vip.yaml"
    code, output = invoke("import", "transcripts", str(tmp_path / "run" / "run.json"), "-o", str(out))
    assert code == 0, output
    test = yaml.safe_load(out.read_text(encoding="utf-8"))["tests"][0]
    assert test["providers"] == ["leaky"]  # the provider it failed on
    assert test["vars"] == {"shop": "望京店", "tier": "vip"} and test["state"] == {"slots": {"city": "北京"}}
    assert invoke("validate", str(out))[0] == 0
    replayed = run([out], options=RunOptions(run_dir=tmp_path / "replay", use_cache=False)).data
    assert _statuses(replayed) == {("vip", "leaky"): "failed"}  # the failure replays: never a pass
    assert "13812345678" in replayed["results"][0]["transcript"][-1]["content"]


def test_an_imported_failure_keeps_the_tests_tool_stubs(tmp_path: Path) -> None:
    script = AgentScript({"有现车吗？": [[("lookup_stock", {"model": "瑶光"})]]})
    with OpenAIServer(script) as server:
        (tmp_path / "s.yaml").write_text(f"""\
providers:
  - id: agent
    model: openai/test-model
    api_base: {server.base}
    api_key: sk-test
    tools:
      - {{type: function, function: {{name: lookup_stock, parameters: {{type: object}}}}}}
    tool_results: {{lookup_stock: 有货}}
tests:
  - id: sold-out
    tool_results: {{lookup_stock: 无货}}
    conversation: [{{user: 有现车吗？}}]
    assert: [{{not-contains: 无货}}]
""", encoding="utf-8")
        played = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
        assert _statuses(played) == {("sold-out", "agent"): "failed"}
        out = tmp_path / "new.yaml"
        code, output = invoke("import", "transcripts", str(tmp_path / "run" / "run.json"), "-o", str(out))
        assert code == 0, output
        assert yaml.safe_load(out.read_text(encoding="utf-8"))["tests"][0]["tool_results"] == {"lookup_stock": "无货"}
        replayed = run([out], options=RunOptions(run_dir=tmp_path / "replay", use_cache=False)).data
    assert _statuses(replayed) == {("sold-out", "agent"): "failed"}
    assert replayed["results"][0]["transcript"][-1]["content"] == "done: 无货"


def test_appending_to_a_suite_without_the_provider_adds_it(tmp_path: Path) -> None:
    suite = _project(tmp_path)
    run([suite], options=RunOptions(run_dir=tmp_path / "run", use_cache=False))
    target = tmp_path / "other" / "regressions.yaml"
    target.parent.mkdir()
    target.write_text("# 回归\nproviders:\n  - id: safe\n    python: ../src/bots/bot.py:safe\ntests: []\n",
                      encoding="utf-8")
    code, output = invoke("import", "transcripts", str(tmp_path / "run" / "run.json"), "-o", str(target))
    assert code == 0, output
    data = yaml.safe_load(target.read_text(encoding="utf-8"))
    assert data["providers"][1] == {"id": "leaky", "python": "../src/bots/bot.py:respond",
                                    "setup": "../src/bots/bot.py:setup"}
    replayed = run([target], options=RunOptions(run_dir=tmp_path / "replay", use_cache=False)).data
    assert _statuses(replayed) == {("vip", "leaky"): "failed"}


def _jsonl(tmp_path: Path) -> Path:
    row = {"id": "c1", "messages": [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "您好"}]}
    source = tmp_path / "logs.jsonl"
    source.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    return source


def test_a_jsonl_without_a_suite_is_refused_as_hollow_unless_allow_empty(tmp_path: Path) -> None:
    source, out = _jsonl(tmp_path), tmp_path / "out" / "s.yaml"
    code, output = invoke("import", "transcripts", str(source), "-o", str(out))
    assert code == 2, output
    assert "test 'c1'" in output and "check nothing" in output and "--allow-empty" in output
    assert not out.parent.exists()
    code, output = invoke("import", "transcripts", str(source), "-o", str(out), "--allow-empty")
    assert code == 0, output
    assert [t["id"] for t in yaml.safe_load(out.read_text(encoding="utf-8"))["tests"]] == ["c1"]


def test_a_jsonl_appended_to_a_suite_whose_defaults_hold_rules_is_not_hollow(tmp_path: Path) -> None:
    source, out = _jsonl(tmp_path), tmp_path / "rules.yaml"
    out.write_text("providers: [{id: p, python: bot.py:respond}]\ndefaults:\n  assert:\n    - not-contains: 手机号\n"
                   "tests:\n  - id: first\n    conversation: [{user: 在吗}]\n", encoding="utf-8")
    code, output = invoke("import", "transcripts", str(source), "-o", str(out))
    assert code == 0, output
    assert [t["id"] for t in yaml.safe_load(out.read_text(encoding="utf-8"))["tests"]] == ["first", "c1"]


@pytest.fixture
def view_of(tmp_path: Path) -> Iterator[tuple[View, Path, str]]:
    """A project whose run failed on `vip @ leaky`, served by `evalspec view` on loopback."""
    _project(tmp_path)
    code, output = invoke("run", str(tmp_path / "src" / "s.yaml"), "--no-cache", "-q",
                          "-o", str(tmp_path / ".evalspec" / "runs" / "r1" / "run.json"))
    assert code == 1, output
    run_id = json.loads((tmp_path / ".evalspec" / "runs" / "r1" / "run.json").read_text(encoding="utf-8"))["run_id"]
    process = subprocess.Popen([sys.executable, "-m", "evalspec", "view", str(tmp_path), "--port", "0",
                                "--reviewer", "审核员"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               encoding="utf-8")
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    try:
        base, token = url.split("?token=")
        yield View(url, base, token, process), tmp_path, run_id
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_make_a_test_in_the_review_app_replays_the_failure(view_of: tuple[View, Path, str]) -> None:
    view, root, run_id = view_of
    answer = post(view, "/api/make-test", {"run": run_id, "test": "vip", "provider": "leaky",
                                           "suite": "suites/regressions.yaml"})
    assert answer.status_code == 200, answer.text
    new = root / "suites" / "regressions.yaml"
    test = yaml.safe_load(new.read_text(encoding="utf-8"))["tests"][0]
    assert test["providers"] == ["leaky"] and test["vars"]["tier"] == "vip" and test["state"]["slots"]["city"] == "北京"
    replayed = run([new], options=RunOptions(run_dir=root / "replay", use_cache=False)).data
    assert _statuses(replayed) == {("vip", "leaky"): "failed"}
