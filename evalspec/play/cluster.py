"""What runs on the Ray cluster: the conversation workers and the two services they share.

- `LimitBroker`: one actor for the whole cluster holding each provider's `max_concurrency` slots and
  `rpm` schedule; every worker asks it before each call starts, so the limits hold across workers. It
  knows which worker holds each slot: the slots of a worker that died are given back (`drop`).
- `CacheReader`: an actor on the driver's node answering reads of the driver's response cache.
- `ConversationWorker`: an actor that unpacks the suites' files, loads the suites and the plan once,
  and plays the conversations it is handed (rendered as its `PlanCursor` reaches them: a worker keeps a
  window of the plan, never the whole of it); the cache entries a conversation wrote travel back with
  its record, and the driver stores them. It grades under watch in a folder of its node (`play.watch`):
  a conversation handed to it again because a check of it ended its worker there is graded again.

These classes are made remote by the executor (`ray.remote(...)(LimitBroker)`), so this module does
not need ray to be imported.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import tempfile
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from evalspec.config.model import ProviderSpec, Suite
from evalspec.plan.build import Instance, Plan, Selection
from evalspec.play.bundle import driver_path, mirrored, remove, unpack
from evalspec.providers.cache import ResponseCache
from evalspec.providers.factory import ProviderPool
from evalspec.providers.limits import Limits, LocalLimits
from evalspec.results.record import Record

PlayFn = Callable[[Instance, ProviderPool, Path | None, str | None, str | None], Awaitable[Record]]
# (`runner.play_watched`)
CacheEntry = tuple[str, dict[str, object]]  # a response cache entry (`providers.cache`)
_written: contextvars.ContextVar[list[CacheEntry] | None] = contextvars.ContextVar("_written", default=None)


def untracked(method: Any) -> Any:
    """An actor's method called once or more per conversation, without Ray's task events: Ray would keep a
    record of each call for its state API (a million conversations make millions of them, each buffered in
    the caller and sent to the cluster's head), and nobody reads them (docs/en/scale-and-ray.md)."""
    return method.options(enable_task_events=False)


RATE_MARGIN = 1.01  # starts spaced 1% wider than 60/rpm: the network's jitter cannot push rpm+1 into a minute


class LimitBroker:
    """The cluster's limiter: `acquire` returns when a call to provider `key` may start. Each provider's
    limits are the same `LocalLimits` a local run uses, held here once for every worker; each slot of a
    `max_concurrency` is held by a worker (`holder`) until it releases it or is dropped."""

    def __init__(self) -> None:
        self.buckets: dict[str, LocalLimits] = {}
        self.held: dict[str, Counter[str]] = {}  # holder -> provider key -> slots it holds
        self.gone: set[str] = set()  # holders dropped: what they are granted later goes straight back

    async def acquire(self, key: str, rpm: float | None, max_concurrency: int | None, holder: str = "") -> None:
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = LocalLimits(max_concurrency, rpm / RATE_MARGIN if rpm else None)
        await bucket.acquire()
        if not max_concurrency:
            return
        if holder in self.gone:  # it asked, then died: nobody will release this slot
            bucket.release()
            return
        self.held.setdefault(holder, Counter())[key] += 1

    def release(self, key: str, holder: str = "") -> None:
        held = self.held.get(holder)
        if held is None or held[key] <= 0:
            return  # given back already, when its holder was dropped
        held[key] -= 1
        self.buckets[key].release()

    def drop(self, holder: str) -> int:
        """`holder` is gone (its worker died): every slot it held is free again; returns how many."""
        self.gone.add(holder)
        held = self.held.pop(holder, Counter())
        for key, count in held.items():
            for _ in range(count):
                self.buckets[key].release()
        return sum(held.values())


class ClusterLimits:
    """A worker's handle on one provider's limits in the broker (`Limits`)."""

    def __init__(self, broker: Any, key: str, rpm: float | None, max_concurrency: int | None,
                 holder: str = "") -> None:
        self.broker, self.key, self.rpm, self.max_concurrency = broker, key, rpm, max_concurrency
        self.holder = holder

    async def acquire(self) -> None:
        await untracked(self.broker.acquire).remote(self.key, self.rpm, self.max_concurrency, self.holder)

    def release(self) -> None:
        if self.max_concurrency:
            untracked(self.broker.release).remote(self.key, self.holder)


class CacheReader:
    """Reads of the driver's response cache, served from the driver's node."""

    def __init__(self, cache_dir: str) -> None:
        self.cache = ResponseCache(Path(cache_dir))

    def get(self, key: str) -> dict[str, object] | None:
        return self.cache.get(key)


class ShippingCache(ResponseCache):
    """A worker's cache: reads ask the driver's cache; writes travel back with the conversation's record
    (and are kept here a while, so this worker's later conversations see them before the driver has)."""

    RECENT = 4096

    def __init__(self, reader: Any) -> None:  # no sqlite file of its own
        self.reader = reader
        self.secrets: set[str] = set()
        self.recent: OrderedDict[str, dict[str, object]] = OrderedDict()

    def get(self, key: str) -> dict[str, object] | None:
        if key in self.recent:
            return self.recent[key]
        import ray

        value: dict[str, object] | None = ray.get(untracked(self.reader.get).remote(key))
        return value

    async def aget(self, key: str) -> dict[str, object] | None:
        if key in self.recent:
            return self.recent[key]
        value: dict[str, object] | None = await untracked(self.reader.get).remote(key)
        return value

    def put(self, key: str, value: dict[str, object]) -> None:
        self.put_many([(key, value)])  # no batch here: entries travel with the conversation's record

    def flush(self) -> None:
        pass  # nothing pending: `put_many` hands each entry on at once

    def put_many(self, entries: list[CacheEntry]) -> None:
        written = _written.get()
        for key, value in entries:
            self.recent[key] = value
            self.recent.move_to_end(key)
            if written is not None:  # to the driver's file: masked there
                written.append((key, self.storable(value)))
        while len(self.recent) > self.RECENT:
            self.recent.popitem(last=False)

    def close(self) -> None:
        self.recent.clear()


class PlanCursor:
    """The plan's instances by position, for a worker: one walk of the plan forward, rendering only the
    positions near the ones asked for, and keeping at most `WINDOW` of them (memory does not grow with
    the plan: docs/en/scale-and-ray.md). The driver hands positions out in rising order, so each worker
    is asked for a rising sequence (a few out of order among the calls in flight, kept in the window);
    a position the walk has passed (a conversation handed again after its worker died) is found by a
    walk of its own."""

    WINDOW = 1024  # instances rendered ahead of or behind the position asked for

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.floor = 0  # the walk renders positions from here on (the others it only counts)
        self.walk: Iterator[tuple[int, Instance]] = plan.positions(lambda position, _key: position >= self.floor)
        self.reached = -1  # the last position the walk rendered
        self.ready: OrderedDict[int, Instance] = OrderedDict()  # rendered, not asked for yet, oldest first

    def at(self, index: int) -> Instance:
        if (found := self.ready.pop(index, None)) is not None:
            return found
        if index <= self.reached or index < self.floor:  # passed: a walk of its own
            for _, instance in self.plan.positions(lambda position, _key: position == index):
                return instance
            raise IndexError(f"the plan has no position {index}")
        self.floor = max(self.floor, index - self.WINDOW)
        for position, instance in self.walk:
            self.reached = position
            if position == index:
                return instance
            self.ready[position] = instance
            while len(self.ready) > self.WINDOW:
                self.ready.popitem(last=False)
        raise IndexError(f"the plan has no position {index}")


class ConversationWorker:
    """A Ray actor: the suites' files unpacked, the suites and the plan loaded once; one conversation per
    call, returned with the cache entries it wrote."""

    def __init__(self, bundle: bytes, suite_paths: list[str], cli_vars: Mapping[str, object], environ: dict[str, str],
                 selection: Selection, driver_cwd: str, play: PlayFn, broker: Any, reader: Any,
                 holder: str = "", watch: str = "") -> None:
        from evalspec.config.loader import load_suites
        from evalspec.plan.build import checked_plan
        from evalspec.plan.needs import prepare_plan

        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        self.root = unpack(bundle)
        cwd = mirrored(self.root, driver_cwd)
        os.chdir(cwd if cwd.is_dir() else self.root)  # relative paths in user code resolve as on the driver
        if cwd.is_dir():  # `module:function` beside the driver's working directory: imported from the bundle
            sys.path.insert(0, str(cwd))
        self.suites = load_suites([mirrored(self.root, p) for p in suite_paths], cli_vars, environ)
        plan = checked_plan(self.suites, selection)
        self.plan = PlanCursor(plan)  # played by position
        prepare_plan(list(plan.representatives()))  # the HTTP transport: not mid-run
        self.play, self.broker, self.holder = play, broker, holder  # holder: this worker's name at the broker
        # the run's folder on this node where conversations are graded under watch (`play.watch`)
        self.watched = Path(tempfile.gettempdir()) / "evalspec-grading" / watch if watch else None
        self.pool = ProviderPool(self.suites, None, cache=ShippingCache(reader) if reader is not None else None,
                                 limits_for=self.limits_for)

    def limits_for(self, suite: Suite, spec: ProviderSpec) -> Limits | None:
        if not spec.rpm and not spec.max_concurrency:
            return None
        key = f"{driver_path(self.root, suite.path)}|{spec.id}@{spec.where}"  # the same on every worker
        return ClusterLimits(self.broker, key, spec.rpm, spec.max_concurrency, self.holder)

    async def run(self, index: int, ended: str | None = None) -> tuple[Record, list[CacheEntry]]:
        """The `index`-th conversation's record; `ended`: its last worker ended under it (the error of the
        check of it that was running then, graded again when its files are on this node)."""
        written: list[CacheEntry] = []
        token = _written.set(written)
        try:
            # its files named by its place in the plan: a worker's keys hold the path it unpacked to
            record = await self.play(self.plan.at(index), self.pool, self.watched, ended, str(index))
        finally:
            _written.reset(token)
        return record, written

    async def close(self) -> None:
        await self.pool.aclose()
        remove(self.root)
        if self.watched is not None:
            with contextlib.suppress(OSError):
                self.watched.rmdir()  # once no conversation is left in it
