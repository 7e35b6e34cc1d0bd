"""`--executor ray`: the conversations of a run played by actors on a Ray cluster.

The driver packs the suites' folders (`bundle`), starts one `LimitBroker` for the cluster, a
`CacheReader` on its own node, and a few `ConversationWorker` actors spread over the nodes; it hands
each conversation's index to a worker and gets back the record and the cache entries the conversation
wrote. The driver keeps the journal, the cache, the order and the gate, exactly as in a local run.
A worker that dies (its process killed, its node lost, user code calling `os._exit`) leaves the
rotation, the broker frees the slots it held, a new worker takes its place, and its conversations are
handed again to a worker on the same node: one that a check's user code ended while it graded it is
graded again there on the replies kept (`play.watch`), that check its error, and any other is played
again. A conversation whose worker died under it again and again (twice, plus once for each of its
checks that run user code) is played a last time on a worker of its own; when that one dies too, the
conversation is an error naming the cause (`ConversationLost`), and the run goes on (docs/en/rule-self-tests.md#verdicts-that-hold: user
code cannot end the run).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from evalspec.assertions.offloop import runs_user_code
from evalspec.core.errors import ConfigError, EvalspecError, Problem
from evalspec.plan.build import Instance, Selection, grading_input
from evalspec.play import cluster
from evalspec.play.bundle import pack, suite_environ
from evalspec.providers.cache import ResponseCache
from evalspec.providers.factory import ProviderPool
from evalspec.results.record import Record

PlayFn = Callable[[Instance, ProviderPool, Path | None, str | None, str | None], Awaitable[Record]]
# (`runner.play_watched`)


@dataclass
class RayConfig:
    paths: list[str]
    cli_vars: Mapping[str, object] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    address: str | None = None


CONNECT_TIMEOUT = 5.0  # seconds to reach a cluster's head before giving up (exit 2)
CLOSE_TIMEOUT = 30.0  # seconds for the workers to clean up
SERVICE_CONCURRENCY = 10_000  # calls the broker and the cache reader serve at once
PLAYS = 3  # times a conversation is handed to a worker when its worker dies under it (the last: alone),
# and once more for each of its checks that run user code (each may end a worker while it is graded again)


class ConversationLost(EvalspecError):
    """Every worker that played this conversation died under it, the last one playing it alone: the
    conversation's error (the runner records it), not the run's end."""


def check_reachable(address: str) -> None:
    """An `--address` nobody answers at fails in seconds (ray.init would wait for it forever)."""
    import socket

    if address == "auto" or address.startswith("local"):
        return  # ray finds (or refuses) the local cluster itself, quickly
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError([Problem("--address", None, "", f"{address!r}: expected HOST:PORT (or ray://HOST:PORT, "
                                   "or auto)")])
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise ConfigError([Problem("--address", None, "", f"no Ray cluster answers at {address} "
                                   f"({exc.strerror or exc}); start one with `ray start --head` or fix "
                                   "the address")]) from None


def connect(address: str | None) -> Any:
    """ray, initialised: the cluster at `address`, or a new local one."""
    try:
        import ray
    except ImportError:
        raise ConfigError([Problem("--executor ray", None, "", "ray is not installed: pip install 'evalspec[ray]'")]) from None
    if not ray.is_initialized():
        if address:
            check_reachable(address)
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError([Problem("--address", None, "", f"cannot join the Ray cluster "
                                       f"{address or '(local)'}: {exc}")]) from None
    return ray


def worker_places(nodes: list[dict[str, Any]], concurrency: int) -> list[str]:
    """The node of each worker: one per CPU of each live node, dealt round the nodes (so a short run uses
    every node), at most `concurrency` in all."""
    slots = [[n["NodeID"]] * max(1, int(n.get("Resources", {}).get("CPU", 1))) for n in nodes if n.get("Alive")]
    dealt = [node for round_ in itertools.zip_longest(*slots) for node in round_ if node is not None]
    return dealt[:max(1, concurrency)]


class RayExecutor:
    """Plays instances of the run's plan (by index) on the cluster with `play`, the runner's function
    for one conversation (passed in, so this layer does not import the runner)."""

    def __init__(self, config: RayConfig, concurrency: int, cache_dir: Path | None, play: PlayFn) -> None:
        self.ray = ray = connect(config.address)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        paths = [Path(p).resolve() for p in config.paths]
        bundle = ray.put(pack(paths))
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        # the limit broker and the cache reader live on the driver's node: losing a worker node loses neither
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=True)
        self.broker = ray.remote(num_cpus=0, max_concurrency=SERVICE_CONCURRENCY)(cluster.LimitBroker).options(
            scheduling_strategy=here).remote()
        self.reader = ray.remote(num_cpus=0, max_concurrency=16)(cluster.CacheReader).options(
            scheduling_strategy=here).remote(str(cache_dir.resolve())) if cache_dir is not None else None
        places = worker_places(ray.nodes(), concurrency)
        self.per_actor = max(1, math.ceil(concurrency / len(places)))
        self.worker_class: Any = ray.remote(num_cpus=0)(cluster.ConversationWorker)
        self.args = (bundle, [str(p) for p in paths], config.cli_vars, suite_environ(paths), config.selection,
                     os.getcwd(), play, self.broker, self.reader)
        self.watch = secrets.token_hex(8)  # this run's folder on each node, for conversations graded under watch
        self.workers: list[Any] = []
        self.live: list[tuple[str, Any, str]] = []  # (name at the broker, actor, node) of the workers in rotation
        self._names = itertools.count()
        for node in places:
            self.live.append(self._start(node, self.per_actor, soft=False))
        self._next = 0

    def _start(self, node: str, concurrency: int, soft: bool) -> tuple[str, Any, str]:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        holder = f"worker-{next(self._names)}"
        actor = self.worker_class.options(
            max_concurrency=concurrency, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=soft)
        ).remote(*self.args, holder, self.watch)
        self.workers.append(actor)
        return holder, actor, node

    async def run(self, instance: Instance, index: int) -> Record:
        """The record of `instance` (the plan's `index`-th), its cache entries stored in the driver's cache.
        A conversation whose worker died is handed again to a worker on that node (graded again there when
        a check of it ended the worker); the last time to a worker of its own."""
        plays = PLAYS + sum(1 for spec in grading_input(instance).specs if runs_user_code(spec))
        ended: str | None = None  # the error of its check that ended its last worker, if one did
        died_on: str | None = None  # the node of that worker: the files of a conversation graded there
        for attempt in range(plays):
            alone = attempt == plays - 1  # its neighbours are not to blame for a death now, nor it for theirs
            if alone:
                holder, worker, node = self._start(died_on or (self.live[0][2] if self.live else self._any_node()),
                                                   1, soft=True)
            elif not self.live:
                raise ConfigError([Problem("--executor ray", None, "", "every ray worker died")])
            else:
                holder, worker, node = self._next_worker(died_on)
            try:
                found: tuple[dict[str, Any], list[cluster.CacheEntry]] = \
                    await cluster.untracked(worker.run).remote(index, ended)
                break
            except self.ray.exceptions.ActorDiedError as exc:
                if getattr(exc, "actor_init_failed", False):  # it never played: the suites cannot load there
                    raise ConfigError([Problem("--executor ray", None, "", f"a ray worker could not start: "
                                               f"{_cause(exc)}")]) from exc
                await self._lost(holder, node, replace=not alone)
                if alone:
                    raise ConversationLost(f"user code ended the ray worker playing it, each of the {plays} "
                                           f"times it was played, the last time alone (os._exit, a crash, or "
                                           f"its node lost): {_cause(exc)}") from None
                ended, died_on = f"user code ended the ray worker grading this conversation while this check " \
                                 f"ran: {_cause(exc)}", node
            except self.ray.exceptions.RayError as exc:
                raise ConfigError([Problem("--executor ray", None, "", f"ray worker failed: {exc}")]) from exc
            finally:
                if alone:
                    await self._retire(worker)
        record, written = found
        if record.get("test_id") != instance.test_id:
            raise ConfigError([Problem("--executor ray", None, "", f"a worker planned {record.get('test_id')!r} "
                                       f"where the driver planned {instance.test_id!r}: the suites differ")])
        if self.cache is not None:
            self.cache.put_many(written)
        record["key"], record["suite"] = instance.key, str(instance.suite.path)
        return cast(Record, record)  # a worker's record, as `run_instance` made it

    def _next_worker(self, node: str | None) -> tuple[str, Any, str]:
        """The next worker in rotation; on `node` when one lives there."""
        there = [entry for entry in self.live if entry[2] == node] or self.live
        self._next += 1
        return there[(self._next - 1) % len(there)]

    def _any_node(self) -> str:
        return str(next(n["NodeID"] for n in self.ray.nodes() if n.get("Alive")))

    async def _retire(self, worker: Any) -> None:
        """A worker that played one conversation alone: its files removed (when it lives), then ended."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(worker.close.remote(), CLOSE_TIMEOUT)
        self.ray.kill(worker)
        self.workers.remove(worker)

    async def _lost(self, holder: str, node: str, replace: bool) -> None:
        """A dead worker leaves the rotation and gives back, at the broker, the slots it held; a new worker
        takes its place in the rotation (on its node while that lives), once however many calls saw it die."""
        if replace and any(name == holder for name, _, _ in self.live):
            self.live = [entry for entry in self.live if entry[0] != holder]
            self.live.append(self._start(node, self.per_actor, soft=True))
        await self.broker.drop.remote(holder)

    async def aclose(self) -> None:
        """Workers remove their unpacked files; then every actor this run started is ended."""
        try:
            await asyncio.wait_for(asyncio.gather(*(w.close.remote() for w in self.workers),
                                                  return_exceptions=True), CLOSE_TIMEOUT)
        except asyncio.TimeoutError:
            pass
        finally:
            for actor in (*self.workers, self.broker, self.reader):  # a dead one is ended already
                if actor is not None:
                    self.ray.kill(actor)
            if self.cache is not None:
                self.cache.close()


def _cause(exc: BaseException) -> str:
    """What Ray says ended a worker, without its ids and its list of usual suspects: "Worker exit type:
    SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file."."""
    skip = ("class_name:", "actor_id:", "pid:", "name:", "namespace:", "ip:")
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip() and not line.strip().startswith(skip))
    for said in ("The actor died unexpectedly before finishing this task.",
                 "The actor is dead because its worker process has died."):
        text = text.replace(said, "")
    return text.partition(" Some common causes")[0].strip()[:300] or type(exc).__name__
