"""The gate has one owner (results/gate.py): across a matrix of cases, the CLI's exit code, run.json's
`gate`, the API's `Run.exit_code` / `Run.decision` and the reports' headline all say the same thing, and
the decision re-reached from the run's records alone is the one stored."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import evalspec
from evalspec.reporters.vocabulary import gate_headline
from evalspec.results.aggregate import finalize
from evalspec.results.gate import GateDecision
from evalspec.results.verdict import is_gated, reaches_gate
from tests.helpers import invoke

BOT = '''\
from pathlib import Path


def ok(messages, context):
    return "ok"


def bad(messages, context):
    return "bad"


def boom(messages, context):
    raise RuntimeError("backend down")


def forgets(messages, context):
    return "不记得"


def flip(messages, context):  # "ok" on the base side, "bad" on the head side
    return "ok" if (Path(__file__).parent / "mode.txt").read_text().strip() == "base" else "bad"
'''

PROVIDERS = "providers:\n" + "".join(f"  - id: {f}\n    python: bot.py:{f}\n"
                                     for f in ("ok", "bad", "boom", "forgets", "flip"))


def case(test_id: str, provider: str, extra: str = "", check: str = "{equals: ok}") -> str:
    return (f"  - id: {test_id}\n    providers: [{provider}]\n{extra}    conversation:\n      - user: hi\n"
            f"        assert: [{check}]\n")


CURVE = """\
  - id: decay
    providers: [forgets]
    matrix: {distance: [1, 5]}
    curve: distance
    sla: [{at: 5, min_score: 0.5}]
    conversation:
      - user: 我叫张三
      - filler: "{{ distance }}"
      - user: 还记得吗？
        assert: [{memory-recall: {name: 张三}}]
"""

# name: (suite body, CLI options, expected exit code, how a reason of the gate starts — "" for no reason)
CASES: dict[str, tuple[str, list[str], int, str]] = {
    "all pass": ("tests:\n" + case("a", "ok"), [], 0, ""),
    "critical fail": ("gate: {min_pass_rate: 0}\ntests:\n" + case("a", "ok")
                      + case("t", "bad", check="{equals: ok, severity: critical}"), [], 1,
                      "s.yaml: critical assertion failed: t @ bad"),
    "pass rate below min_pass_rate": ("gate: {min_pass_rate: 0.8}\ntests:\n" + case("a", "ok") + case("b", "bad"),
                                      [], 1, "s.yaml: pass rate 50.00% < 80.00%"),
    "run pass rate below --fail-under": ("gate: {min_pass_rate: 0}\ntests:\n" + case("a", "ok") + case("b", "bad"),
                                         ["--fail-under", "0.6"], 1, "run pass rate 50.00% < --fail-under 60.00%"),
    "errors beyond max_errors": ("gate: {max_errors: 0}\ntests:\n" + case("a", "ok") + case("e", "boom"), [], 3,
                                 "s.yaml: 1 errors > max_errors 0"),
    "errors within max_errors": ("gate: {max_errors: 1}\ntests:\n" + case("a", "ok") + case("e", "boom"), [], 0, ""),
    "no gated verdict": ("gate: {max_errors: 5}\ntests:\n" + case("e", "boom"), [], 3,
                         "no gated verdict was reached: 1 error"),
    "a failure beats the errors": ("gate: {max_errors: 0}\ntests:\n" + case("b", "bad") + case("e", "boom"), [], 1,
                                   "s.yaml: pass rate 0.00% < 100.00%"),
    "xfail": ("tests:\n" + case("a", "ok") + case("x", "bad", "    xfail: known bug\n"), [], 0, ""),
    "draft": ("tests:\n" + case("a", "ok") + case("d", "bad", "    draft: true\n"), [], 0, ""),
    "draft with --include-drafts": ("tests:\n" + case("a", "ok") + case("d", "bad", "    draft: true\n"),
                                    ["--include-drafts"], 1, "s.yaml: pass rate 50.00% < 100.00%"),
    "SLA missed": ("tests:\n" + case("a", "ok") + CURVE, [], 1, "s.yaml: SLA missed: sla: decay @ forgets"),
}

def api_options(cli: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, arg in enumerate(cli):
        if arg == "--fail-under":
            out["fail_under"] = float(cli[i + 1])
        elif arg == "--include-drafts":
            out["include_drafts"] = True
    return out


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    (in_tmp / "mode.txt").write_text("base", encoding="utf-8")
    return in_tmp


def agree(code: int, out: str, data: dict[str, Any], api: evalspec.Run) -> GateDecision:
    """Every reader of the gate says what run.json's `gate` says; returns it, typed."""
    gate = data["gate"]
    decision = GateDecision.from_json(gate)
    assert json.dumps(decision.to_json(), ensure_ascii=False) == json.dumps(gate, ensure_ascii=False)
    assert code == gate["exit_code"] == decision.exit_code, out
    assert decision.passed is (code == 0) and all(s.ok is not s.reasons for s in decision.suites)
    assert api.exit_code == api.decision.exit_code == code
    assert api.gate == gate and api.decision == decision  # the same decision, played twice
    assert gate_headline(gate) in out
    return decision


@pytest.mark.parametrize("name", list(CASES))
def test_the_cli_run_json_and_the_api_read_one_gate_decision(project: Path, name: str) -> None:
    body, options, expected, reason = CASES[name]
    (project / "s.yaml").write_text(PROVIDERS + body, encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-o", "cli.json", "--no-cache", *options)
    data = json.loads((project / "cli.json").read_text(encoding="utf-8"))
    api = evalspec.run(["s.yaml"], output="api.json", use_cache=False, **api_options(options))
    decision = agree(code, out, data, api)
    assert code == expected, out
    assert any(r.startswith(reason) for r in decision.reasons) if reason else decision.reasons == (), decision.reasons
    # re-reached from the records alone, the gate is the one stored (and its JSON the same bytes)
    again = finalize({"results": copy.deepcopy(data["results"]), "suites": data["suites"]},
                     decision.fail_under, decision.include_drafts)["gate"]
    assert json.dumps(again, ensure_ascii=False) == json.dumps(data["gate"], ensure_ascii=False)
    # the verdicts' `gated` is the one rule the gate counts by
    assert all(v["gated"] is is_gated(v) for v in data["verdicts"])
    counted = [v for v in data["verdicts"] if is_gated(v, decision.include_drafts) and v["status"] in ("passed", "failed")]
    assert sum(s.passed + s.failed for s in decision.suites) == len(counted)
    assert sum(s.errors for s in decision.suites) == sum(
        1 for v in data["verdicts"] if v["status"] == "error" and reaches_gate(v, decision.include_drafts))


REGRESSIONS = "gate: {min_pass_rate: 0}\ntests:\n" + case("steady", "ok") + case("r", "flip")


@pytest.mark.parametrize(("body", "expected", "reasons"), [
    (REGRESSIONS, 1, ("s.yaml: regressed: r @ flip",)),
    # the pass rate (50%) is below the suite's minimum, but nothing got worse than the baseline's
    ("gate: {min_pass_rate: 0.9}\ntests:\n" + case("steady", "ok") + case("b", "bad"), 0, ()),
    # an error beyond max_errors still exits 3 when nothing regressed
    ("gate: {max_errors: 0}\ntests:\n" + case("steady", "ok") + case("e", "boom"), 3,
     ("s.yaml: 1 errors > max_errors 0",)),
])
def test_the_regressions_gate_is_read_alike_by_the_cli_run_json_and_the_api(
        project: Path, body: str, expected: int, reasons: tuple[str, ...]) -> None:
    (project / "s.yaml").write_text(PROVIDERS + body, encoding="utf-8")
    invoke("run", "s.yaml", "-o", "base.json", "--no-cache")
    (project / "mode.txt").write_text("head", encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-o", "cli.json", "--no-cache", "--baseline", "base.json",
                       "--gate", "regressions")
    data = json.loads((project / "cli.json").read_text(encoding="utf-8"))
    api = evalspec.run(["s.yaml"], output="api.json", use_cache=False, baseline="base.json", gate="regressions")
    decision = agree(code, out, data, api)
    assert (code, decision.mode, decision.reasons) == (expected, "regressions", reasons), out
    assert [s.mode for s in decision.suites] == ["regressions"]


def test_regressions_without_a_baseline_run_the_usual_gate_and_say_so(project: Path) -> None:
    (project / "s.yaml").write_text(PROVIDERS + "tests:\n" + case("a", "ok") + case("b", "bad"), encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-o", "cli.json", "--no-cache", "--gate", "regressions")
    data = json.loads((project / "cli.json").read_text(encoding="utf-8"))
    api = evalspec.run(["s.yaml"], output="api.json", use_cache=False, gate="regressions")
    decision = agree(code, out, data, api)
    assert code == 1 and decision.mode == "pass_rate"
    assert decision.reasons == ("s.yaml: pass rate 50.00% < 100.00%",
                                "no baseline (no --baseline given): the usual gate ran")
