"""Benchmark: `evalspec diff` of two runs with N verdicts each (3 repeats, 4 transcript messages per record).

Prints the time to compare, to render Markdown / HTML, the peak RSS of this process and the size of the
diff JSON, for a run the size of a large nightly suite.

    python bench/bench_diff.py [--verdicts 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from typing import Any

from evalspec.app.cli.diff import diff_page
from evalspec.reporters.diff import markdown_lines
from evalspec.results.compare import compare_runs


def make_run(n: int, repeats: int, seed: int) -> dict[str, Any]:
    rnd = random.Random(seed)
    results = []
    for i in range(n):
        suite = f"suites/s{i % 20}.yaml"
        status = rnd.choices(["passed", "failed", "error"], [0.85, 0.13, 0.02])[0]
        for k in range(1, repeats + 1):
            transcript = [m for t in (1, 2) for m in (
                {"role": "user", "content": "你好，请问这台车是哪年的？", "turn": t},
                {"role": "assistant", "content": "这台车是 2024 年的。", "turn": t, "latency_ms": rnd.uniform(50, 900),
                 "tokens": 30, "cost": 0.0001})]
            results.append({"suite": suite, "test_id": f"t{i}#{k}", "base_id": f"t{i}", "name": f"test {i}",
                            "provider": f"p{i % 3}", "repeat": k, "repeat_rule": "majority", "status": status,
                            "score": 1.0 if status == "passed" else rnd.random() * 0.5, "draft": False, "xfail": None,
                            "curve": None, "critical_failed": False, "transcript": transcript, "tokens": 60,
                            "cost": 0.0002, "error": "timeout" if status == "error" else None,
                            "assertions": [{"type": "contains", "pass": status == "passed", "reason": "did not find",
                                            "evidence": [{"turn": 2, "text": "x"}]}]})
    return {"run_id": f"r{seed}", "started_at": "2026-11-30T00:00:00+00:00", "results": results, "curves": []}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verdicts", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    base, head = make_run(args.verdicts, args.repeats, 1), make_run(args.verdicts, args.repeats, 2)
    t0 = time.perf_counter()
    diff = compare_runs(base, head)
    t1 = time.perf_counter()
    md = "\n".join(markdown_lines(diff))
    t2 = time.perf_counter()
    page = diff_page(diff)
    t3 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"verdicts per run: {args.verdicts} ({args.verdicts * args.repeats} records)")
    print(f"compare: {t1 - t0:.3f} s · markdown: {t2 - t1:.3f} s ({len(md)} chars) · html: {t3 - t2:.3f} s "
          f"({len(page) / 1e6:.1f} MB)")
    print(f"categories: {json.dumps({k: v for k, v in diff['counts'].items() if v})}")
    print(f"diff JSON: {len(json.dumps(diff)) / 1e6:.1f} MB · peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
