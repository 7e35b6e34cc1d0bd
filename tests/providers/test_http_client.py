"""An `http:` provider's client (docs/en/scale-and-ray.md#start-up): a bot on one plain http:// URL gets a
client that loads no CA bundle (and trusts no certificate, so TLS could never pass unverified); an
https:// or templated URL gets the verifying client."""

from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any

import httpx

from evalspec.extend.provider import CallContext
from evalspec.providers.http_provider import HttpProvider
from evalspec.providers.openai_compat import make_client
from tests.servers import LoopbackServer, Reply


def _context(client: httpx.AsyncClient) -> ssl.SSLContext:
    transport: Any = client._transport  # the aiohttp transport holds the context its connector uses
    return transport.ssl_context  # type: ignore[no-any-return]


def test_a_plain_http_bot_is_answered_by_a_client_that_loads_no_certificates() -> None:
    with LoopbackServer(lambda method, path, body, headers: Reply(body={"data": {"reply": "收到：你好"},
                                                                        "state": {"步骤": 2}})) as server:
        provider = HttpProvider("bot", {"http": {"url": f"{server.url}/chat", "response": "data.reply",
                                                 "state": "state"}})

        async def call() -> tuple[str, object]:
            try:
                answer = await provider.respond([{"role": "user", "content": "你好"}], CallContext("t1", "t", 1))
                assert provider._client is not None
                return answer.content, _context(provider._client)
            finally:
                await provider.aclose()

        content, context = asyncio.run(call())
    assert content == "收到：你好"
    assert isinstance(context, ssl.SSLContext) and context.cert_store_stats()["x509_ca"] == 0
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname  # TLS would fail, never pass


def test_an_https_or_templated_url_gets_the_verifying_client() -> None:
    for url in ("https://bot.example/chat", "http://{{ host }}/chat"):
        assert HttpProvider("bot", {"http": {"url": url}})._tls
    assert not HttpProvider("bot", {"http": {"url": "HTTP://127.0.0.1:1/chat"}})._tls

    async def contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
        verifying, plain = make_client(), make_client(tls=False)
        try:
            return _context(verifying), _context(plain)
        finally:
            await verifying.aclose()
            await plain.aclose()

    verifying, plain = asyncio.run(contexts())
    assert verifying.cert_store_stats()["x509_ca"] > 0 and verifying.verify_mode == ssl.CERT_REQUIRED
    assert plain.cert_store_stats()["x509_ca"] == 0


def test_the_request_body_is_json_in_utf8_under_the_suites_own_content_type_or_json() -> None:
    # the body is written by orjson now (httpx's `json=` used the standard library): what a bot receives
    # must not change — compact UTF-8 JSON, `application/json` unless the suite names its own type
    seen: list[tuple[str, bytes]] = []

    def handle(method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
        seen.append((headers.get("content-type", ""), json.dumps(body, ensure_ascii=False).encode()))
        return Reply(body={"reply": "收到"})

    with LoopbackServer(handle) as server:
        plain = HttpProvider("bot", {"http": {"url": f"{server.url}/chat", "response": "reply",
                                              "body": {"问题": "{{ message }}", "n": 1.5, "ok": True, "none": None}}})
        typed = HttpProvider("bot", {"http": {"url": f"{server.url}/chat", "response": "reply",
                                              "headers": {"content-TYPE": "application/json; charset=utf-8"}}})

        async def call(provider: HttpProvider) -> str:
            try:
                return (await provider.respond([{"role": "user", "content": "能分期吗？"}],
                                               CallContext("t1", "t", 1))).content
            finally:
                await provider.aclose()

        assert asyncio.run(call(plain)) == "收到" and asyncio.run(call(typed)) == "收到"
    assert seen[0] == ("application/json", '{"问题": "能分期吗？", "n": 1.5, "ok": true, "none": null}'.encode())
    assert seen[1][0] == "application/json; charset=utf-8"
    assert json.loads(seen[1][1]) == {"messages": [{"role": "user", "content": "能分期吗？"}]}


def test_an_integer_beyond_64_bits_in_a_reply_is_read_exactly() -> None:
    # orjson reads 18446744073709551617 as the float 1.8446744073709552e+19: a check on the id then failed
    with LoopbackServer(lambda method, path, body, headers: Reply(
            body=b'{"reply": 18446744073709551617, "state": {"id": -9223372036854775809}}')) as server:
        provider = HttpProvider("bot", {"http": {"url": f"{server.url}/chat", "response": "reply", "state": "state"}})

        async def call() -> Any:
            try:
                return await provider.respond([{"role": "user", "content": "订单号？"}], CallContext("t1", "t", 1))
            finally:
                await provider.aclose()

        answer = asyncio.run(call())
    assert answer.content == "18446744073709551617" and answer.state == {"id": -9223372036854775809}
