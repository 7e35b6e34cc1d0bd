"""What `javascript` checks cost: wall time of grading 100 of them, beside 100 `python` and `contains` checks.

    python bench/bench_javascript.py [-n 100]

Two layouts, each graded through `assertions.grade.grade` as a run grades (deterministic checks off the
event loop): one conversation holding n checks, and n conversations of one check each graded at once.
`cold` is the first javascript check of the process (it starts node); the other figures are the least
of 3 runs with node already started (wall time: node's work is in another process).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHECKS = {
    "javascript": "javascript: \"output.includes('续航') && output.length < 500\"",
    "javascript file": "javascript: file://checks.js:range",
    "python": "python: checks.py:range",
    "contains": "contains: 续航",
}
JS = "module.exports.range = (output, context) => output.includes('续航') && output.length < 500;\n"
PY = "def range(output, context):\n    return '续航' in output and len(output) < 500\n"
REPLY = "瑶光的续航是 620 公里，支持分期，详情请在 App 里预约顾问。"


def given(folder: Path, item: str, n: int) -> Any:
    import yaml

    from evalspec.assertions.grade import GradingInput
    from evalspec.config.asserts import parse_assertion
    from evalspec.config.paths import LineMap

    spec = parse_assertion(yaml.safe_load(item), (), LineMap("<bench>"), [], None)
    return GradingInput("t", [spec] * n, {}, {}, folder)


def transcript() -> list[dict[str, Any]]:
    return [{"role": "user", "content": "续航多少？", "turn": 1},
            {"role": "assistant", "content": REPLY, "turn": 1, "latency_ms": 10.0, "tokens": 5, "cost": 0.0}]


def wall(fn: Any, item: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        fn(item)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=100)
    n = parser.parse_args().n
    if shutil.which("node") is None:
        print("node is not installed: nothing to measure", file=sys.stderr)
        return 1
    from evalspec.assertions.grade import grade

    folder = Path(tempfile.mkdtemp(prefix="bench-js-"))
    (folder / "checks.js").write_text(JS, encoding="utf-8")
    (folder / "checks.py").write_text(PY, encoding="utf-8")
    said = transcript()

    def one_conversation(item: str) -> None:
        results = asyncio.run(grade(given(folder, item, n), said))
        assert all(r.passed for r in results), results[0]

    def many_conversations(item: str) -> None:
        one = given(folder, item, 1)

        async def all_at_once() -> list[Any]:
            return await asyncio.gather(*(grade(one, said) for _ in range(n)))

        assert all(r.passed for rs in asyncio.run(all_at_once()) for r in rs)

    start = time.perf_counter()
    asyncio.run(grade(given(folder, CHECKS["javascript"], 1), said))
    print(f"cold: the first javascript check (node starts) {1000 * (time.perf_counter() - start):.0f} ms")
    print(f"{n} checks, wall ms      one conversation   {n} conversations")
    for name, item in CHECKS.items():
        print(f"  {name:16} {1000 * wall(one_conversation, item):12.1f} "
              f"{1000 * wall(many_conversations, item):18.1f}")
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
