"""Benchmark the SPEC §8 runtime guarantees that are about time and memory; prints figures.

1. slow regexes beside healthy tests: 10 tests whose reply makes `(a|aa)+$` slow, beside 60 healthy
   2-turn tests (loopback OpenAI-compatible server, 50 ms per reply, `timeout: 1`, `-j 70`): how many
   healthy tests errored.
2. grading throughput: 1,000 one-turn tests × 6 deterministic checks, instant bot: tests per second.
3. memory: 3 replies of 50 MB each: peak RSS of the `evalspec run` process and the size of run.json.

    python bench/bench_trust.py            # this checkout
    PYTHONPATH=/path/to/other/checkout python bench/bench_trust.py   # compare with another version
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loopback_server import serving  # bench/: the directory of the script

HERE = Path(__file__).resolve().parent

BOT = '''
def instant(messages, context):
    return "好的，您的订单已经确认，预计明天送达。"

def huge(messages, context):
    return "x" * 50_000_000
'''


def run(folder: Path, suite: str, *args: str) -> tuple[float, dict[str, object], int]:
    (folder / "s.yaml").write_text(suite, encoding="utf-8")
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "-o", "run.json", "-q", "--no-cache",
                           *args], cwd=folder, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if not (folder / "run.json").exists():
        raise SystemExit(f"no run.json (exit {proc.returncode}): {proc.stderr[-800:]}")
    data = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    (folder / "run.json").unlink()
    return elapsed, data, max(rss, before)


def slow_regex(folder: Path) -> None:
    with serving(50) as base:
        slow = "".join(f"  - id: slow{i}\n    conversation:\n      - user: {'a' * 25}b\n"
                       f"        assert: [{{regex: '(a|aa)+$'}}]\n" for i in range(10))
        healthy = "".join(f"  - id: ok{i}\n    conversation:\n      - user: 你好 {i}\n      - user: 再见 {i}\n"
                          f"        assert: [{{contains: 收到}}]\n" for i in range(60))
        provider = (f"providers: [{{id: m, model: openai/m, api_base: '{base}/v1', "
                    "api_key: sk-local-000}]\n")
        elapsed, data, _ = run(folder, provider + "options: {timeout: 1, retries: 0}\ngate: {max_errors: 100}\n"
                               "tests:\n" + slow + healthy, "-j", "70")
    results = data["results"]
    assert isinstance(results, list)
    bad = [r for r in results if r["test_id"].startswith("ok") and r["status"] != "passed"]
    print(f"1. slow regexes: {len(bad)} of 60 healthy tests errored ({bad[0]['error'] if bad else 'none'}); "
          f"wall {elapsed:.1f}s")


def throughput(folder: Path) -> None:
    checks = ("[{contains: 好的}, {not-contains: 退款}, {regex: '明天|后天'}, {icontains: 订单}, "
              "{word-count: {max: 100}}, {not-regex: '\\\\d{6}'}]")
    tests = "".join(f"  - id: t{i}\n    conversation:\n      - user: 订单{i}\n        assert: {checks}\n"
                    for i in range(1000))
    elapsed, data, _ = run(folder, "providers: [{id: p, python: bot.py:instant}]\ntests:\n" + tests, "-j", "50")
    print(f"2. grading throughput: 1000 tests x 6 checks in {elapsed:.1f}s = {1000 / elapsed:.0f} tests/s "
          f"(process start included); exit {data['gate']['exit_code']}")  # type: ignore[index]


def memory(folder: Path) -> None:
    tests = "".join(f"  - id: big{i}\n    conversation:\n      - user: 长一点\n        assert: [{{contains: x}}]\n"
                    for i in range(3))
    elapsed, data, rss = run(folder, "providers: [{id: p, python: bot.py:huge}]\ntests:\n" + tests)
    size = len(json.dumps(data, ensure_ascii=False))
    print(f"3. three 50 MB replies: peak RSS {rss / 1024:.0f} MB, run.json {size / 1e6:.1f} MB, wall {elapsed:.1f}s")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bot.py").write_text(BOT, encoding="utf-8")
        print(f"evalspec from {os.environ.get('PYTHONPATH') or 'this checkout'}")
        slow_regex(folder)
        throughput(folder)
        memory(folder)


if __name__ == "__main__":
    main()
