"""What a run keeps in memory per finished conversation is a few 8-byte ints, not its light record
(docs/en/scale-and-ray.md#memory): the memory traced at two sizes grows by less than 100 bytes a
conversation (a light record in memory cost ~700; interning its strings alone left ~340)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

from evalspec.play.runner import Kept
from evalspec.results.stream import light
from tests.results.helpers import rec

CHECKS = [{"type": "not-regex", "value": "1[3-9]\\d{9}", "severity": "critical", "pass": True, "score": 1.0,
           "metric": "安全", "turn": None}]


def record(i: int) -> dict[str, object]:
    return rec(f"scale[row={i}]", "passed", name=f"瑶光 {i}", assertions=CHECKS, matrix={"row": i},
               transcript=[{"role": "user", "content": f"你好（{i}）", "turn": 1}])


def traced(make: Callable[[int], object], n: int) -> int:
    """Bytes still allocated by `make(n)` while its result is alive."""
    gc.collect()
    tracemalloc.start()
    try:
        kept = make(n)
        gc.collect()
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return size


def per_conversation(make: Callable[[int], object], sizes: tuple[int, int] = (2000, 8000)) -> float:
    make(100)  # imports and caches first
    small, large = traced(make, sizes[0]), traced(make, sizes[1])
    return (large - small) / (sizes[1] - sizes[0])


def test_a_run_keeps_two_ints_a_conversation() -> None:
    def played(n: int) -> Kept:
        kept = Kept(n)
        for position in reversed(range(n)):  # finished in any order
            kept.add(position, position * 100, light(record(position)))
        offsets, lights = kept.in_plan_order()
        assert len(lights) == n and lights[0]["base_id"] == "scale[row=0]" and offsets[1] == 100
        return kept

    assert per_conversation(played) < 100


def test_a_run_that_did_not_finish_every_conversation_keeps_no_second_array_of_offsets() -> None:
    n = 100_000
    gc.collect()
    tracemalloc.start()
    try:
        kept = Kept(n)
        for position in range(0, n, 2):  # every other conversation finished (Ctrl-C, --max-errors)
            kept.add(position, position * 10, {"base_id": f"瑶光[{position}]", "status": "passed"})
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        offsets, lights = kept.in_plan_order()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert list(offsets[:3]) == [0, 20, 40] and len(offsets) == len(lights) == n // 2, len(offsets)
    assert lights[1]["base_id"] == "瑶光[2]" and lights[n // 2 - 1]["base_id"] == f"瑶光[{n - 2}]"
    # a second array of the finished offsets took 400 KB here (8 MB at a million)
    assert peak - held < 100_000, peak - held
