"""A lean client for the OpenAI chat-completions protocol (local vLLM / llama.cpp / Ollama, OpenAI itself).

litellm costs ~10 ms of CPU per call and seconds to import; for OpenAI-compatible endpoints this
client speaks the same protocol directly over httpx and maps failures to the same classes:
429 / 5xx / time-outs / refused connections are retryable (`Retry-After` honoured), other 4xx are not.
Costs come from litellm's bundled price map, read as JSON without importing litellm.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalspec.core import jsontext
from evalspec.core.errors import ProviderError
from evalspec.extend.provider import ProviderResponse, normalize_finish_reason
from evalspec.extend.replies import message_text, reply
from evalspec.extend.transcript import ChatMessage

if TYPE_CHECKING:
    import http.cookiejar
    from collections.abc import Callable

    import aiohttp
    import httpx



@lru_cache(maxsize=1)
def load_transport() -> Callable[..., httpx.AsyncBaseTransport] | None:
    """httpx and aiohttp's transport class for it (None when httpx-aiohttp is missing), imported once.

    Importing them takes ~0.5 s (aiohttp builds its SSL contexts at import), so they are not imported
    with this module, which every run loads; a run imports them before its first call instead (each
    kind's `prepare`, from `plan_preflight.check_plan`), never on the event loop mid-run."""
    import_httpx()
    try:
        from httpx_aiohttp import AiohttpTransport
    except ImportError:  # pragma: no cover - httpx-aiohttp is a dependency
        return None
    return AiohttpTransport


def import_httpx() -> None:
    """Import httpx without its command line: `import httpx` also imports `httpx._main` (pygments' lexer
    table, rich.syntax: ~25 ms of a run's start, docs/en/scale-and-ray.md#start-up) for the `httpx` shell
    command, which evalspec never runs. Held out while httpx loads, that import fails and httpx defines
    its own stand-in `httpx.main` (its `except ImportError`); `import httpx._main` works again after."""
    if "httpx" in sys.modules:
        return
    held = "httpx._main" not in sys.modules
    if held:
        sys.modules["httpx._main"] = None  # type: ignore[assignment]  # None: "not importable"
    try:
        import httpx  # noqa: F401
    finally:
        if held and sys.modules.get("httpx._main", sys) is None:
            del sys.modules["httpx._main"]


def prepare_client() -> None:
    """Load what the client's first call would otherwise load on the event loop: the transport and
    the price map (a 3 MB JSON file)."""
    load_transport()
    price_map()


@lru_cache(maxsize=1)
def price_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin).parent / "model_prices_and_context_window_backup.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def price(model: str, prompt_tokens: int | None, completion_tokens: int | None,
          cached_tokens: int | None = None) -> float | None:
    """USD for a call, from litellm's price map (None when the model is not priced). The prompt tokens a
    prompt cache served (`cached_tokens`, part of `prompt_tokens`) cost the cached price where it is known."""
    prices = price_map()
    entry = prices.get(model) or prices.get(model.split("/", 1)[-1])
    if not isinstance(entry, dict) or prompt_tokens is None:
        return None
    inp = entry.get("input_cost_per_token") or 0.0
    out = entry.get("output_cost_per_token") or 0.0
    cached = min(cached_tokens or 0, prompt_tokens)
    read = entry.get("cache_read_input_token_cost")
    cached_price = float(read) if isinstance(read, (int, float)) and cached else inp
    return float((prompt_tokens - cached) * inp + cached * cached_price + (completion_tokens or 0) * out)


def cached_count(usage: Any) -> int | None:
    """The prompt tokens a provider's prompt cache served, from a usage object or mapping: OpenAI's
    `prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`, DeepSeek's
    `prompt_cache_hit_tokens`; None when the usage does not say."""
    def get(obj: Any, key: str) -> Any:
        return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)

    for value in (get(get(usage, "prompt_tokens_details"), "cached_tokens"), get(usage, "cache_read_input_tokens"),
                  get(usage, "prompt_cache_hit_tokens")):
        found = count(value)
        if found is not None:
            return found
    return None


def retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime  # an HTTP date: rare (docs/en/scale-and-ray.md#start-up)

    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def status_error(response: httpx.Response, what: str) -> ProviderError:
    """An HTTP error status as a ProviderError, retryable for 408/409/429 and 5xx."""
    body = response.text[:300].strip()
    try:
        data = response.json()
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            body = str(data["error"].get("message") or body)
    except ValueError:
        pass
    code = response.status_code
    # a server error naming the structured-output request (llama-cpp-python's 500) repeats on every retry
    retryable = (code in (408, 409, 429) or code >= 500) and not about_format(body)
    kind = {401: "authentication failed", 403: "forbidden", 404: "not found", 429: "rate limited"}.get(code, "error")
    return ProviderError(f"{what}: HTTP {code} {kind}: {body}", retryable=retryable,
                         retry_after=retry_after(response.headers) if retryable else None,
                         rate_limited=code in (429, 503))


def about_format(text: str) -> bool:
    """An error message about the structured-output request (`response_format`), not a passing fault."""
    return any(word in text for word in ("response_format", "json_schema", "json_object"))


def transport_error(exc: httpx.HTTPError, what: str) -> ProviderError:
    import httpx  # loaded with the transport: a look-up here
    cause = exc.__cause__
    if isinstance(exc, httpx.ConnectTimeout) and cause is not None and "Timeout" not in type(cause).__name__:
        # aiohttp's transport reports a refused connection as ConnectTimeout; say what happened
        return ProviderError(f"{what}: connection failed: {cause}", retryable=True)
    if isinstance(exc, httpx.TimeoutException):
        return ProviderError(f"{what}: timed out ({type(exc).__name__})", retryable=True)
    if isinstance(exc, (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return ProviderError(f"{what}: connection failed: {exc or type(exc).__name__}", retryable=True)
    return ProviderError(f"{what}: {type(exc).__name__}: {exc}", retryable=False)


def count(value: Any) -> int | None:
    """A token count from a server: a non-negative int, else unknown."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def reply_content(content: Any, tool_calls: Any, model: str) -> tuple[str | None, list[Any] | None]:
    """A chat message's text (None: it has none, `content: null` or parts without text) and tool calls;
    whether that is a reply is `evalspec.extend.replies.reply`'s to say. Content that is not text is an error."""
    calls = list(tool_calls) if isinstance(tool_calls, list) and tool_calls else None
    if content is not None and not isinstance(content, (str, list)):
        raise ProviderError(f"{model}: the message's content is {type(content).__name__}, not text")
    return message_text(content), calls


NULL_CONTENT = "the message's content is null (or holds no text) and it made no tool calls"


def make_client(timeout: float = 600.0, tls: bool = True, cookies: bool = True) -> httpx.AsyncClient:
    """An httpx client with pooled keep-alive connections, sized for high concurrency.

    The transport is aiohttp's (package httpx-aiohttp) when installed: measured with bench/bench_run.py,
    httpcore's pool spends ~15 ms of CPU per call at 50 connections, aiohttp's about 1 ms.
    `tls=False`: a client that only ever calls one plain `http://` URL (redirects are not followed) does
    not load the CA bundle (~40 ms of a run's start, docs/en/scale-and-ray.md#start-up); it trusts no
    certificate, so TLS, should it ever come, fails rather than goes unverified.
    Cookies are httpx's alone (aiohttp's session keeps none); `cookies=False`: the client keeps none
    either, for callers that keep each conversation's own (docs/en/providers.md#cookies).
    """
    transport = load_transport()  # imports httpx, where no `prepare` did yet
    import ssl

    import httpx

    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    verify: ssl.SSLContext | bool = True if tls else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, trusts none
    if transport is None:  # pragma: no cover - httpx-aiohttp is a dependency
        client = httpx.AsyncClient(timeout=httpx.Timeout(timeout), limits=limits, trust_env=False, verify=verify)
    else:
        context = httpx.create_ssl_context(verify=verify, trust_env=False)

        def session() -> aiohttp.ClientSession:  # as httpx-aiohttp's own, without a cookie jar of its own
            import aiohttp

            connector = aiohttp.TCPConnector(keepalive_timeout=limits.keepalive_expiry, ssl=context,
                                             limit=limits.max_connections or 0)
            return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())

        client = httpx.AsyncClient(transport=transport(limits=limits, trust_env=False, verify=context, client=session),
                                   timeout=httpx.Timeout(timeout), trust_env=False)
    if not cookies:
        client.cookies = no_cookies()()  # type: ignore[assignment]  # httpx.Cookies takes a CookieJar as its jar
    return client


@lru_cache(maxsize=1)
def no_cookies() -> type[http.cookiejar.CookieJar]:
    """A cookie jar that keeps nothing: an `http:` bot's cookies belong to one conversation, which keeps
    them itself (`CallContext.conversation`), never to the client every conversation shares. (A class made
    on first use: http.cookiejar is loaded with httpx, not with every run.)"""
    import http.cookiejar

    class NoCookies(http.cookiejar.CookieJar):
        def extract_cookies(self, response: Any, request: Any) -> None:
            return None

        def set_cookie(self, cookie: Any) -> None:
            return None

    return NoCookies


@lru_cache(maxsize=64)
def parsed_url(url: str) -> httpx.URL:
    """`url` parsed once, not on every call (parsing is a good share of a call's CPU); a URL templated per
    conversation passes through the few slots."""
    import httpx

    return httpx.URL(url)


def json_body(payload: Any) -> bytes:
    """A request's JSON body as httpx's `json=` writes it (compact, UTF-8), by orjson; a value orjson cannot
    write (an int beyond 64 bits) by the standard library."""
    try:
        return orjson.dumps(payload)
    except orjson.JSONEncodeError:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class OpenAICompatClient:
    def __init__(self, api_base: str, api_key: str | None) -> None:
        self.base = api_base.rstrip("/")
        self.headers = {"Content-Type": "application/json",
                        **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
        self._client: httpx.AsyncClient | None = None

    async def post(self, path: str, payload: dict[str, Any], what: str) -> dict[str, Any]:
        import httpx  # loaded with the transport: a look-up here

        if self._client is None:
            self._client = make_client()
        try:  # the URL parsed once; the JSON both ways by orjson (httpx's own is the standard library's)
            response = await self._client.post(parsed_url(self.base + path), content=json_body(payload),
                                               headers=self.headers)
        except httpx.HTTPError as exc:
            raise transport_error(exc, what) from exc
        if response.status_code >= 400:
            raise status_error(response, what)
        try:
            data = jsontext.loads(response.content)  # exact beyond 64 bits, a NaN read too
        except ValueError:
            raise ProviderError(f"{what}: response is not JSON: {response.text[:200]!r}", retryable=True) from None
        if not isinstance(data, dict):
            raise ProviderError(f"{what}: unexpected response {data!r:.200}")
        return data

    async def chat(self, model: str, messages: list[ChatMessage], params: Mapping[str, object]) -> ProviderResponse:
        start = time.perf_counter()
        data = await self.post("/chat/completions", {"model": model, "messages": messages, **params}, model)
        latency = (time.perf_counter() - start) * 1000
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(f"{model}: no choices in response: {json.dumps(data)[:200]}") from None
        if not isinstance(message, dict):
            raise ProviderError(f"{model}: the choice's message is {type(message).__name__}, not an object")
        text, tool_calls = reply_content(message.get("content"), message.get("tool_calls"), model)
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        prompt, completion = count(usage.get("prompt_tokens")), count(usage.get("completion_tokens"))
        total = count(usage.get("total_tokens")) or ((prompt or 0) + (completion or 0) if prompt is not None else None)
        cached = cached_count(usage)
        response = ProviderResponse(content="", latency_ms=latency, tokens=total,
                                    prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
                                    cost=price(model, prompt, completion, cached), tool_calls=tool_calls,
                                    finish_reason=normalize_finish_reason(choice.get("finish_reason")),
                                    metadata={"model": str(data.get("model", model)), "client": "openai-compatible"})
        return reply(response, text, model, NULL_CONTENT)

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        data = await self.post("/embeddings", {"model": model, "input": texts}, model)
        try:
            items = sorted(data["data"], key=lambda d: d.get("index", 0))
            return [list(map(float, item["embedding"])) for item in items]
        except (KeyError, TypeError, ValueError):
            raise ProviderError(f"{model}: malformed embeddings response") from None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
