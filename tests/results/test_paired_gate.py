"""Regressions decided by the paired test (docs/en/statistics.md#regressions-decided-by-a-paired-test): two
real runs of a python bot whose failing tests are known, so b and c are known; p is the exact one-sided
McNemar p-value; the exit code follows p < alpha; `regressions: each` stays the default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalspec.results.stats import mcnemar_exact_one_sided
from tests import ROOT
from tests.helpers import invoke

RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))

# `failing.json` lists the tests that fail on this side; `leak` tests print a phone number (a red line)
BOT = '''\
import json
from pathlib import Path

HERE = Path(__file__).parent


def respond(messages, context):
    side = json.loads((HERE / "failing.json").read_text())
    test = context["test_id"]
    if test in side.get("leak", []):
        return "ok 13812345678"
    return "bad" if test in side["failing"] else "ok"
'''

IDS = [f"t{i}" for i in range(12)]


def suite_text(gate: str) -> str:
    tests = "".join(f"  - id: {i}\n    conversation: [{{user: 你好, assert: [{{equals: ok}}]}}]\n" for i in IDS)
    return (f"providers:\n  - id: bot\n    python: bot.py:respond\n{gate}defaults:\n  assert:\n"
            f"    - not-regex: \"1[3-9]\\\\d{{9}}\"\n      severity: critical\ntests:\n{tests}")


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    return in_tmp


def side(project: Path, name: str, failing: list[str], *args: str, gate: str = "",
         leak: tuple[str, ...] = ()) -> tuple[int, str, dict[str, Any]]:
    (project / "failing.json").write_text(json.dumps({"failing": failing, "leak": list(leak)}), encoding="utf-8")
    (project / "s.yaml").write_text(suite_text(gate), encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-o", f"{name}.json", "--confirm", "0", "--no-cache", *args)
    data = json.loads((project / f"{name}.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, RUN_SCHEMA)
    return code, out, data


def paired(project: Path, base: list[str], head: list[str], *args: str, gate: str = "",
           base_leak: tuple[str, ...] = (), head_leak: tuple[str, ...] = ()) -> tuple[int, str, dict[str, Any]]:
    side(project, "base", base, "--fail-under", "0", leak=base_leak)
    return side(project, "head", head, "--baseline", "base.json", *args, gate=gate, leak=head_leak)


@pytest.mark.parametrize(("base", "head", "b", "c", "p", "code"), [
    ([], ["t0", "t1", "t2", "t3", "t4"], 5, 0, 1 / 32, 1),  # 5 of 5 flips one way: p = 0.031 < 0.05
    ([], ["t0"], 1, 0, 0.5, 0),  # one flip is not a regression
    (["t6", "t7"], ["t0", "t1", "t2", "t3", "t4", "t5"], 6, 2, 37 / 256, 0),  # flips both ways: p = 0.145
])
def test_the_paired_gate_exits_on_the_exact_mcnemar_p(project: Path, base: list[str], head: list[str], b: int,
                                                      c: int, p: float, code: int) -> None:
    got, out, data = paired(project, base, head, "--gate", "regressions-paired")
    assert mcnemar_exact_one_sided(b, c) == pytest.approx(p)  # the statistics function agrees with the hand value
    assert data["baseline"]["paired"] == {"b": b, "c": c, "p": pytest.approx(p, abs=1e-6), "alpha": 0.05,
                                          "significant": p < 0.05}
    assert data["gate"]["suites"][0]["paired"] == data["baseline"]["paired"]
    assert got == code, out
    regressed = {r["test_id"] for r in data["baseline"]["rows"] if r["category"] == "regressed"}
    assert regressed == set(head) - set(base)  # each regressed test is still listed


def test_the_suite_key_regressions_paired_and_its_alpha(project: Path) -> None:
    head = ["t0", "t1", "t2", "t3", "t4"]
    code, _, data = paired(project, [], head, gate="gate: {regressions: paired, alpha: 0.01}\n")
    assert data["baseline"]["paired"]["alpha"] == 0.01 and not data["baseline"]["paired"]["significant"]
    assert code == 0  # p = 0.031 is not below 0.01
    code, _, data = paired(project, [], head, gate="gate: {regressions: paired}\n")
    assert code == 1 and any(r.startswith("s.yaml: paired test: 5 passed → failed, 0 failed → passed: p = 0.0312")
                             for r in data["gate"]["reasons"]), data["gate"]["reasons"]


def test_regressions_each_stays_the_default(project: Path) -> None:
    code, _, data = paired(project, [], ["t0"], "--gate", "regressions")
    assert code == 1 and "paired" not in data["baseline"]
    assert "regressed: t0 @ bot" in " ".join(data["gate"]["reasons"])


def test_verdicts_failed_by_a_critical_rule_are_left_out_and_still_block(project: Path) -> None:
    # t0..t4 regress; t5 passes in the base and breaks the red line in the head: not a pair, and it blocks
    code, _, data = paired(project, [], ["t0", "t1", "t2", "t3"], "--gate", "regressions-paired",
                           head_leak=("t5",))
    assert data["baseline"]["paired"]["b"] == 4  # t5 is left out of b
    assert data["baseline"]["paired"]["p"] == pytest.approx(1 / 16)
    assert code == 1
    assert "critical assertion newly failed: t5 @ bot" in " ".join(data["gate"]["reasons"])
