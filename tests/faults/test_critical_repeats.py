"""Property: critical means zero tolerance. Hypothesis writes repeated tests (pass rules all, majority, any, a
share) with `xfail` and `draft`, where a critical assertion fails in some repeat: the test is `failed`
(critical) whatever the rule or xfail says, and the gate fails unless the test is a draft."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.faults.helpers import FEW, assert_all_ran_and_passed, suite_yaml

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
