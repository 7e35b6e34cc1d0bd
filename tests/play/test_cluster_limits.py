"""The cluster's limit broker knows which worker holds each `max_concurrency` slot: a worker that died
gives its slots back, once (the broker is a plain class; ray makes it an actor)."""

from __future__ import annotations

import asyncio

from evalspec.play.cluster import LimitBroker

KEY = "suite.yaml|bot@python"


async def granted(broker: LimitBroker, holder: str, wait: float = 0.2) -> bool:
    """Whether `holder` gets a slot within `wait` seconds (a wait that times out asks for nothing more)."""
    try:
        await asyncio.wait_for(broker.acquire(KEY, None, 1, holder), wait)
        return True
    except asyncio.TimeoutError:
        return False


def test_a_dropped_worker_gives_back_the_slot_it_held() -> None:
    async def go() -> tuple[bool, bool, int]:
        broker = LimitBroker()
        await broker.acquire(KEY, None, 1, "worker-0")
        before = await granted(broker, "worker-1")
        freed = broker.drop("worker-0")
        return before, await granted(broker, "worker-1"), freed

    assert asyncio.run(go()) == (False, True, 1)


def test_a_slot_granted_after_its_worker_was_dropped_goes_straight_back() -> None:
    async def go() -> bool:
        broker = LimitBroker()
        await broker.acquire(KEY, None, 1, "worker-0")
        asked = asyncio.ensure_future(broker.acquire(KEY, None, 1, "worker-1"))  # worker-1 asks, then dies
        await asyncio.sleep(0.05)
        assert broker.drop("worker-1") == 0
        broker.release(KEY, "worker-0")
        await asked  # granted to nobody alive
        return await granted(broker, "worker-2")

    assert asyncio.run(go())


def test_a_late_release_from_a_dropped_worker_frees_no_second_slot() -> None:
    async def go() -> tuple[bool, bool]:
        broker = LimitBroker()
        await broker.acquire(KEY, None, 1, "worker-0")
        broker.drop("worker-0")
        first = await granted(broker, "worker-1")
        broker.release(KEY, "worker-0")  # its release was already on the way when it was dropped
        return first, await granted(broker, "worker-2")

    assert asyncio.run(go()) == (True, False)
