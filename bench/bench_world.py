"""Benchmark: the world the bot acts on (docs/en/world.md).

Runs bench/world/repair.yaml — 24 τ-bench-style tasks of an invented appliance-repair service, several
tool calls per turn, graded only by evalspec's built-in checks on the world each conversation leaves
behind — and examples/world/dealer.yaml, then prints per agent the pass rate, the tool calls and rounds,
the errored calls, and the time.

    python bench/bench_world.py [--repeat 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions

ROOT = Path(__file__).resolve().parents[1]
SUITES = [ROOT / "bench" / "world" / "repair.yaml", ROOT / "examples" / "world" / "dealer.yaml"]


def figures(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    by: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    for r in records:
        f = by[r["provider"]]
        f["conversations"] += 1
        f["passed"] += r["status"] == "passed"
        f["said_vs_did_failed"] += any(a["type"] == "said-vs-did" and a["pass"] is False for a in r["assertions"])
        f["world_failed"] += any(a["type"].startswith("world") and a["pass"] is False for a in r["assertions"])
        tool = [m for m in r["transcript"] if m["role"] == "tool"]
        f["tool_calls"] += len(tool)
        f["errored_calls"] += sum(1 for m in tool if m.get("error"))
        replies = [m for m in r["transcript"] if m["role"] == "assistant" and not m.get("intermediate")]
        for m in replies:
            rounds = len(m.get("rounds") or [None]) - 1 if m.get("rounds") else 0
            f["turns"] += 1
            f["rounds"] += rounds
            f["max_rounds"] = max(f["max_rounds"], rounds)
    return by


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    for suite in SUITES:
        with tempfile.TemporaryDirectory() as folder:
            options = RunOptions(run_dir=Path(folder) / "run", use_cache=False)
            start = time.perf_counter()
            for _ in range(args.repeat):
                result = run([suite], options=options)
            seconds = (time.perf_counter() - start) / args.repeat
        records = list(result.data["results"])
        tests = len({r["test_id"] for r in records})
        print(f"{suite.relative_to(ROOT)}: {tests} tasks, {len(records)} conversations, {seconds:.2f}s "
              f"({len(records) / seconds:.0f} conversations/s)")
        for provider, f in figures(records).items():
            print(f"  {provider:10} passed {f['passed']}/{f['conversations']} "
                  f"({100 * f['passed'] / f['conversations']:.0f}%) · said-vs-did failed {f['said_vs_did_failed']} · "
                  f"world checks failed {f['world_failed']} · tool calls {f['tool_calls']} "
                  f"({f['tool_calls'] / f['turns']:.1f} per turn, {f['errored_calls']} errored) · "
                  f"rounds per turn {f['rounds'] / f['turns']:.1f} (max {f['max_rounds']})")


if __name__ == "__main__":
    main()
