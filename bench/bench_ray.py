"""Ray benchmark (SPEC §15): throughput of `--executor ray` and the cluster-wide rate limit.

Starts its own clusters on this machine (a head alone, then a head and a second node, as the tests
do) and prints:

- conversations/s of N conversations × 3 turns on a python provider: local, Ray with 1 node, Ray with
  2 nodes (the whole `evalspec run` process, start-up included: connecting, packing the suites,
  starting the workers); `busy`: from the first to the last conversation's reply (steady state, start-up
  left out); the driver's CPU per conversation; and how many conversations each node played;
- the rate held: a provider with `rpm: R` called by every worker of the 2-node cluster; the most calls
  that started in any 60 s window (and in any R/60 s window, scaled) against R.

    python bench/bench_ray.py [--conversations 2000] [-j 64] [--rpm 120] [--rate-calls 150]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from raycluster import LocalCluster  # noqa: E402
from servers import LoopbackServer, Reply  # noqa: E402

BOT = '''
import json, os, time, urllib.request

NODE = os.environ.get("EVALSPEC_TEST_NODE", "driver")

def respond(messages, context):
    if "URL":  # the rate benchmark: tell the recorder when each call starts
        request = urllib.request.Request("URL", json.dumps({"node": NODE}).encode(),
                                         {"content-type": "application/json"})
        urllib.request.urlopen(request, timeout=30).read()
    return "收到：" + messages[-1]["content"] + f" @{NODE}@{time.time():.4f}"
'''

SUITE = """providers:
  - id: bot
    python: bot.py:respond
{limits}
options: {{cache: false}}
tests:
  - id: scale
    repeat: {n}
    conversation:
{turns}
    assert:
      - contains: 收到
        scope: each_turn
"""


class Recorder(LoopbackServer):
    """Records when each call started and which node made it."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, str]] = []
        lock = threading.Lock()

        def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
            with lock:
                self.calls.append((time.monotonic(), str(body.get("node"))))
            return Reply(body={})

        super().__init__(handle)


def run(folder: Path, n: int, turns: int, concurrency: int, limits: str, url: str,
        cluster: LocalCluster | None) -> tuple[float, float]:
    """Wall seconds of the `evalspec run` process and the CPU seconds of the driver (that process)."""
    (folder / "bot.py").write_text(BOT.replace("URL", url), encoding="utf-8")
    lines = "\n".join(f"      - user: 第{i + 1}个问题" for i in range(turns))
    (folder / "bench.yaml").write_text(SUITE.format(n=n, turns=lines, limits=limits), encoding="utf-8")
    command = [sys.executable, "-m", "evalspec", "run", "bench.yaml", "-q", "-j", str(concurrency),
               "-o", "run.json"]
    env = dict(os.environ)
    if cluster is not None:
        command += ["--executor", "ray", "--address", cluster.address]
        env = cluster.env()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if proc.returncode != 0:
        raise SystemExit(f"evalspec run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return wall, cpu


def most_in_window(starts: list[float], window: float) -> int:
    starts = sorted(starts)
    best, j = 0, 0
    for i, s in enumerate(starts):
        while j < len(starts) and starts[j] < s + window:
            j += 1
        best = max(best, j - i)
    return best


def throughput(label: str, n: int, concurrency: int, cluster: LocalCluster | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wall, cpu = run(Path(tmp), n, 3, concurrency, "", "", cluster)
        records = json.loads((Path(tmp) / "run.json").read_text())["results"]
    nodes: dict[str, int] = {}
    times = []
    for record in records:
        node, _, at = record["transcript"][-1]["content"].rpartition(" @")[2].partition("@")
        nodes[node] = nodes.get(node, 0) + 1
        times.append(float(at))
    busy = max(times) - min(times)
    print(f"{label:<22} {n:>7} {wall:>8.2f} {n / wall:>10.0f} {busy:>8.2f} {n / busy:>11.0f} "
          f"{cpu * 1000 / n:>11.2f}  " + ", ".join(f"{k}: {v}" for k, v in sorted(nodes.items())))


def rate(cluster: LocalCluster, calls: int, rpm: float, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, Recorder() as server:
        run(Path(tmp), calls, 1, concurrency, f"    rpm: {rpm:g}", server.url, cluster)
        starts = [t for t, _ in server.calls]
        per_node = {node: sum(1 for _, n in server.calls if n == node) for _, node in server.calls}
    span = max(starts) - min(starts)
    print(f"{calls} one-turn conversations, rpm {rpm:g}, 2 nodes ({', '.join(f'{k}: {v}' for k, v in sorted(per_node.items()))} calls), "
          f"span {span:.1f} s (at rpm {rpm:g} at least {(calls - 1) * 60 / rpm:.1f} s)")
    print(f"  most calls started in any 60 s window: {most_in_window(starts, 60.0)} (rpm {rpm:g})")
    for seconds in (5.0, 10.0, 30.0):
        print(f"  most calls started in any {seconds:g} s window: {most_in_window(starts, seconds)} "
              f"(allowed {rpm * seconds / 60:g})")


def broker_capacity(cluster: LocalCluster, calls: int) -> None:
    """Acquires per second the cluster's limiter answers (a provider with an rpm it never reaches)."""
    code = f"""
import os, time, ray
from evalspec.play.cluster import LimitBroker
ray.init(address={cluster.address!r}, log_to_driver=False)
broker = ray.remote(num_cpus=0, max_concurrency=10_000)(LimitBroker).remote()
ray.get(broker.acquire.remote("warm", 1e9, None))
start = time.perf_counter()
ray.get([broker.acquire.remote("p", 1e9, None) for _ in range({calls})])
print(f"{{{calls} / (time.perf_counter() - start):.0f}}")
"""
    proc = subprocess.run([sys.executable, "-c", code], env=cluster.env(), capture_output=True, text=True, check=True)
    print(f"  the limiter answers {proc.stdout.strip()} acquires/s ({calls} at once, one driver asking)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("-j", "--concurrency", type=int, default=64)
    parser.add_argument("--rpm", type=float, default=120)
    parser.add_argument("--rate-calls", type=int, default=150)
    args = parser.parse_args()
    print(f"{'executor':<22} {'convs':>7} {'wall s':>8} {'convs/s':>10} {'busy s':>8} {'busy c/s':>11} "
          f"{'driver ms/c':>11}  conversations per node")
    throughput("local", args.conversations, args.concurrency, None)
    one = LocalCluster(cpus_per_node=2)
    try:
        one.start(nodes=1)
        throughput("ray, 1 node (2 CPUs)", args.conversations, args.concurrency, one)
    finally:
        one.stop()
    two = LocalCluster(cpus_per_node=1)
    try:
        two.start()
        throughput("ray, 2 nodes (1 CPU)", args.conversations, args.concurrency, two)
        print()
        rate(two, args.rate_calls, args.rpm, args.concurrency)
        broker_capacity(two, 5000)
    finally:
        two.stop()
    print(json.dumps({"load_average": os.getloadavg()}))


if __name__ == "__main__":
    main()
