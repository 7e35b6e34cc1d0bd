"""A large run does not hold every transcript: peak RSS grows far slower than the run (SPEC §15)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BOT = 'def respond(messages, context):\n    return "收到：" + messages[-1]["content"] * 20\n'
SUITE = """providers: [{{id: bot, python: bot.py:respond}}]
options: {{cache: false}}
tests:
  - id: scale
    repeat: {n}
    conversation: [{{user: 你好，我想看看瑶光}}, {{user: 续航多少？}}, {{user: 能分期吗？}}]
    assert: [{{contains: 收到, scope: each_turn}}]
"""
MEASURE = ("import resource, subprocess, sys\n"
           "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
           "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def peak_rss_kb(folder: Path, n: int) -> int:
    (folder / "bot.py").write_text(BOT, encoding="utf-8")
    (folder / f"s{n}.yaml").write_text(SUITE.format(n=n), encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "evalspec", "run", f"s{n}.yaml",
                          "-q", "-j", "64", "-o", f"r{n}.json"], cwd=folder, capture_output=True, text=True,
                         timeout=600, check=True)
    code, rss = out.stdout.split()
    assert code == "0"
    records = [json.loads(line.rstrip(",")) for line in (folder / f"r{n}.json").read_text(encoding="utf-8").splitlines()
               if line.startswith('{"key"')]
    assert len(records) == n and all(len(r["transcript"]) == 6 for r in records)  # run.json is complete
    return int(rss)


def test_peak_memory_grows_far_slower_than_the_number_of_conversations(tmp_path: Path) -> None:
    small, large = peak_rss_kb(tmp_path, 500), peak_rss_kb(tmp_path, 10500)  # 10,000 apart: ±1 MB is 0.1 KB each
    per_conversation_kb = (large - small) / 10000
    # holding every record (transcript and all) cost ~33 KB a conversation, the eager plan ~4 KB; what is
    # left is a light record and a journal offset per conversation (~1.5 KB measured)
    assert per_conversation_kb < 4, f"{small} KB → {large} KB: {per_conversation_kb:.1f} KB per conversation"
