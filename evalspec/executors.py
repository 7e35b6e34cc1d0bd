"""Where conversations run: in this process (default) or on a Ray cluster (`--executor ray`).

With Ray, a few async actors each load the suites once, rebuild the same plan, and play the
conversations they are handed (many at once per actor). The driver keeps the journal, the order and
the gate, exactly as in a local run.
"""

from __future__ import annotations

import asyncio
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalspec.errors import ConfigError, Problem
from evalspec.plan import Instance, Selection


@dataclass
class RayConfig:
    paths: list[str]
    cli_vars: dict[str, Any] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    address: str | None = None


class ConversationWorker:
    """A Ray actor: the suites and the plan, loaded once; one conversation per call."""

    def __init__(self, paths: list[str], cli_vars: dict[str, Any], selection: Selection, cache_dir: str | None,
                 cwd: str) -> None:
        from evalspec.config.loader import load_suites
        from evalspec.plan import build_plan
        from evalspec.providers.factory import ProviderPool

        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.chdir(cwd)
        self.suites = load_suites(list(paths), cli_vars)
        self.plan = build_plan(self.suites, selection)
        self.pool = ProviderPool(self.suites, Path(cache_dir) if cache_dir else None)

    async def run(self, index: int) -> dict[str, Any]:
        from evalspec.runner import run_instance

        return await run_instance(self.plan[index], self.pool)


CONNECT_TIMEOUT = 5.0  # seconds to reach a cluster's head before giving up (exit 2)


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


class RayExecutor:
    def __init__(self, config: RayConfig, concurrency: int, cache_dir: Path | None) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError([Problem("--executor ray", None, "", "ray is not installed: pip install 'evalspec[ray]'")]) from None
        self.ray: Any = ray
        if not ray.is_initialized():
            if config.address:
                check_reachable(config.address)
            try:
                ray.init(address=config.address, include_dashboard=False, log_to_driver=False,
                         ignore_reinit_error=True)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError([Problem("--address", None, "", f"cannot join the Ray cluster "
                                           f"{config.address or '(local)'}: {exc}")]) from None
        actors = max(1, min(int(self.ray.cluster_resources().get("CPU", 1)), concurrency))
        per_actor = max(1, math.ceil(concurrency / actors))
        remote: Any = ray.remote(num_cpus=0)(ConversationWorker)
        self.workers: list[Any] = [remote.options(max_concurrency=per_actor).remote(
            config.paths, config.cli_vars, config.selection, str(cache_dir.resolve()) if cache_dir else None,
            os.getcwd()) for _ in range(actors)]
        self._next = 0

    async def run(self, instance: Instance, index: int) -> dict[str, Any]:
        worker = self.workers[self._next % len(self.workers)]
        self._next += 1
        try:
            record: dict[str, Any] = await worker.run.remote(index)
        except self.ray.exceptions.RayError as exc:
            raise ConfigError([Problem("--executor ray", None, "", f"ray worker failed: {exc}")]) from exc
        record["key"], record["suite"] = instance.key, str(instance.suite.path)
        return record

    async def aclose(self) -> None:
        for worker in self.workers:
            self.ray.kill(worker)
        await asyncio.sleep(0)
