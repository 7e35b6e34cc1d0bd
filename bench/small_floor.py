"""The floor under the small-run target: the same 100 conversations × 5 turns as bench_scale.py's small run,
played by a bare script with no checks, no journal and no run.json, through one HTTP client.

    python bench/small_floor.py KIND URL

KIND is the client:
  - `streams`: HTTP/1.1 written by hand on asyncio streams (one keep-alive connection a conversation) —
    what Python itself costs, with no HTTP library;
  - `aiohttp`: aiohttp's ClientSession alone;
  - `httpx`: httpx over aiohttp's transport (httpx-aiohttp), the client evalspec's `http:` bots use.

bench_scale.py runs each in a child process and measures it as it measures `evalspec run`: the wall time
of the whole process, imports included, against the same ideal (5 × 50 ms + `evalspec --version`).
Each conversation sends the whole history and reads `reply` from the answer, as `http:` does.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

TURNS = ["你好", "续航多少？", "能分期吗？", "首付多少？", "好的，谢谢"]
CONVERSATIONS = 100

Send = Callable[[list[dict[str, str]]], Awaitable[str]]


async def conversation(send: Send) -> None:
    history: list[dict[str, str]] = []
    for text in TURNS:
        history.append({"role": "user", "content": text})
        history.append({"role": "assistant", "content": await send(history)})


async def streams(url: str) -> None:
    parts = urlsplit(url)

    async def one() -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)

        async def send(history: list[dict[str, str]]) -> str:
            body = json.dumps({"messages": history}).encode()
            writer.write(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                         % (parts.path.encode(), parts.netloc.encode(), len(body)) + body)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            return str(json.loads(await reader.readexactly(length))["reply"])

        await conversation(send)
        writer.close()

    await asyncio.gather(*(one() for _ in range(CONVERSATIONS)))


async def with_aiohttp(url: str) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async def send(history: list[dict[str, str]]) -> str:
            async with session.post(url, json={"messages": history}) as response:
                return str((await response.json())["reply"])

        await asyncio.gather(*(conversation(send) for _ in range(CONVERSATIONS)))


async def with_httpx(url: str) -> None:
    import httpx
    from httpx_aiohttp import AiohttpTransport

    async with httpx.AsyncClient(transport=AiohttpTransport()) as client:
        async def send(history: list[dict[str, str]]) -> str:
            return str((await client.post(url, json={"messages": history})).json()["reply"])

        await asyncio.gather(*(conversation(send) for _ in range(CONVERSATIONS)))


CLIENTS = {"streams": streams, "aiohttp": with_aiohttp, "httpx": with_httpx}

if __name__ == "__main__":
    asyncio.run(CLIENTS[sys.argv[1]](sys.argv[2]))
