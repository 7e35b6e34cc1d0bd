"""Per-conversation CPU of grading, building the record and redaction, in process; prints µs per conversation.

Each conversation of two suites is played once (a python bot), then timed on its recorded transcript:
`grade(grading_input(instance), ...)`, `make_record(...)`, and `redact(record, secrets)` with no secret
and with three (what the runner does with every record). `scale` is bench_scale's suite (per-turn
`contains` and `not-regex`); `mix` adds turn-attached checks, `regex`, `contains-any`, `icontains`,
`is-json`, `starts-with`, `word-count` and session rules (`not-before`, `within`, `at-most`,
`not-after`, `turn-count`).

    python bench/bench_grading.py [-n 2000]
    python bench/bench_grading.py --records FILE     # the example suites' records (timings and ids left
                                                     # out), for comparing two versions byte for byte
    python bench/bench_grading.py --records FILE --compare BEFORE   # exit 1 if they differ

CPU time (`time.process_time`, every thread of the process; the least of 3 runs) is the steadier figure on a
shared machine. To compare with another version: `PYTHONPATH=/path/to/other/checkout python bench/bench_grading.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

BOT = '''
import json
import os

def respond(messages, context):
    text = messages[-1]["content"]
    if "JSON" in text:
        return json.dumps({"car": "瑶光", "price": 159800}, ensure_ascii=False)
    if "分期" in text:  # a reply that leaks the provider's token: redaction has work to do
        return "可以分期，您的凭证是 " + os.environ.get("BENCH_API_TOKEN", "") + "，App 里预约顾问。"
    return "收到：" + text + "。瑶光的续航是 620 公里，支持分期，详情请在 App 里预约顾问。"
'''

from bench_scale import SUITE as SCALE  # noqa: E402  (the scale benchmark's suite; run from bench/)

MIX = """providers:
  - id: bot
    python: bot.py:respond
vars: {{token: "${{BENCH_API_TOKEN}}"}}  # an environment variable named *TOKEN: its value is a secret
options: {{cache: false}}
tests:
  - id: mix
    repeat: {n}
    conversation:
      - user: 你好，我想看看瑶光
        label: hello
        assert:
          - contains-any: [瑶光, 天枢]
          - icontains: app
          - word-count: {{min: 5, max: 200}}
      - user: 续航多少？
        assert:
          - regex: "\\\\d+ ?公里"
      - user: 用 JSON 告诉我价格
        assert:
          - is-json: true
          - starts-with: "{{"
      - user: 能分期吗？
    assert:
      - contains: 收到
        scope: each_turn
      - not-regex: "1[3-9]\\\\d{{9}}"
        scope: each_turn
        severity: critical
      - not-regex: "https?://|www\\\\."
        scope: each_turn
        severity: critical
      - not-icontains: guarantee
        scope: conversation
      - not-before: {{pattern: 分期, turn: 2}}
      - within: {{pattern: 续航, after: 2, turns: 2}}
      - at-most: {{pattern: 预约, count: 4}}
      - not-after: {{pattern: 保证, after: hello}}
      - turn-count: {{min: 1, max: 10}}
"""

SECRETS = {"sk-bench-secret-0001", "another-secret-token", "瑶光的续航是 620"}  # the last one hits every reply


def instances(folder: Path, name: str, text: str, n: int) -> list[Any]:
    from evalspec.app.api import load
    from evalspec.plan.build import Plan

    path = folder / f"{name}.yaml"
    path.write_text(text.format(n=n), encoding="utf-8")
    return list(Plan(load([path])))


def conversations(folder: Path, name: str, text: str, n: int) -> list[tuple[Any, Any]]:
    """(instance, recorded transcript) for each conversation; the bot is played once per distinct script."""
    from evalspec.play.runner import run_instance
    from evalspec.providers.factory import ProviderPool
    from evalspec.results.transcript import Transcript

    planned = instances(folder, name, text, n)

    async def play_first() -> dict[str, Any]:
        pool = ProviderPool([planned[0].suite], cache_dir=None)
        try:
            return await run_instance(planned[0], pool)
        finally:
            await pool.aclose()

    record = asyncio.run(play_first())
    assert record["status"] in ("passed", "failed"), record["error"]
    return [(inst, Transcript(messages=[dict(m) for m in record["transcript"]], calls=len(inst.turns)))
            for inst in planned]


REPEAT = 3  # each figure is the least of this many runs (a shared machine only ever adds time)


def cpu_us(fn: Any, count: int) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best / count * 1e6


def measure(name: str, plays: list[tuple[Any, Any]]) -> dict[str, float]:
    from evalspec.assertions.grade import grade
    from evalspec.core.redact import redact
    from evalspec.plan.build import grading_input
    from evalspec.results.record import make_record

    graded: list[Any] = []

    async def grade_all() -> None:
        graded.clear()
        for inst, transcript in plays:
            graded.append(await grade(grading_input(inst), transcript.messages))

    async def grade_64() -> None:  # as `-j 64` does: 64 conversations graded at once share the workers
        queue = iter(plays)

        async def worker() -> None:
            for inst, transcript in queue:
                await grade(grading_input(inst), transcript.messages)
        await asyncio.gather(*(worker() for _ in range(64)))

    figures = {"grade, one at a time": cpu_us(lambda: asyncio.run(grade_all()), len(plays)),
               "grade, 64 at once": cpu_us(lambda: asyncio.run(grade_64()), len(plays))}
    records: list[dict[str, Any]] = []

    def build() -> None:
        records.clear()
        for (inst, transcript), results in zip(plays, graded, strict=True):
            records.append(make_record(inst, transcript, results, 1.0))

    figures["make_record"] = cpu_us(build, len(plays))
    none: set[str] = set()
    figures["redact, no secret"] = cpu_us(lambda: [redact(r, none) for r in records], len(plays))
    masked: list[Any] = []
    figures["redact, 3 secrets"] = cpu_us(lambda: masked.extend(redact(r, SECRETS) for r in records), len(plays))
    masked[len(records):] = []
    assert "***" in json.dumps(masked[0], ensure_ascii=False)
    figures["total"] = figures["grade, 64 at once"] + figures["make_record"] + figures["redact, no secret"]
    return figures


def timing_figures(n: int) -> None:
    os.environ["BENCH_API_TOKEN"] = "sk-bench-secret-0001"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bot.py").write_text(BOT, encoding="utf-8")
        table = {name: measure(name, conversations(folder, name, text, n)) for name, text in (("scale", SCALE),
                                                                                               ("mix", MIX))}
    print(f"µs of CPU per conversation ({n} conversations per suite; total = grade 64 at once + make_record + "
          "redact without secrets, as `-j 64` does)")
    rows = list(next(iter(table.values())))
    print(f"{'':22}" + "".join(f"{name:>10}" for name in table))
    for row in rows:
        print(f"{row:22}" + "".join(f"{table[name][row]:10.1f}" for name in table))


VOLATILE = {"duration_ms", "latency_ms", "run_id", "started_at", "duration_s"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def records(out: Path) -> None:
    """Run every example suite under `suites/` plus the mix suite with secrets; write their run.json
    minus timings and ids, one suite per line."""
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bot.py").write_text(BOT, encoding="utf-8")
        (folder / "mix.yaml").write_text(MIX.format(n=3), encoding="utf-8")
        env = {**os.environ, "BENCH_API_TOKEN": "sk-bench-secret-0001"}
        for suite, cwd in [*((s, ROOT) for s in sorted((ROOT / "suites").glob("*.yaml"))), (Path("mix.yaml"), folder)]:
            run_json = folder / "run.json"
            subprocess.run([sys.executable, "-m", "evalspec", "run", str(suite), "-q", "--no-cache", "-j", "4",
                            "-o", str(run_json)], cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=False)
            data = json.loads(run_json.read_text(encoding="utf-8"))
            data["suites"] = [{k: v for k, v in s.items() if k != "path"} for s in data["suites"]]
            for r in data["results"]:
                r["key"] = r["key"].split("::", 1)[1]
                r["suite"] = Path(r["suite"]).name
            lines.append(json.dumps(_stable(data), ensure_ascii=False, sort_keys=True))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} suites' records written to {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=2000, help="conversations per suite")
    parser.add_argument("--records", type=Path, help="write the example suites' records here instead of timing")
    parser.add_argument("--compare", type=Path, help="with --records: a file written before; exit 1 if different")
    args = parser.parse_args()
    if args.records is None:
        timing_figures(args.n)
        return
    records(args.records)
    if args.compare is not None:
        before = args.compare.read_text(encoding="utf-8").splitlines()
        after = args.records.read_text(encoding="utf-8").splitlines()
        differ = [i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
        if differ or len(before) != len(after):
            print(f"records differ: suites {differ}, {len(before)} vs {len(after)} lines")
            raise SystemExit(1)
        print("records identical")


if __name__ == "__main__":
    main()
