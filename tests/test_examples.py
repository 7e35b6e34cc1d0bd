"""The example suites (which need a model or a server) validate offline, and stop before any call
with a message naming the missing setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_validates(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-example-not-used")  # validate checks a key is there, as run does
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output


def test_model_examples_need_a_key_and_say_so(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name, missing in (("simulated_users.yaml", "simulator 'simulator'"), ("context_strategies.yaml", "provider 'window-4'")):
        result = CliRunner().invoke(main, ["run", str(ROOT / "examples" / name)])
        assert result.exit_code == 2, result.output
        assert missing in result.output and "OPENAI_API_KEY" in result.output


def test_the_world_example_runs_offline_and_fails_the_agents_that_claim_or_skip(in_tmp: Path) -> None:
    """examples/world: the solver passes all ten tasks, the claimer fails said-vs-did at its claiming
    turn, the agent that skips its last write fails world-matches naming the path (exit 1, as its README says)."""
    import json

    result = CliRunner().invoke(main, ["run", str(ROOT / "examples" / "world" / "dealer.yaml"), "--no-cache",
                                       "-o", "run.json"])
    assert result.exit_code == 1, result.output
    records = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))["results"]
    status = {(r["test_id"], r["provider"]): r for r in records}
    assert len(records) == 30
    assert all(r["status"] == "passed" for r in records if r["provider"] == "solver")
    said = next(a for a in status["book-saturday", "claimer"]["assertions"] if a["type"] == "said-vs-did")
    assert said["reason"] == "turn 1 says 已为您预约 but book_visit was never called"
    assert said["reason_zh"] == "第 1 轮说“已为您预约”，但从未调用 book_visit"
    matches = next(a for a in status["book-and-order-in-one-turn", "skipper"]["assertions"]
                   if a["type"] == "world-matches")
    assert matches["pass"] is False and matches["details"]["paths"] == ["inventory[2].stock", "orders"]
    assert matches["reason_zh"] == "最终的世界状态在 inventory[2].stock, orders 与预期不同"
    assert status["financing-then-booking", "claimer"]["status"] == "failed"


def test_the_world_bench_grades_on_the_world_with_built_in_checks_only(in_tmp: Path) -> None:
    """bench/world: 24 tasks, several tool calls per turn; the honest agent passes every one, the one
    that claims what it could not do fails said-vs-did on the six tasks where a part or a slot was missing."""
    import json

    result = CliRunner().invoke(main, ["run", str(ROOT / "bench" / "world" / "repair.yaml"), "--no-cache",
                                       "-o", "run.json"])
    assert result.exit_code == 1, result.output
    records = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))["results"]
    assert len({r["test_id"] for r in records}) == 24
    assert all(r["status"] == "passed" for r in records if r["provider"] == "solve")
    failed = [r for r in records if r["provider"] == "overclaim" and r["status"] == "failed"]
    assert len(failed) == 6
    assert max(len(m.get("rounds") or []) for r in records for m in r["transcript"]) >= 4  # 3+ tool rounds a turn
