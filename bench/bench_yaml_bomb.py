"""Benchmark: `evalspec validate` on a 1 KB YAML alias bomb (9 levels × 9 aliases).

Prints the file size, the exit code, the first error line, wall time and peak RSS of the process.

    python bench/bench_yaml_bomb.py [--levels 9] [--width 9]
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def bomb(levels: int, width: int) -> str:
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    lines += ["providers: [{id: bot, python: 'bot.py:respond'}]",
              f"tests: [{{id: t, conversation: [{{user: hi}}], vars: {{x: *a{levels - 1}}}}}]"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", type=int, default=9)
    parser.add_argument("--width", type=int, default=9)
    args = parser.parse_args()
    text = bomb(args.levels, args.width)
    from evalspec.config.yamlfile import load_yaml
    from evalspec.core.errors import ConfigError

    start = time.perf_counter()
    with contextlib.suppress(ConfigError):
        load_yaml(text, "bomb.yaml")
    parse_ms = (time.perf_counter() - start) * 1000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bomb.yaml"
        path.write_text(text, encoding="utf-8")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "evalspec", "validate", str(path)], capture_output=True,
                              text=True, timeout=600)
        wall = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    first = (proc.stdout + proc.stderr).strip().splitlines()[0]
    print(f"file: {len(text.encode())} bytes, {args.levels} levels x {args.width}")
    print(f"load_yaml in process: {parse_ms:.1f} ms")
    print(f"exit code: {proc.returncode}")
    print(f"first line: {first}")
    print(f"evalspec validate: wall {wall:.2f} s (process start included), peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
