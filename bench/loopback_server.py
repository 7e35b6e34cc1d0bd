"""A loopback OpenAI-compatible chat server (and a plain HTTP chatbot) that answers after a fixed latency.

Run as a separate process by the benchmarks (`with serving(LATENCY_MS, ...) as base:`), or by hand:
`python bench/loopback_server.py PORT LATENCY_MS [TOOL_ROUNDS [RPS [RETRY_AFTER]]]` (PORT 0: any free port;
the port is printed on the first line of standard output once the server listens).
With TOOL_ROUNDS > 0, a request that declares `tools` is answered with a `lookup` tool call until the
turn has had that many rounds, then with text (an agent turn of TOOL_ROUNDS + 1 model calls).
With RPS > 0 (bench_ratelimit.py), chat calls go through a token bucket of RPS tokens a second (RPS deep):
a call that finds it empty is answered 429 at once, with `Retry-After` (whole seconds until the next
token, as real APIs send) when RETRY_AFTER is 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

from aiohttp import web

STATS = {"calls": 0, "limited": 0}


class Bucket:
    """`rate` tokens a second, at most `rate` kept; a call takes one or is refused."""

    def __init__(self, rate: float) -> None:
        self.rate, self.tokens, self.at = rate, rate, time.monotonic()

    def take(self) -> float:
        """0 when a token was taken, else the seconds until the next one."""
        now = time.monotonic()
        self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


async def chat(request: web.Request) -> web.Response:
    body = await request.json()
    bucket = request.app["bucket"]
    if bucket is not None and (wait := bucket.take()):
        STATS["limited"] += 1
        headers = {"retry-after": str(max(1, math.ceil(wait)))} if request.app["retry_after"] else {}
        return web.json_response({"error": {"message": "rate limit exceeded", "type": "requests"}},
                                 status=429, headers=headers)
    STATS["calls"] += 1
    await asyncio.sleep(request.app["latency"])
    messages = body["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    last = messages[last_user]["content"]
    rounds = sum(1 for m in messages[last_user + 1:] if m["role"] == "assistant")
    if body.get("tools") and rounds < request.app["tool_rounds"]:
        call = {"id": f"call_{last_user}_{rounds}", "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"query": last}, ensure_ascii=False)}}
        return web.json_response({
            "id": "bench", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                         "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
        })
    return web.json_response({
        "id": "bench", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"收到：{last}"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
    })


async def bot(request: web.Request) -> web.Response:
    body = await request.json()
    STATS["calls"] += 1
    await asyncio.sleep(request.app["latency"])
    return web.json_response({"reply": f"收到：{body['messages'][-1]['content']}"})


async def stats(request: web.Request) -> web.Response:
    return web.Response(text=json.dumps(STATS))


@contextlib.contextmanager
def serving(latency_ms: float, tool_rounds: int = 0, rps: float = 0.0, retry_after: bool = False) -> Iterator[str]:
    """This server in a process of its own (as a real bot's is), listening: its base URL. Nothing polls: the
    child prints its port once its socket listens, and connections wait in the backlog until it accepts."""
    server = subprocess.Popen([sys.executable, __file__, "0", str(latency_ms), str(tool_rounds), str(rps),
                               "1" if retry_after else "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"the loopback server did not start (exit {server.wait()})")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    port, latency_ms = int(sys.argv[1]), float(sys.argv[2])
    app = web.Application()
    app["latency"] = latency_ms / 1000
    app["tool_rounds"] = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    rps = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    app["bucket"] = Bucket(rps) if rps > 0 else None
    app["retry_after"] = len(sys.argv) > 5 and sys.argv[5] == "1"
    app.add_routes([web.post("/v1/chat/completions", chat), web.post("/bot", bot), web.get("/stats", stats)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    sock.listen(512)
    print(sock.getsockname()[1], flush=True)
    web.run_app(app, sock=sock, print=None, access_log=None)


if __name__ == "__main__":
    main()
