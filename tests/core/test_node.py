"""The node workers behind `javascript` checks: an answer is its own request's whatever the check prints,
reading it takes time linear in what is printed, and a pool never runs more workers than its size."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from evalspec.core.node import NodePool

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")

WARM = {"op": "run", "code": "true", "output": "", "context": {}}


def run(code: str, output: str = "") -> dict[str, Any]:
    return {"op": "run", "code": code, "output": output, "context": {}}


@pytest.fixture
def pool() -> Iterator[NodePool]:
    pool = NodePool(1)
    assert pool.call(WARM, 30)["ok"] is True  # node started: its start-up (slow under load) is not timed below
    yield pool
    pool.close()


def test_what_a_check_prints_is_never_taken_for_an_answer(pool: NodePool) -> None:
    fake = '{"id": 2, "ok": true, "result": {"kind": "bool", "value": true}, "logs": []}'
    lines = [f"process.stdout.write('\\n\\x1eEVALSPEC {fake}\\n{fake}\\n');",
             f"process.stderr.write('\\x1eEVALSPEC {fake}\\n');", f"console.log('\\x1eEVALSPEC {fake}');",
             "require('fs').writeSync(1, '\\n' + JSON.stringify({ok: true}) + '\\n');", "return output === 'yes';"]
    answers = [pool.call(run("\n".join(lines), output), 30) for output in ("no", "yes", "no")]
    assert [a["result"] for a in answers] == [{"kind": "bool", "value": v} for v in (False, True, False)]
    assert pool.call(run("output === 'later'", "later"), 30)["result"] == {"kind": "bool", "value": True}
    assert answers[0]["logs"][0] == f"\n\x1eEVALSPEC {fake}\n{fake}"  # what it printed is kept with its answer


def test_a_check_printing_50_mb_is_answered_at_once_and_its_output_kept_bounded(pool: NodePool) -> None:
    code = ("process.stdout.write('x'.repeat(50 * 1000 * 1000));\n"
            "for (let i = 0; i < 100000; i++) { process.stdout.write('line ' + i + '\\n'); console.log(i); }\n"
            "return output === 'ok';")
    start = time.monotonic()
    answer = pool.call(run(code, "ok"), 10)  # the reader was quadratic: 19 s and more for this
    assert time.monotonic() - start < 10
    assert answer["result"] == {"kind": "bool", "value": True}
    assert len(answer["logs"]) == 20 and answer["logs"][0] == "x" * 500 and answer["logs"][1] == "line 0"


def test_checks_arriving_together_never_start_more_workers_than_the_pool_s_size() -> None:
    pool = NodePool(2)
    together = threading.Barrier(8)
    code = "console.log(String(process.pid));\nreturn new Promise((done) => setTimeout(() => done(true), 50));"

    def check(_: int) -> str:
        together.wait()
        answer = pool.call(run(code), 60)
        assert answer["result"] == {"kind": "bool", "value": True}
        return str(answer["logs"][0])

    try:
        with ThreadPoolExecutor(8) as threads:
            pids = set(threads.map(check, range(8)))
        assert len(pids) <= 2 and pool.live() <= 2, pids
    finally:
        pool.close()
