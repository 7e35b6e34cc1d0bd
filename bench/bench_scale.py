"""Scale benchmark (docs/en/scale-and-ray.md): N three-turn conversations on one machine, each command a
child process whose peak RSS (ru_maxrss of the child and its children) and wall time are measured.

Per size it runs
  - `dataset`: `evalspec run` of a `dataset:` test (N JSONL rows, three templated turns) on a python echo
    provider, then `evalspec grade` and `evalspec report --html --md` of that run;
  - `recorded`: `evalspec run` of a suite whose `transcripts:` are N recorded three-turn conversations,
    then `grade` and `report` of that run;
and, once, the small-run ratio: 100 conversations × 5 turns against a loopback HTTP bot answering in
50 ms, against the ideal 5 × 50 ms + the time `evalspec --version` takes — and the same calls made by
bare scripts with no checks and no run.json (bench/small_floor.py), one per HTTP client: the floor each
client puts under the ratio.

    python bench/bench_scale.py [--sizes 10000,100000] [-j 64] [--processes N] [--only dataset,recorded,small]

turns/s is turns / wall (start-up included). `cpu s` is the CPU time of the command and every process it
started (the steadier figure on a shared machine). evalspec's bytecode is written first, as `pip install`
does. The files of the largest size are kept under --keep DIR when given.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from loopback_server import serving  # bench/: the directory of the script

BOT = '''
def respond(messages, context):
    return "收到：" + messages[-1]["content"]
'''

RULES = """\
    assert:
      - contains: 收到
        scope: each_turn
      - not-regex: "1[3-9]\\\\d{9}"
        scope: each_turn
        severity: critical
"""

DATASET_SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
options: {cache: false}
tests:
  - id: scale
    dataset: rows.jsonl
    conversation:
      - user: "{{ question }}"
      - user: "{{ follow_up }}"
      - user: 能分期吗？
""" + RULES

RECORDED_SUITE = """\
transcripts:
  path: logs.jsonl
defaults:
  assert:
    - contains: 收到
      scope: each_turn
    - not-regex: "1[3-9]\\\\d{9}"
      scope: each_turn
      severity: critical
"""

SMALL_SUITE = """\
providers:
  - id: bot
    http: {{url: "{base}/bot", response: reply}}
options: {{cache: false, concurrency: 100}}
tests:
  - id: small
    repeat: 100
    conversation:
      - user: 你好
      - user: 续航多少？
      - user: 能分期吗？
      - user: 首付多少？
      - user: 好的，谢谢
"""

MEASURE = ("import resource, subprocess, sys, time, json\n"
           "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
           "wall = time.perf_counter() - t\n"
           "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "print(json.dumps({'wall': wall, 'cpu': u.ru_utime + u.ru_stime, 'rss_mb': u.ru_maxrss / 1024,"
           " 'rc': p.returncode}))")


def measured(args: list[str], cwd: Path) -> dict[str, float]:
    """`python -m evalspec ARGS` in a child: wall, cpu, peak RSS (MB) and exit code."""
    return measured_command([sys.executable, "-m", "evalspec", *args], cwd)


def measured_command(command: list[str], cwd: Path) -> dict[str, float]:
    """COMMAND in a child: wall, cpu, peak RSS (MB) and exit code."""
    out = subprocess.run([sys.executable, "-c", MEASURE, *command], cwd=cwd,
                         capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def write_dataset(folder: Path, n: int) -> None:
    (folder / "bot.py").write_text(BOT, encoding="utf-8")
    (folder / "s.yaml").write_text(DATASET_SUITE, encoding="utf-8")
    with (folder / "rows.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"question": f"你好，我想看看瑶光（{i}）", "follow_up": "续航多少？"},
                                ensure_ascii=False) + "\n")


def write_recorded(folder: Path, n: int) -> None:
    (folder / "s.yaml").write_text(RECORDED_SUITE, encoding="utf-8")
    with (folder / "logs.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            messages = []
            for text in (f"你好，我想看看瑶光（{i}）", "续航多少？", "能分期吗？"):
                messages += [{"role": "user", "content": text}, {"role": "assistant", "content": "收到：" + text}]
            fh.write(json.dumps({"id": f"c{i}", "messages": messages}, ensure_ascii=False) + "\n")


PEAKS: dict[str, dict[int, float]] = {}  # command -> size -> peak RSS MB, for the slopes


def row(label: str, n: int, f: dict[str, float], turns: int | None) -> None:
    PEAKS.setdefault(label, {})[n] = f["rss_mb"]
    rate = f"{turns / f['wall']:>9.0f}" if turns else f"{'':>9}"
    print(f"{label:<18} {n:>9} {f['wall']:>8.2f} {rate} {f['cpu']:>7.2f} {f['rss_mb']:>12.0f} {int(f['rc']):>3}",
          flush=True)


def scale(kind: str, n: int, concurrency: int, processes: int | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (write_dataset if kind == "dataset" else write_recorded)(folder, n)
        run = ["run", "s.yaml", "-q", "-j", str(concurrency), "-o", "run.json"]
        if processes is not None:
            run += ["--processes", str(processes)]
        row(f"{kind} run", n, measured(run, folder), 3 * n)
        row(f"{kind} grade", n, measured(["grade", "run.json", "-o", "graded.json"], folder), 3 * n)
        row(f"{kind} report", n, measured(["report", "run.json", "--html", "r.html", "--md", "r.md"], folder), None)
        row(f"{kind} diff", n, measured(["diff", "run.json", "graded.json", "-o", "diff.json"], folder), None)


FLOORS = {"streams": "HTTP written by hand on asyncio streams", "aiohttp": "aiohttp alone",
          "httpx": "httpx over aiohttp, evalspec's client"}  # bench/small_floor.py


def small_run() -> None:
    """100 conversations × 5 turns against a bot answering in 50 ms: wall / (5 × 50 ms + version time).

    The bot is bench/loopback_server.py (aiohttp) in a process of its own, as a real bot's server is: a
    threaded server inside this process measured itself (100 threads sharing this GIL answer a wave of
    100 calls in ~90 ms, so even a bare asyncio client took 0.46 s for 5 waves of 50 ms)."""
    with serving(50) as base, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "s.yaml").write_text(SMALL_SUITE.format(base=base), encoding="utf-8")
        version = min(measured(["--version"], folder)["wall"] for _ in range(3))
        f = measured(["run", "s.yaml", "-q", "-j", "100", "-o", "run.json"], folder)
        floors = {kind: measured_command([sys.executable, str(Path(__file__).parent / "small_floor.py"), kind,
                                          f"{base}/bot"], folder) for kind in FLOORS}
    ideal = 5 * 0.05 + version
    print(f"small run: 100 × 5 turns, 50 ms replies: {f['wall']:.2f} s; ideal {ideal:.2f} s "
          f"(5 × 50 ms + --version {version:.2f} s); ratio {f['wall'] / ideal:.2f} (target ≤ 1.5); rc {int(f['rc'])}")
    for kind, what in FLOORS.items():
        print(f"  the same calls, bare ({what}): {floors[kind]['wall']:.2f} s; ratio "
              f"{floors[kind]['wall'] / ideal:.2f}; rc {int(floors[kind]['rc'])}")


def compile_package() -> None:
    """Write evalspec's bytecode first, as `pip install` does: start-up then reads .pyc files like an
    installed evalspec's (an editable install under PYTHONDONTWRITEBYTECODE would compile every module
    on every run)."""
    import compileall

    import evalspec

    compileall.compile_dir(str(Path(evalspec.__file__).parent), quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000",
                        help="comma-separated numbers of conversations (default 10000,100000,1000000)")
    parser.add_argument("--only", default="dataset,recorded,small", help="which of dataset,recorded,small")
    parser.add_argument("-j", "--concurrency", type=int, default=64)
    parser.add_argument("--processes", type=int, default=None)
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    only = {s.strip() for s in args.only.split(",")}
    compile_package()
    if "small" in only:
        small_run()
    print(f"{'command':<18} {'convs':>9} {'wall s':>8} {'turns/s':>9} {'cpu s':>7} {'peak RSS MB':>12} {'rc':>3}",
          flush=True)
    for n in sizes:
        for kind in ("dataset", "recorded"):
            if kind in only:
                scale(kind, n, args.concurrency, args.processes)
    slopes()


def slopes() -> None:
    """Per command, the peak RSS added per 1,000 conversations between the two largest sizes, and whether
    the largest stays within 30 MB of the one before (the target: memory that does not grow)."""
    for label, peaks in PEAKS.items():
        if len(peaks) < 2:
            continue
        (small, low), (large, high) = sorted(peaks.items())[-2:]
        per = (high - low) / (large - small) * 1000
        verdict = "within 30 MB" if high - low <= 30 else "more than 30 MB"
        print(f"slope {label:<18} {per:>7.2f} MB per 1,000 conversations ({small:,} → {large:,}: "
              f"{low:.0f} → {high:.0f} MB, {verdict}; at this slope 1M would peak near "
              f"{high + per * (1_000_000 - large) / 1000:,.0f} MB)", flush=True)


if __name__ == "__main__":
    main()
