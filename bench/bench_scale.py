"""Scale benchmark (SPEC §15): N conversations × 3 turns on a python provider, the whole `evalspec run` process.

Prints, per size: wall time, turns/s (turns / wall, start-up included), CPU time and peak RSS.

    python bench/bench_scale.py [--sizes 1000 10000 100000] [-j 64] [--processes N] [--profile FILE]

evalspec's bytecode is written first (as `pip install` does), so start-up reads .pyc files.
`cpu s` is the CPU time of the run and every process it started (the steadier figure on a shared
machine). `--processes 1` plays everything in the one process (the default lets evalspec fork one
player per core for a large run). `--profile FILE` runs the first size under cProfile (the parent
process only) and writes the top entries (cumulative) to FILE.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

BOT = '''
def respond(messages, context):
    return "收到：" + messages[-1]["content"]
'''

SUITE = """providers:
  - id: bot
    python: bot.py:respond
options: {{cache: false}}
tests:
  - id: scale
    repeat: {n}
    conversation:
      - user: 你好，我想看看瑶光
      - user: 续航多少？
      - user: 能分期吗？
    assert:
      - contains: 收到
        scope: each_turn
      - not-regex: "1[3-9]\\\\d{{9}}"
        scope: each_turn
        severity: critical
"""


def measure(n: int, concurrency: int, profile: Path | None, processes: int | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bot.py").write_text(BOT, encoding="utf-8")
        (folder / "scale.yaml").write_text(SUITE.format(n=n), encoding="utf-8")
        run = ["-m", "evalspec", "run", "scale.yaml", "-q", "-j", str(concurrency), "-o", "run.json"]
        if processes is not None:
            run += ["--processes", str(processes)]
        if profile is not None:
            run = ["-m", "cProfile", "-o", str(folder / "prof.out"), *run]
        script = ("import resource, subprocess, sys, time, json\n"
                  "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
                  "wall = time.perf_counter() - t\n"
                  "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
                  "print(json.dumps({'wall': wall, 'cpu': u.ru_utime + u.ru_stime, 'rss_mb': u.ru_maxrss / 1024,"
                  " 'rc': p.returncode}))")
        out = subprocess.run([sys.executable, "-c", script, sys.executable, *run], cwd=folder,
                             capture_output=True, text=True, check=True)
        figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
        if profile is not None:
            import pstats

            with profile.open("w") as fh:
                pstats.Stats(str(folder / "prof.out"), stream=fh).sort_stats("cumulative").print_stats(40)
        return figures


def compile_package() -> None:
    """Write evalspec's bytecode first, as `pip install` does: start-up then reads .pyc files like an
    installed evalspec's (an editable install under PYTHONDONTWRITEBYTECODE would compile every module
    on every run)."""
    import compileall

    import evalspec

    compileall.compile_dir(str(Path(evalspec.__file__).parent), quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("-j", "--concurrency", type=int, default=64)
    parser.add_argument("--processes", type=int, default=None)
    parser.add_argument("--profile", type=Path, default=None)
    args = parser.parse_args()
    compile_package()
    print(f"{'conversations':>13} {'turns':>7} {'wall s':>8} {'turns/s':>9} {'cpu s':>7} {'peak RSS MB':>12} {'rc':>3}")
    for i, n in enumerate(args.sizes):
        f = measure(n, args.concurrency, args.profile if i == 0 else None, args.processes)
        turns = 3 * n
        print(f"{n:>13} {turns:>7} {f['wall']:>8.2f} {turns / f['wall']:>9.0f} {f['cpu']:>7.2f} "
              f"{f['rss_mb']:>12.0f} {int(f['rc']):>3}")


if __name__ == "__main__":
    main()
