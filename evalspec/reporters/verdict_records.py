"""Which records a verdict stands for, found in memory that does not grow with the run
(docs/en/scale-and-ray.md#memory). A verdict that lists its `records` (positions in `results`) is read
there; otherwise its records are found by the key they share with it. A run in memory is indexed once; a
streamed run's records are walked once, in run order, by a `RecordCursor`: its verdicts are asked in
their own order (a verdict after the ones before it) and the cursor keeps only the records it has read
past of the test instance at hand."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from evalspec.results.rundata import Record, RunData, RunVerdict
from evalspec.results.stream import JournalRecords, keys_of, records_at

Key = tuple[str, str, str]
Find = Callable[..., list[Record]]  # find(v, status=None): the records of verdict v (of `status` when given)


def record_key(r: Mapping[str, Any]) -> Key:
    """The verdict a record counts in, as `results.verdict` groups them: its test instance × provider, or
    under `reduce` its test (with its simulator) × provider (docs/en/recorded-conversations.md)."""
    if r.get("reduce"):
        test, simulator = str(r.get("test") or r["base_id"]), r.get("simulator")
        return r["suite"], f"{test}[simulator={simulator}]" if simulator else test, r["provider"]
    return r["suite"], r["base_id"], r["provider"]


def verdict_key(v: Mapping[str, Any]) -> Key:
    return v["suite"], v["test_id"], v["provider"]


def listed_positions(v: Mapping[str, Any]) -> list[int] | None:
    """The verdict's own `records` (positions in `results`), when it lists them."""
    found = v.get("records")
    if isinstance(found, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in found):
        return found
    return None


class RecordCursor:
    """The records of verdicts asked in run order, with one forward walk over the records' light forms."""

    def __init__(self, results: Sequence[Record]) -> None:
        self.results = results
        self.keys = keys_of(results)
        self.rows: Iterator[tuple[int, Mapping[str, Any]]] = iter(enumerate(self.keys))
        self.ahead: dict[Key, list[tuple[int, str]]] = {}  # read past: (position, status), this instance's only

    def positions(self, v: Mapping[str, Any], status: Collection[str] | None = None) -> list[int]:
        own = listed_positions(v)
        if own is not None:
            return own if status is None else [i for i in own if self.keys[i]["status"] in status]
        key = verdict_key(v)
        for other in [k for k in self.ahead if k[:2] != key[:2]]:  # an earlier instance's: never asked again
            del self.ahead[other]
        found = self.ahead.pop(key, [])
        want = int(v.get("n") or 0)
        while len(found) < want and (step := next(self.rows, None)) is not None:
            i, r = step
            k = record_key(r)
            (found if k == key else self.ahead.setdefault(k, [])).append((i, r["status"]))
        if len(found) < want:  # records out of run order (a file made by hand): a walk for this verdict alone
            found = [(i, r["status"]) for i, r in enumerate(self.keys) if record_key(r) == key]
        return [i for i, s in found if status is None or s in status]

    def __call__(self, v: Mapping[str, Any], status: Collection[str] | None = None) -> list[Record]:
        return records_at(self.results, self.positions(v, status))


def verdict_finder(run: RunData) -> Find:
    """`find(v, status=None)`: the records of verdict `v` (those of `status` when given), in run order. A
    streamed run's verdicts must be asked in their order (see `RecordCursor`); records in memory are
    indexed once, so any order does."""
    results = run["results"]
    if isinstance(results, JournalRecords):
        return RecordCursor(results)
    index: dict[Key, list[int]] = {}
    for i, r in enumerate(results):
        index.setdefault(record_key(r), []).append(i)

    def find(v: RunVerdict, status: Collection[str] | None = None) -> list[Record]:
        positions = listed_positions(v)
        if positions is None:
            positions = index.get(verdict_key(v), [])
        return [results[i] for i in positions if status is None or results[i]["status"] in status]

    return find


def records_of(run: RunData, chosen: Sequence[tuple[int, RunVerdict]],
               status: Collection[str] | None = None) -> dict[int, list[Record]]:
    """{position: records} of a few verdicts (position, verdict), found with one walk in run order."""
    find = verdict_finder(run)
    return {i: find(v, status) for i, v in sorted(chosen, key=lambda pair: pair[0])}
