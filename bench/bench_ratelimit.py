"""Benchmark (SPEC §23): 60 conversations × 5 turns at -j 100 against a loopback OpenAI-compatible server
that allows 20 requests a second (a token bucket 20 deep) and answers 429 beyond, once without and once
with `Retry-After`. The ideal is calls / rate = 300 / 20 = 15 s; SPEC §23 asks for no errors within 1.3×.

Prints, per case: wall time, errored conversations, the 429s the server sent and `summary.rate_limited`.

    python bench/bench_ratelimit.py [--conversations 60] [--turns 5] [--jobs 100] [--rps 20] [--latency-ms 50]
                                    [--cases plain retry-after]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_run import timed_run, write_suite  # noqa: E402
from loopback_server import serving  # noqa: E402


def server_stats(base: str) -> dict[str, int]:
    with urllib.request.urlopen(base + "/stats") as response:
        return {k: int(v) for k, v in json.loads(response.read()).items()}


def run_case(args: argparse.Namespace, retry_after: bool) -> dict[str, object]:
    with serving(args.latency_ms, 0, args.rps, retry_after) as base, tempfile.TemporaryDirectory() as tmp:
        time.sleep(1.0)  # the bucket starts full, as a quota unused for a second is
        work = Path(tmp)
        write_suite(work / "bench.yaml", base, "model", args.client, args.conversations, args.turns)
        text = (work / "bench.yaml").read_text(encoding="utf-8")
        (work / "bench.yaml").write_text("options: {cache: false}\n" + text, encoding="utf-8")
        figures = timed_run([sys.executable, "-m", "evalspec", "run", "bench.yaml", "-j", str(args.jobs), "-q",
                             "-o", "run.json"], work)
        stats = server_stats(base)
        data = json.loads((work / "run.json").read_text(encoding="utf-8"))
        summary = data["summary"]
        return {"wall": figures["wall"], "rc": figures["rc"], "errors": summary["by_status"]["error"],
                "calls": stats["calls"], "429s": stats["limited"], "retries": summary.get("retries", 0),
                "rate_limited": summary.get("rate_limited"),
                "first_error": next((r.get("error") for r in data["results"] if r.get("error")), None)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", default="lean", choices=["lean", "litellm", "auto"])
    parser.add_argument("--conversations", type=int, default=60)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--rps", type=float, default=20)
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--cases", nargs="+", default=["plain", "retry-after"], choices=["plain", "retry-after"])
    args = parser.parse_args()
    calls = args.conversations * args.turns
    ideal = calls / args.rps
    print(f"job: {args.conversations} conversations x {args.turns} turns, -j {args.jobs}, server {args.rps:g} req/s "
          f"(429 beyond), {args.latency_ms:g} ms latency; ideal {calls} / {args.rps:g} = {ideal:.1f} s "
          f"(1.3x: {1.3 * ideal:.1f} s)")
    print(f"{'case':<12} {'wall s':>7} {'x ideal':>8} {'errors':>7} {'answered':>9} {'429s':>6} {'retries':>8} "
          f"{'exit':>4}  summary.rate_limited")
    for case in args.cases:
        r = run_case(args, retry_after=case == "retry-after")
        print(f"{case:<12} {r['wall']:>7.2f} {float(r['wall']) / ideal:>8.2f} {r['errors']:>7} {r['calls']:>9} "
              f"{r['429s']:>6} {r['retries']:>8} {int(float(str(r['rc']))):>4}  {json.dumps(r['rate_limited'])}")
        if r["first_error"]:
            print(f"  first error: {r['first_error']}")


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    main()
