"""Turns per second of `evalspec run` on a python echo provider (docs/en/scale-and-ray.md), and start-up.

    python bench/bench_turns.py [--sizes 10000] [-j 64] [--processes N] [--cache] [--startup] [--ray 100000,1000000]

- for each size: a `dataset:` test of N JSONL rows × 3 templated turns on a python echo bot (the suite of
  bench_scale.py), played by `evalspec run` in a child process: wall, turns/s, the CPU time of the run
  and every process it started, turns per CPU second (the steadier figure on a shared machine: the
  target of 10,000 turns/s on 2 cores is 5,000 turns per CPU second with both cores busy), peak RSS;
- `--cache`: each size again with `cache: true` (the suites' default), the cache cold;
- `--startup`: CPU and wall (the median of 5) of `evalspec --version`, `evalspec --help` and a run of one
  three-turn conversation, with evalspec's bytecode written first;
- `--ray N,...`: the same dataset run with `--executor ray` on a one-node local cluster this bench starts
  (`ray start --head`, as the tests do) and stops; the peak RSS is the driver's (the `evalspec run`
  process: Ray's workers are the raylet's children, not the driver's); a second row, `ray workers`,
  gives the largest peak RSS of a conversation worker (sampled while the run plays); with two sizes or
  more, the slope of each (MB per 1,000 conversations: flat is the goal, docs/en/scale-and-ray.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_scale import PEAKS, compile_package, measured, slopes, write_dataset  # noqa: E402


def row(label: str, n: int, f: dict[str, float], turns: int | None) -> None:
    PEAKS.setdefault(label, {})[n] = f["rss_mb"]
    rate = f"{turns / f['wall']:>9.0f}" if turns else f"{'':>9}"
    per_cpu = f"{turns / f['cpu']:>9.0f}" if turns and f["cpu"] else f"{'':>9}"
    print(f"{label:<16} {n:>9} {f['wall']:>8.2f} {rate} {f['cpu']:>7.2f} {per_cpu} {f['rss_mb']:>12.0f} "
          f"{int(f['rc']):>3}", flush=True)


def header() -> None:
    print(f"{'command':<16} {'convs':>9} {'wall s':>8} {'turns/s':>9} {'cpu s':>7} {'turns/cpu':>9} "
          f"{'peak RSS MB':>12} {'rc':>3}", flush=True)


class WorkerPeak(threading.Thread):
    """The largest peak RSS (MB) of any conversation worker among `pids()` (a cluster's processes) while
    it runs: each worker's VmHWM, read every 0.2 s (the workers end with the run)."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        super().__init__(daemon=True)
        self.pids, self.peak_mb, self.done = pids, 0.0, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            for pid in self.pids():
                try:
                    if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::ConversationWorker"):
                        continue
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_mb = max(self.peak_mb, int(line.split()[1]) / 1024)

    def __enter__(self) -> WorkerPeak:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.join()


def turns(n: int, concurrency: int, processes: int | None, address: str | None = None, cache: bool = False,
          workers: Callable[[], list[int]] | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_dataset(folder, n)
        if cache:  # the default of a suite: every call a miss written to the cache (a cold cache)
            suite = folder / "s.yaml"
            suite.write_text(suite.read_text(encoding="utf-8").replace("{cache: false}", "{cache: true}"),
                             encoding="utf-8")
        run = ["run", "s.yaml", "-q", "-j", str(concurrency), "-o", "run.json"]
        if processes is not None:
            run += ["--processes", str(processes)]
        if address is not None:
            run += ["--executor", "ray", "--address", address]
        if workers is None:
            row("ray run" if address else "run, cold cache" if cache else "run", n, measured(run, folder), 3 * n)
            return
        with WorkerPeak(workers) as peak:
            figures = measured(run, folder)
        row("ray run", n, figures, 3 * n)
        row("ray workers", n, {**figures, "rss_mb": peak.peak_mb}, None)


def startup() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_dataset(folder, 1)
        for label, args in (("--version", ["--version"]), ("--help", ["--help"]),
                            ("run (1 × 3)", ["run", "s.yaml", "-q", "-o", "run.json"])):
            runs = [measured(args, folder) for _ in range(5)]
            print(f"{label:<16} wall {statistics.median(f['wall'] for f in runs):.3f} s · "
                  f"cpu {statistics.median(f['cpu'] for f in runs):.3f} s · "
                  f"peak RSS {statistics.median(f['rss_mb'] for f in runs):.0f} MB", flush=True)


def on_ray(sizes: list[int], concurrency: int) -> None:
    from raycluster import RAY_ENV, LocalCluster

    os.environ.update(RAY_ENV)  # the driver joins as the tests' drivers do
    cluster = LocalCluster(cpus_per_node=2).start(nodes=1)
    try:
        for n in sizes:
            turns(n, concurrency, None, cluster.address, workers=cluster.pids)
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000", help="comma-separated numbers of conversations (0: none)")
    parser.add_argument("-j", "--concurrency", type=int, default=64)
    parser.add_argument("--processes", type=int, default=None)
    parser.add_argument("--cache", action="store_true", help="also each size with the cache on (cold)")
    parser.add_argument("--startup", action="store_true", help="also time --version, --help and a tiny run")
    parser.add_argument("--ray", default="", help="comma-separated sizes to run on a local Ray cluster")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip() and int(s.replace("_", ""))]
    compile_package()
    if args.startup:
        startup()
    header()
    for n in sizes:
        turns(n, args.concurrency, args.processes)
        if args.cache:
            turns(n, args.concurrency, args.processes, cache=True)
    if args.ray:
        on_ray([int(s.replace("_", "")) for s in args.ray.split(",") if s.strip()], args.concurrency)
    slopes()


if __name__ == "__main__":
    main()
