"""100,000 recorded conversations graded by a suite's rules: wall time and peak memory (SPEC §19: < 300 MB).

    python bench/bench_recorded.py [N]

Writes N conversations (default 100,000; 3 to 6 turns each, some leaking a phone number or inviting
early) as JSONL under /tmp, a suite with `transcripts:`, `labels:` and session rules beside it, then runs
`evalspec run` on it in a child process and reports its wall time and peak RSS (ru_maxrss of the child).
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = """\
description: bench recorded
transcripts:
  path: logs.jsonl
labels:
  purchase_signal: 分期|首付|贷款
defaults:
  assert:
    - not-regex: "1[3-9]\\\\d{9}"
      scope: each_turn
      severity: critical
    - not-before: {pattern: 到店|预约|试驾, turn: purchase_signal}
    - at-most: {pattern: 预约|试驾, count: 1}
"""


def write(folder: Path, n: int) -> None:
    rng = random.Random(1)
    users = ["这车多少钱", "有现车吗", "能分期吗", "首付多少", "保养贵吗", "好的谢谢"]
    replies = ["二十万左右", "有的", "可以，首付两成", "欢迎到店试驾", "不客气"]
    with (folder / "logs.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            messages = []
            for _ in range(rng.randint(3, 6)):
                reply = "我的电话13812345678" if rng.random() < 0.01 else rng.choice(replies)
                messages += [{"role": "user", "content": rng.choice(users)},
                             {"role": "assistant", "content": reply + "。" * rng.randint(0, 40)}]
            fh.write(json.dumps({"id": f"c{i:06d}", "messages": messages, "metadata": {"channel": "web"}},
                                ensure_ascii=False) + "\n")
    (folder / "rules.yaml").write_text(SUITE, encoding="utf-8")


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    folder = Path(tempfile.mkdtemp(prefix="bench-recorded-"))
    write(folder, n)
    size = (folder / "logs.jsonl").stat().st_size
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "evalspec", "run", "rules.yaml", "-q", "--processes", "1",
                           "-o", "run.json"], cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{n:,} recorded conversations ({size / 1e6:.0f} MB of JSONL) in {folder}")
    print(f"exit {done.returncode} · wall {wall:.1f} s · peak RSS {peak_mb:.0f} MB")
    for line in (done.stdout.strip().splitlines()[-3:] if done.stdout.strip() else done.stderr.splitlines()[-5:]):
        print("  " + (line if len(line) < 200 else line[:200] + "…"))
    return 0 if done.returncode in (0, 1) and peak_mb < 300 else 1


if __name__ == "__main__":
    sys.exit(main())
