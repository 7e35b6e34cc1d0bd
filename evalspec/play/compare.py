"""`select-best` and `pairwise` with `against:` across records: a test's candidates are compared once
every one of them has finished (a `pairwise` record with the same instance of the provider it names, or
with its instance in the baseline run: docs/en/judges.md#comparing-two-bot-versions-pairwise).

A comparison group is one test's records of one repeat: every provider × matrix instance of it in the
plan (repeats are independent samples, each compared on its own; promptfoo compares every prompt ×
provider of one test case). During a run the group's records are held back until the last one comes in,
whichever process or Ray worker played it; then one judge call (`assertions.select_best.pick_best`)
decides them, and they are journaled together, so the journal only ever holds decided records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from evalspec.assertions.across import PENDING, across_records
from evalspec.assertions.evaluate import AssertionResult, combine, no_verdict
from evalspec.config.model import PAIRWISE, SELECT_BEST, AssertionSpec, Suite, TestSpec
from evalspec.core.usercode import describe
from evalspec.extend.check import JudgeFn
from evalspec.plan.build import Instance, Plan, plan_slots, positions
from evalspec.providers.factory import ProviderPool
from evalspec.results.pairwise import SideKey, baseline_sides, side_key
from evalspec.results.record import Record, conversation_error, redecide

if TYPE_CHECKING:
    from evalspec.assertions.select_best import Candidate

GroupKey = tuple[int, int, int]  # id(suite), id(test), repeat


def compared(test: TestSpec) -> bool:
    return any(across_records(spec) for spec in test.asserts)


def _against_baseline(test: TestSpec) -> bool:
    """`pairwise: {against: baseline}` is among the test's checks: it reads the baseline run's records."""
    from evalspec.assertions.pairwise import BASELINE

    return any(spec.type == PAIRWISE and spec.params.against == BASELINE for spec in test.asserts)


def group_key(suite: Suite, test: TestSpec, repeat: int) -> GroupKey:
    """The comparison group of a test's record: its suite, test and repeat."""
    return id(suite), id(test), repeat


def _best(inst: Instance) -> list[AssertionSpec]:
    return [spec for spec in inst.asserts if across_records(spec)]


def label(record: Record) -> str:
    """A candidate as reports name it: its provider, and its matrix values when it has some."""
    matrix = record.get("matrix") or {}
    values = ", ".join(f"{k}={v}" for k, v in matrix.items())
    return f"'{record['provider']}'" + (f" [{values}]" if values else "")


def _judge(pool: ProviderPool, suite: Suite, spec: AssertionSpec) -> JudgeFn | None:
    return pool.judge_for(suite, spec.provider) if spec.provider is not None else pool.judge_fn(suite)


def _candidate(record: Record) -> Candidate:
    from evalspec.assertions.select_best import Candidate

    return Candidate(label(record), list(record["transcript"]), conversation_error(record))


async def decide_group(first: Instance, records: list[Record], pool: ProviderPool,
                       baseline: Mapping[SideKey, Mapping[str, Any]] | None = None) -> None:
    """Decide every `select-best` and `pairwise` of a group's records (in plan order; `first` is the first
    one's instance: its rendered criterion is the group's) and their verdicts again. `baseline`: the
    baseline run's records by instance (`pairwise: {against: baseline}`)."""
    from evalspec.assertions.select_best import pick_best

    specs = _best(first)
    candidates = [_candidate(r) for r in records]
    usage: list[list[dict[str, Any]]] = [[] for _ in records]
    decided: list[list[AssertionResult]] = [[] for _ in records]
    for spec in specs:
        if spec.type != SELECT_BEST:
            await _decide_pairs(spec, first.suite, records, candidates, pool, baseline, decided, usage)
            continue
        comparison = await pick_best(spec, candidates, _judge(pool, first.suite, spec))
        for i in range(len(records)):
            decided[i].append(combine(spec, [comparison.checks[i]]) if comparison.error is None
                              else no_verdict(spec, comparison.error))
        usage[0].extend(comparison.usage)  # one comparison: counted on the first candidate
    for record, results, used in zip(records, decided, usage, strict=True):
        redecide(record, _placed(record, results), first, used)


async def _decide_pairs(spec: AssertionSpec, suite: Suite, records: list[Record], candidates: list[Candidate], pool: ProviderPool,
                        baseline: Mapping[SideKey, Mapping[str, Any]] | None, decided: list[list[AssertionResult]],
                        usage: list[list[dict[str, Any]]]) -> None:
    """Each record's `pairwise` against its other side; the named provider's own records are skipped."""
    from evalspec.assertions.pairwise import BASELINE, compare_sides

    against = spec.params.against
    for i, record in enumerate(records):
        if against != BASELINE and record["provider"] == against:
            decided[i].append(replace(no_verdict(spec, reason=f"this is provider '{against}', the side compared "
                                                              "against"), skipped=True))
            continue
        if against == BASELINE:
            if baseline is None:
                decided[i].append(no_verdict(spec, "'pairwise: {against: baseline}' needs a baseline run: give "
                                                   "--baseline RUN.json"))
                continue
            base = baseline.get(side_key(record))
            theirs = _candidate(base) if base is not None else None  # type: ignore[arg-type]
        else:
            theirs = next((c for r, c in zip(records, candidates, strict=True)
                           if r["provider"] == against and (r.get("matrix") or {}) == (record.get("matrix") or {})),
                          None)
        found = await compare_sides(spec, candidates[i], theirs, _judge(pool, suite, spec))
        decided[i].append(combine(spec, [found.check]) if found.check is not None else no_verdict(spec, found.error))
        usage[i].extend(found.usage)  # type: ignore[arg-type]


async def replay_compared(inst: Instance, plan: Sequence[Instance], play: Callable[[Instance], Awaitable[Record]],
                          pool: ProviderPool) -> Record:
    """`inst` played again (`rerun`, confirmation replays); with a `select-best`, its comparison group too:
    every candidate of its test and repeat in `plan` is played, and they are compared; `inst`'s record is
    returned."""
    if not compared(inst.test):
        return await play(inst)
    key = group_key(inst.suite, inst.test, inst.repeat)
    group = [m for m in plan if group_key(m.suite, m.test, m.repeat) == key]
    records = list(await asyncio.gather(*(play(m) for m in group)))
    await decide_group(group[0], records, pool)
    return next(r for m, r in zip(group, records, strict=True) if m.key == inst.key)


def _placed(record: Record, results: list[AssertionResult]) -> list[AssertionResult]:
    """The record's results with each pending `select-best` or `pairwise` replaced, in order; one its conversation's error
    left ungraded is added at the end."""
    new = iter(results)
    out = []
    for stored in record["assertions"]:
        old = AssertionResult.from_json(stored)
        pending = stored["type"] == SELECT_BEST or (stored["type"] == PAIRWISE and stored.get("error") == PENDING)
        out.append(next(new, old) if pending else old)
    return out + list(new)


def _slots(plan: Sequence[Instance]) -> Iterator[tuple[Suite, TestSpec, int]]:
    if isinstance(plan, Plan):
        for suite, test, _provider, _matrix, k, *_ in plan_slots(plan.suites, plan.selection):
            yield suite, test, k
    else:
        for inst in plan:
            yield inst.suite, inst.test, inst.repeat


class Comparisons:
    """The run's comparison groups: `hold` takes a finished record of one (False for any other record);
    the group's last record starts its judge call, after which `write` gets each record, in plan order."""

    def __init__(self, suites: list[Suite], plan: Sequence[Instance], finished: Callable[[int], bool],
                 pool: ProviderPool, write: Callable[[int, dict[str, Any]], None],
                 baseline: Mapping[str, Any] | None = None) -> None:
        self.pool, self.write = pool, write
        against = {test.id for suite in suites for test in suite.tests if _against_baseline(test)}
        self.baseline = baseline_sides(baseline, against) if baseline is not None else None
        self.group_of: dict[int, GroupKey] = {}
        self.waiting: dict[GroupKey, set[int]] = {}
        self.held: dict[GroupKey, dict[int, Record]] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.received: set[int] = set()  # played, held or being decided: not to be played again
        self.instances: dict[GroupKey, Instance] = {}
        if not any(compared(test) for suite in suites for test in suite.tests):
            return  # the usual run: no pass over the plan
        first: dict[GroupKey, int] = {}
        for position, (suite, test, k) in enumerate(_slots(plan)):
            if compared(test) and not finished(position):
                key = group_key(suite, test, k)
                self.group_of[position] = key
                self.waiting.setdefault(key, set()).add(position)
                first.setdefault(key, position)
        firsts = set(first.values())
        if firsts:
            for position, inst in positions(plan, lambda position, _key: position in firsts):
                self.instances[self.group_of[position]] = inst

    def hold(self, position: int, record: dict[str, Any]) -> bool:
        key = self.group_of.get(position)
        if key is None:
            return False
        self.held.setdefault(key, {})[position] = record  # type: ignore[assignment]
        self.received.add(position)
        self.waiting[key].discard(position)
        if not self.waiting[key]:
            task = asyncio.ensure_future(self._decide(key))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return True

    async def _decide(self, key: GroupKey) -> None:
        members = sorted(self.held.pop(key).items())
        first = self.instances[key]
        try:
            await decide_group(first, [r for _, r in members], self.pool, self.baseline)
        except Exception as exc:  # a bug costs the comparison, not the run: an error on each candidate
            for _, record in members:
                failed = [no_verdict(spec, f"internal error: {describe(exc)}") for spec in _best(first)]
                redecide(record, _placed(record, failed), first, [])
        for position, record in members:
            self.write(position, dict(record))

    async def wait(self) -> None:
        """Every group whose records all came in, decided and written."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks))
