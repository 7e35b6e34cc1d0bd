"""Confirmation replays: before a verdict is called `regressed` it is replayed N times as a whole (all
its repeats, combined by its pass rule), live: provider, simulator and judge caches are bypassed.
If any replay passes, the verdict is `flaky`: shown, not blocking."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from evalspec.config.model import Suite
from evalspec.plan.build import Instance
from evalspec.plan.needs import check_plan
from evalspec.play.compare import replay_compared
from evalspec.play.runner import run_instance
from evalspec.providers.factory import ProviderPool
from evalspec.results.compare import finish, suite_key
from evalspec.results.rundata import Baseline, BaselineRow, Record, Status
from evalspec.results.runjson import untyped
from evalspec.results.stream import update_record
from evalspec.results.verdict import combine_repeats


def _targets(plan: Sequence[Instance], rows: Sequence[BaselineRow]) -> dict[int, list[Instance]]:
    """The plan's instances (every repeat) behind each row to confirm, by row index (no pass over the plan
    when nothing blocks)."""
    wanted = {(r["suite"], r["test_id"], r["provider"]): i for i, r in enumerate(rows) if r["blocking"]}
    out: dict[int, list[Instance]] = {}
    if not wanted:
        return out
    for inst in plan:
        i = wanted.get((suite_key(str(inst.suite.path)), inst.base_id, inst.provider.id))
        if i is not None:
            out.setdefault(i, []).append(inst)
    return out


async def confirm_regressions(diff: Baseline, suites: list[Suite], plan: Sequence[Instance], times: int,
                              concurrency: int, notify: Callable[[str], None] | None = None) -> Baseline:
    """Replay every blocking verdict `times` times; one passing replay makes it `flaky`."""
    targets = _targets(plan, diff["rows"])
    if times < 1 or not targets:
        return diff
    if notify:
        notify(f"confirming {len(targets)} regression{'s' if len(targets) != 1 else ''}: "
               f"{times} replay{'s' if times != 1 else ''} each, without caches")
    pool = ProviderPool(suites, cache_dir=None)
    slots = asyncio.Semaphore(max(1, concurrency))

    async def play(inst: Instance) -> Record:
        async with slots:
            return await run_instance(inst, pool)

    async def replay(instances: list[Instance]) -> Status:  # a `select-best` is compared with its test's candidates
        records = await asyncio.gather(*(replay_compared(inst, plan, play, pool) for inst in instances))
        return combine_repeats(list(records), instances[0].test.repeat.rule)[0]

    try:
        check_plan([inst for insts in targets.values() for inst in insts])
        rows = diff["rows"]
        for i, instances in targets.items():
            replays = list(rows[i]["replays"])
            for _ in range(times):
                replays.append(await replay(instances))
            changed: dict[str, object] = {"replays": replays}
            if any(s in ("passed", "xpassed") for s in replays):
                changed.update(category="flaky", blocking=False)
            update_record(rows, i, changed)  # a large diff's rows are on disk: a row read is a copy
    finally:
        await pool.aclose()
    finish(untyped(diff))  # recounted in place
    return diff
