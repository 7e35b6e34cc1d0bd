"""A loopback OpenAI-compatible chat server (and a plain HTTP chatbot) that answers after a fixed latency.

Run as a separate process by bench_run.py: `python bench/loopback_server.py PORT LATENCY_MS`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from aiohttp import web

STATS = {"calls": 0}


async def chat(request: web.Request) -> web.Response:
    body = await request.json()
    STATS["calls"] += 1
    await asyncio.sleep(request.app["latency"])
    last = next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")
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


def main() -> None:
    port, latency_ms = int(sys.argv[1]), float(sys.argv[2])
    app = web.Application()
    app["latency"] = latency_ms / 1000
    app.add_routes([web.post("/v1/chat/completions", chat), web.post("/bot", bot), web.get("/stats", stats)])
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, backlog=512)


if __name__ == "__main__":
    main()
