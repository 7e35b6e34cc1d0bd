"""SPEC §23: a provider's in-flight limit adapts to its 429/503 answers (AIMD), a `Retry-After` pauses every
call to it, and the run counts them in `summary.rate_limited`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import jsonschema
from rich.console import Console

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.providers.limits import LIMITED, AdaptiveLimit
from evalspec.providers.openai_compat import status_error
from evalspec.reporters.console import ConsoleReporter, print_summary
from tests.servers import OpenAIServer, RateLimited

SCHEMA = json.loads((Path(__file__).parents[2] / "schema" / "run.schema.json").read_text(encoding="utf-8"))


def write_suite(tmp_path: Path, base: str, conversations: int, turns: int, options: str = "") -> Path:
    lines = ["providers:", "  - id: m", "    model: openai/bench-model", "    client: lean", f"    api_base: {base}",
             f"options: {{cache: false{options}}}", "tests:"]
    for i in range(conversations):
        lines += [f"  - id: c{i}", "    conversation:"]
        lines += [f"      - user: 第{i}段第{t}问" for t in range(1, turns + 1)]
        lines += ["    assert:", "      - {contains: 'echo:', scope: each_turn}"]
    path = tmp_path / "s.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_limit_halves_once_a_round_not_below_one_and_grows_after_as_many_successes() -> None:
    async def scenario() -> list[int]:
        limit = AdaptiveLimit("m", ceiling=8, in_flight=0)
        seen = [limit.limit]
        rounds = [await limit.acquire() for _ in range(8)]  # eight calls started in round 0
        limit.release(rounds[0], limited=True)  # the first 429 of round 0 cuts: 8 -> 4
        limit.release(rounds[1], limited=True)  # a call of the same round: no second cut
        seen.append(limit.limit)
        for r in rounds[2:]:
            limit.release(r)  # six successes: the first four grow 4 -> 5
        seen.append(limit.limit)
        for _ in range(4):  # each a call started after the last cut, answered 429: 5 -> 2 -> 1 -> 1 -> 1
            limit.release(await limit.acquire(), limited=True)
        seen.append(limit.limit)
        limit.release(await limit.acquire())  # one success at limit 1 -> 2
        seen.append(limit.limit)
        assert limit.limited == 6 and limit.in_flight == 0
        return seen

    assert asyncio.run(scenario()) == [8, 4, 5, 1, 2]


def test_a_call_waits_for_a_slot_of_the_adapted_limit() -> None:
    async def scenario() -> tuple[bool, bool]:
        limit = AdaptiveLimit("m", ceiling=2, in_flight=2)  # made with two calls in flight
        limit.release(0, limited=True)  # one of them answered 429: limit 1, one still in flight
        waiting = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        blocked = not waiting.done()
        limit.release(0)  # the other one answered: its slot goes to the waiting call
        await asyncio.sleep(0)
        return blocked, waiting.done()

    assert asyncio.run(scenario()) == (True, True)


def test_429_and_503_are_rate_limits_500_is_not() -> None:
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    assert [status_error(httpx.Response(code, request=request), "m").rate_limited for code in (429, 503, 500)] \
        == [True, True, False]


def test_a_rate_limited_server_gives_no_errors_and_the_run_counts_its_429s(tmp_path: Path) -> None:
    """A bucket of 50 requests a second, 2 deep, and 30 conversations at once with `retries: 1`: before, the
    herd's 429s used up the retries and conversations errored."""
    bucket = RateLimited(rate=50, burst=2, delay=0.02)
    with OpenAIServer(bucket) as server:
        path = write_suite(tmp_path, server.base, conversations=30, turns=2, options=", retries: 1")
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", concurrency=30)).data
    assert bucket.limited > 0
    assert data["summary"]["by_status"]["error"] == 0, [r["error"] for r in data["results"] if r.get("error")]
    assert data["summary"]["rate_limited"] == {"m": bucket.limited}
    assert sum(r.get("rate_limited", {}).get("m", 0) for r in data["results"]) == bucket.limited
    jsonschema.validate(data | {"results": list(data["results"])}, SCHEMA)
    console = Console(record=True, width=200)
    print_summary(console, data, {})
    assert f"rate limited (429/503 answers, retried at a lower concurrency): m {bucket.limited}" in console.export_text()


def test_retry_after_pauses_every_call_to_the_provider(tmp_path: Path) -> None:
    """The first request is answered 429 with `Retry-After: 0.4`; the other conversation's next turn waits
    out the pause too, instead of calling at once."""
    times: list[float] = []

    def script(request: dict, n: int):  # type: ignore[no-untyped-def]
        import time

        from tests.servers import Reply, echo
        times.append(time.monotonic())
        if n == 0:
            return Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0.4"})
        reply = echo(request, n)
        reply.delay = 0.05
        return reply

    with OpenAIServer(script) as server:
        path = write_suite(tmp_path, server.base, conversations=2, turns=3)
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", concurrency=2)).data
    first = times[0]
    early = [round(t - first, 3) for t in times[2:] if t - first < 0.38]  # times[1]: the call already in flight
    assert early == [], f"calls made during the Retry-After pause: {early}"
    assert data["summary"]["by_status"]["error"] == 0
    assert data["summary"]["rate_limited"] == {"m": 1}


def test_the_progress_line_names_a_limited_provider() -> None:
    LIMITED.clear()
    limit = LIMITED["shop-bot"] = AdaptiveLimit("shop-bot", ceiling=12, in_flight=0)
    limit.limit = 6
    try:
        assert "shop-bot: 6 in flight, 429s" in ConsoleReporter(quiet=True)._stats()
    finally:
        LIMITED.clear()


def test_a_quota_that_never_answers_is_still_an_error_after_the_retries(tmp_path: Path) -> None:
    """Only a 429 met while the provider answers other calls is free; a dead quota uses up `retries`."""
    bucket = RateLimited(rate=0.001, burst=0)
    with OpenAIServer(bucket) as server:
        path = write_suite(tmp_path, server.base, conversations=3, turns=1, options=", retries: 1")
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", concurrency=3)).data
    assert data["summary"]["by_status"]["error"] == 3
    assert "(after 2 attempts)" in data["results"][0]["error"]
    assert bucket.limited == 6 and data["summary"]["rate_limited"] == {"m": 6}
