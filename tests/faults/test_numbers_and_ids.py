"""Property, v3 fault classes (SPEC §17), in-process: whatever the fault, `passed` means every assertion ran
and passed, and the run ends with the exit code the rules give.

Hypothesis writes suites with one class of fault each:
- numbers that are not numbers (`.nan`, `.inf`) in random numeric keys, and instance ids that collide:
  `validate` and `run` exit 2 naming them, before any call;
- judge answers made of several JSON objects (a `<think>` draft, format examples, quoted replies, then
  zero, one or two final verdicts) from a loopback OpenAI-compatible server through litellm;
- repeats and `xfail`/`draft` tests where a critical assertion fails in some repeat.
The classes that end the process (process death, storage faults) are in test_faults_property_v3_cli.py.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body
from tests.test_faults_property import assert_all_ran_and_passed

# no shrinking: a failing example is shown as generated (each one costs a run, some a process or two)
FEW = settings(deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate],
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def suite_yaml(tests: list[dict[str, Any]], head: str = "") -> str:
    """A suite over bot.py:respond (JSON is YAML: every generated value is written as data, never as text)."""
    return (f"options: {{cache: false, retries: 0}}\nproviders:\n  - id: bot\n    python: bot.py:respond\n{head}"
            f"tests:\n" + "".join(f"  - {json.dumps(t, ensure_ascii=False)}\n" for t in tests))


# ---------------------------------------------------------------------------------------------------------
# Numbers are numbers: NaN and ±inf refused wherever a number is read

COUNTING_BOT = "def respond(messages, context):\n    open('called', 'a').write('x')\n    return '好的'\n"
NOT_NUMBERS = [".nan", ".NaN", ".inf", "-.inf", "+.Inf"]
# (the key's path as the error shows it, where it goes): a finite value for each; one or two are made bad
NUMERIC = {
    "gate.min_pass_rate": 1.0, "gate.max_errors": 0, "options.timeout": 30, "options.grade_timeout": 20,
    "providers[0].rpm": 600, "providers[0].timeout": 30, "tests[0].threshold": 0.5,
    "tests[0].sla[0].min_score": 0.5, "tests[0].sla[0].at": 10, "tests[0].conversation[0].assert[0].weight": 1,
    "tests[0].conversation[0].assert[0].threshold": 1.0, "tests[1].assert[0].weight": 2,
    "tests[1].assert[0].latency": 10000,
}


def numeric_suite(values: dict[str, Any]) -> str:
    v = {k: (k, x) for k, x in values.items()}

    def w(key: str) -> Any:
        return v[key][1]

    return f"""\
options: {{cache: false, timeout: {w("options.timeout")}, grade_timeout: {w("options.grade_timeout")}}}
providers:
  - id: bot
    python: bot.py:respond
    rpm: {w("providers[0].rpm")}
    timeout: {w("providers[0].timeout")}
gate: {{min_pass_rate: {w("gate.min_pass_rate")}, max_errors: {w("gate.max_errors")}}}
tests:
  - id: curve
    threshold: {w("tests[0].threshold")}
    matrix: {{d: [1, 2]}}
    curve: d
    sla: [{{at: {w("tests[0].sla[0].at")}, min_score: {w("tests[0].sla[0].min_score")}}}]
    conversation:
      - user: hi
        assert:
          - {{contains: 好的, weight: {w("tests[0].conversation[0].assert[0].weight")}, threshold: {w("tests[0].conversation[0].assert[0].threshold")}}}
  - id: plain
    conversation: [{{user: hi}}]
    assert:
      - {{latency: {w("tests[1].assert[0].latency")}, weight: {w("tests[1].assert[0].weight")}}}
"""


@settings(FEW, max_examples=15)
@given(bad=st.dictionaries(st.sampled_from(sorted(NUMERIC)), st.sampled_from(NOT_NUMBERS), min_size=0, max_size=2),
       command=st.sampled_from(["validate", "run"]))
def test_a_number_that_is_not_a_number_is_refused_naming_its_key(
        bad: dict[str, str], command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = tmp_path / uuid.uuid4().hex
    where.mkdir()
    monkeypatch.chdir(where)
    (where / "bot.py").write_text(COUNTING_BOT, encoding="utf-8")
    (where / "s.yaml").write_text(numeric_suite({**NUMERIC, **bad}), encoding="utf-8")
    code, out = invoke(command, "s.yaml", *(["-q", "--no-cache"] if command == "run" else []))
    if not bad:  # the control: the same suite with finite numbers is fine
        assert code == 0, out
        return
    assert code == 2, out
    for key in bad:
        assert key in out, (key, out)  # each bad key named
    assert "not a finite number" in out, out
    assert not (where / "called").exists(), out  # before any call


# ---------------------------------------------------------------------------------------------------------
# Identity is unique: colliding instance ids are refused before any call

value = st.one_of(st.integers(0, 3), st.sampled_from(["a", "b", "zh", "中"]))


@settings(FEW, max_examples=15)
@given(matrix=st.dictionaries(st.sampled_from(["x", "lang"]), st.lists(value, min_size=1, max_size=3, unique=True),
                              min_size=1, max_size=2),
       collision=st.sampled_from(["none", "type", "hand"]), pick=st.integers(0, 10),
       command=st.sampled_from(["validate", "run"]))
def test_colliding_instance_ids_are_refused_before_any_call(
        matrix: dict[str, list[Any]], collision: str, pick: int, command: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    keys = list(matrix)
    # what the spec says an id is: ID[key=value,...], keys in matrix order
    rendered = [f"{k}={matrix[k][pick % len(matrix[k])]}" for k in keys]
    tests: list[dict[str, Any]] = [{"id": "g", "matrix": matrix, "conversation": [{"user": "你好 {{ x | default('') }}"}]}]
    if collision == "type":  # the number n beside the text "n" under one key
        values = matrix[keys[pick % len(keys)]]
        n = pick % 4
        values.extend(v for v in (n, str(n)) if v not in values)
    elif collision == "hand":
        tests.append({"id": f"g[{','.join(rendered)}]", "conversation": [{"user": "你好"}]})
    # a number beside its text (1, "1") under one key: generated on purpose or by chance
    twins = any(len({str(v) for v in vs}) < len(vs) for vs in matrix.values())
    where = tmp_path / uuid.uuid4().hex
    where.mkdir()
    monkeypatch.chdir(where)
    (where / "bot.py").write_text(COUNTING_BOT, encoding="utf-8")
    (where / "s.yaml").write_text(suite_yaml(tests), encoding="utf-8")
    code, out = invoke(command, "s.yaml", *(["-q"] if command == "run" else []))
    if collision != "hand" and not twins:
        assert code == 0, out  # the control: distinct ids are fine
        assert (where / "called").exists() == (command == "run"), out
        return
    assert code == 2, out
    assert "g[" in out, out  # the colliding instance named
    assert not (where / "called").exists(), out


# ---------------------------------------------------------------------------------------------------------
# Judges: the last complete answer counts, not the first

JUDGE_BOT = "def respond(messages, context):\n    return '好的，周六上午见。'\n"


def verdict(passed: bool, reason: str) -> str:
    return json.dumps({"reason": reason, "pass": passed}, ensure_ascii=False)


final = st.tuples(st.booleans(), st.sampled_from(["回答了问题", "no answer given", "语气自然"]))
judge_answer = st.fixed_dictionaries({
    "think": st.none() | st.booleans(),  # a <think> block with a draft verdict (pass or fail)
    "format": st.sampled_from([None, "fenced", "inline"]),  # a format example with placeholder values
    "placeholder": st.sampled_from(["...", "…", "", "<reason>"]),
    "quoted_reply": st.sampled_from([None, "quote-line", "quotation-mark"]),  # the bot's reply quoted
    "quoted_verdict": st.booleans(),  # the quoted text is verdict-shaped
    "finals": st.lists(final, max_size=2),
    "fence_last": st.booleans(),
    "tail": st.sampled_from(["", "\n希望有帮助。", "\nThat is my verdict."]),
})


def build_answer(a: dict[str, Any]) -> str:
    parts = []
    if a["think"] is not None:
        parts.append(f"<think>Let me draft: {verdict(a['think'], 'draft')} — wait, check again.</think>")
    if a["format"] == "fenced":
        parts.append(f'Answer in this format:\n```json\n{{"reason": "{a["placeholder"]}", "pass": true}}\n```')
    elif a["format"] == "inline":
        parts.append(f'The format is {{"reason": "{a["placeholder"]}", "pass": false}}.')
    if a["quoted_reply"]:
        shown = verdict(not (a["finals"][-1][0] if a["finals"] else True), "the bot's words") \
            if a["quoted_verdict"] and a["finals"] else json.dumps({"answer": "好的"}, ensure_ascii=False)
        parts.append(f"The assistant replied:\n> {shown}" if a["quoted_reply"] == "quote-line"
                     else f'The assistant replied: "{shown}"')
    for n, (passed, reason) in enumerate(a["finals"]):
        text = verdict(passed, reason)
        if n == len(a["finals"]) - 1 and a["fence_last"]:
            text = f"```json\n{text}\n```"
        parts.append(text)
    return "\n".join(parts) + a["tail"]


@pytest.fixture(scope="module")
def judge_server() -> Iterator[tuple[OpenAIServer, dict[str, str]]]:
    """One loopback judge for the module; it gives `answer["text"]` to every call."""
    answer = {"text": ""}
    with OpenAIServer(lambda request, n: Reply(body=chat_body(answer["text"]))) as server:
        yield server, answer


@settings(FEW, max_examples=30)
@given(a=judge_answer)
def test_a_judge_verdict_is_the_last_complete_object_never_a_draft(
        a: dict[str, Any], judge_server: tuple[OpenAIServer, dict[str, str]], tmp_path: Path) -> None:
    server, answer = judge_server
    answer["text"] = build_answer(a)
    where = tmp_path / uuid.uuid4().hex
    where.mkdir()
    (where / "bot.py").write_text(JUDGE_BOT, encoding="utf-8")
    head = f'judge: {{model: openai/judge-model, api_base: "{server.base}", api_key: sk-test}}\n'
    tests = [{"id": "t", "conversation": [{"user": "周六能去看车吗？"}],
              "assert": [{"llm-rubric": "助手确认了预约时间"}]}]
    (where / "s.yaml").write_text(suite_yaml(tests, head), encoding="utf-8")
    data = run([where / "s.yaml"], options=RunOptions(run_dir=where / "run", use_cache=False)).data
    (record,) = data["results"]
    (result,) = record["assertions"]
    finals = [passed for passed, _ in a["finals"]]
    shown = (answer["text"], record["status"], result)
    if not finals or len(set(finals)) > 1:  # no real verdict (a refusal), or two that disagree
        assert result["pass"] is None and result["error"], shown
        assert record["status"] == "error", shown
    else:  # the last complete verdict object decides, whatever the draft said
        assert result["pass"] is finals[-1] and result["error"] is None, shown
        assert record["status"] == ("passed" if finals[-1] else "failed"), shown


# ---------------------------------------------------------------------------------------------------------
# Critical means zero tolerance: repeats, pass rules, xfail and drafts

REPEAT_BOT = '''
def respond(messages, context):
    k = context["repeat"] - 1
    words = []
    if context["vars"]["red"][k]: words.append("RED")
    if context["vars"]["bad"][k]: words.append("BAD")
    return "好的 " + " ".join(words)
'''

repeated_test = st.integers(1, 4).flatmap(lambda n: st.fixed_dictionaries({
    "n": st.just(n),
    "rule": st.sampled_from(["all", "majority", "any", 0.5]),
    "red": st.lists(st.booleans(), min_size=n, max_size=n),  # the critical assertion fails in this repeat
    "bad": st.lists(st.booleans(), min_size=n, max_size=n),  # a major assertion fails in this repeat
    "xfail": st.booleans(),
    "draft": st.booleans(),
}))


def rule_passes(rule: str | float, ok: int, n: int) -> bool:
    if rule == "all":
        return ok == n
    if rule == "majority":
        return ok * 2 > n
    if rule == "any":
        return ok > 0
    return ok / n >= float(rule)


@settings(FEW, max_examples=25)
@given(cases=st.lists(repeated_test, min_size=1, max_size=3))
def test_a_critical_failure_in_any_repeat_fails_the_gate_whatever_the_pass_rule_or_xfail(
        cases: list[dict[str, Any]], tmp_path: Path) -> None:
    where = tmp_path / uuid.uuid4().hex
    where.mkdir()
    (where / "bot.py").write_text(REPEAT_BOT, encoding="utf-8")
    tests = []
    for i, c in enumerate(cases):
        test: dict[str, Any] = {"id": f"t{i}", "repeat": {"n": c["n"], "pass": c["rule"]},
                                "vars": {"red": c["red"], "bad": c["bad"]}, "conversation": [{"user": "你好"}],
                                "assert": [{"not-contains": "RED", "severity": "critical"},
                                           {"not-contains": "BAD"}]}
        if c["xfail"]:
            test["xfail"] = "known defect"
        if c["draft"]:
            test["draft"] = True
        tests.append(test)
    (where / "s.yaml").write_text(suite_yaml(tests), encoding="utf-8")
    result = run([where / "s.yaml"], options=RunOptions(run_dir=where / "run", use_cache=False))
    data = result.data
    verdicts = {v["test_id"]: v for v in data["verdicts"]}
    for r in data["results"]:
        if r["status"] == "passed":
            assert_all_ran_and_passed(r, 2)
    gate_fails = False
    for i, c in enumerate(cases):
        v = verdicts[f"t{i}"]
        ok = sum(1 for red, bad in zip(c["red"], c["bad"], strict=True) if not red and not bad)
        if any(c["red"]):  # a red line crossed in any repeat: `failed` (critical), whatever xfail or the rule says
            assert v["status"] == "failed" and v["critical_failed"], (c, v)
            gate_fails = gate_fails or not c["draft"]  # drafts never gate
        elif c["xfail"]:  # expected to fail: reported, never gating
            assert v["status"] == ("xpassed" if rule_passes(c["rule"], ok, c["n"]) else "xfailed"), (c, v)
        else:
            assert v["status"] == ("passed" if rule_passes(c["rule"], ok, c["n"]) else "failed"), (c, v)
            gate_fails = gate_fails or (v["status"] == "failed" and not c["draft"])
    assert data["gate"]["exit_code"] == result.exit_code == (1 if gate_fails else 0), (cases, data["gate"])
