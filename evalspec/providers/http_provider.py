"""`http:` providers: any HTTP chatbot, through httpx.

url, headers and body are templates (`{{ message }}`, `{{ thread_id }}`, `{{ messages }}`, suite vars);
`response` is a JMESPath into the JSON reply (a list of texts is joined by a newline); `state` and
`parts` JMESPaths read the bot's state and the turn's messages (docs/en/state.md), `finish_reason` why the
model behind it stopped. `stateful: true` sends only the new message with a
thread id stable within one conversation; otherwise the whole history goes as `messages`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import jmespath
from jmespath.visitor import TreeInterpreter

from evalspec.config.interpolate import is_template, render_value
from evalspec.core import jsontext
from evalspec.core.errors import ProviderError, TemplateProblem
from evalspec.extend.kinds import SuiteView, provider_kind
from evalspec.extend.provider import (
    CallContext,
    ProviderResponse,
    as_parts,
    normalize_finish_reason,
    url_problem,
)
from evalspec.extend.replies import found_text, reply
from evalspec.extend.transcript import ChatMessage
from evalspec.providers.openai_compat import (
    json_body,
    load_transport,
    make_client,
    parsed_url,
    status_error,
    transport_error,
)

if TYPE_CHECKING:
    import http.cookiejar

    import httpx

    from evalspec.config.model import ProviderSpec

MAX_RESPONSE_BYTES = 10 * 1024 * 1024  # http.max_response_bytes: a larger answer is an error, not a run out of memory
COOKIES = "http:cookies"  # CallContext.conversation's key: the cookies this conversation's bot set (docs/en/providers.md#cookies)
GUESSES = ("content", "reply", "response", "answer", "message", "text", "output", "choices[0].message.content",
           "data.reply", "data.content")


class Body:
    """A 2xx response's status and body, read once (docs/en/scale-and-ray.md#start-up): its JSON is parsed
    on first use, for the reply, the tool calls, the state, the parts and the finish reason alike, and no
    second httpx.Response is built per call. `json()` and `text` read as httpx's do."""

    __slots__ = ("_json", "_response", "content", "status_code")

    def __init__(self, response: httpx.Response, content: bytes) -> None:
        self._response = response  # the streamed response: its headers (the charset)
        self.content = content
        self.status_code = response.status_code
        self._json: tuple[Any, ValueError | None] | None = None

    def json(self) -> Any:
        if self._json is None:
            try:
                self._json = (jsontext.loads(self.content), None)
            except ValueError as exc:  # not JSON, or not text (UnicodeDecodeError)
                self._json = (None, exc)
        data, problem = self._json
        if problem is not None:
            raise problem
        return data

    @property
    def text(self) -> str:
        return self.content.decode(self._response.encoding or "utf-8", errors="replace")


class HttpProvider:
    def __init__(self, pid: str, config: Mapping[str, object], variables: Mapping[str, object] | None = None) -> None:
        self.id = pid
        http = config["http"]  # the `http:` mapping as written, checked against HTTP_SCHEMA by the loader
        self.http = dict(http) if isinstance(http, Mapping) else {}
        self.vars = dict(variables or {})
        self.method = str(self.http.get("method", "POST")).upper()
        self.stateful = http_stateful(config)
        self.path = self.http.get("response")
        self._expr = jmespath.compile(self.path) if self.path else None
        self._calls_expr = jmespath.compile(self.http["tool_calls"]) if self.http.get("tool_calls") else None
        self._calls_path = calls_path(self._calls_expr.parsed) if self._calls_expr is not None else None
        self._state_expr = jmespath.compile(self.http["state"]) if self.http.get("state") else None
        self._parts_expr = jmespath.compile(self.http["parts"]) if self.http.get("parts") else None
        self._finish_expr = jmespath.compile(self.http["finish_reason"]) if self.http.get("finish_reason") else None
        self.max_bytes = int(self.http.get("max_response_bytes") or MAX_RESPONSE_BYTES)
        self._client: httpx.AsyncClient | None = None
        url = self.http.get("url")  # one plain http:// URL (not a template): its client needs no certificates
        self._tls = not (isinstance(url, str) and url[:7].lower() == "http://" and not is_template(url))

    def cache_identity(self) -> dict[str, object]:
        return {"http": {k: v for k, v in self.http.items() if k not in ("timeout", "max_response_bytes")},
                "vars": self.vars}

    def cache_request(self, messages: list[ChatMessage], context: CallContext) -> tuple[str, dict[str, str], Any]:
        """The request as sent, with `{{ thread_id }}` left a placeholder (the cache key's request part)."""
        return self._request(messages, context, thread_id="{{ thread_id }}")

    def _request(self, messages: list[ChatMessage], context: CallContext,
                 thread_id: str | None = None) -> tuple[str, dict[str, str], Any]:
        message = messages[-1]["content"]
        thread_id = context.thread_id if thread_id is None else thread_id
        variables = {**self.vars, **context.vars, "message": message, "thread_id": thread_id,
                     "messages": messages, "turn": context.turn,
                     "state": context.state if context.state is not None else {}}  # the test's seed (docs/en/state.md)
        try:
            url = str(render_value(self.http["url"], variables))
            headers = {str(k): str(render_value(v, variables)) for k, v in (self.http.get("headers") or {}).items()}
            wrong = next((p for k, v in headers.items() if (p := header_problem(k, v)) is not None), None)
            if wrong is not None:  # a template rendered to text that HTTP cannot send
                raise ProviderError(f"{self.id}: {wrong}")
            if "body" in self.http:
                body = render_value(self.http["body"], variables)
            elif self.stateful:
                body = {"message": message, "thread_id": thread_id}
            else:
                body = {"messages": messages}
        except TemplateProblem as exc:
            raise ProviderError(f"{self.id}: {exc}") from None
        return url, headers, body

    async def respond(self, messages: list[ChatMessage], context: CallContext) -> ProviderResponse:
        import httpx  # loaded with the transport, before the run's first call: a look-up here

        url, headers, body = self._request(messages, context)
        if self._client is None:
            self._client = make_client(tls=self._tls, cookies=False)
        start = time.perf_counter()
        if self.method == "GET":
            sent: dict[str, Any] = {"params": body if isinstance(body, dict) else None}
        elif body is None:
            sent = {}  # (as httpx's `json=None`: no body)
        else:  # as httpx's `json=` sends it, written by orjson; a Content-Type of the suite's own stays
            sent = {"content": json_body(body)}
            if not any(name.lower() == "content-type" for name in headers):
                headers = {**headers, "Content-Type": "application/json"}
        request = self._client.build_request(self.method, parsed_url(url), headers=headers, **sent)
        send_cookies(context, request)
        try:
            response = await self._client.send(request, stream=True)
            try:
                keep_cookies(context, response)
                content = await self._read(response, url)
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            raise transport_error(exc, f"{self.id} ({url})") from exc
        latency = (time.perf_counter() - start) * 1000
        if response.status_code >= 400:
            kept = [(k, v) for k, v in response.headers.multi_items()  # the body is decoded already
                    if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
            whole = httpx.Response(response.status_code, headers=kept, content=content, request=request)
            raise status_error(whole, f"{self.id} ({url})")
        body = Body(response, content)
        metadata: dict[str, object] = {"status": body.status_code}
        calls = self._tool_calls(body, metadata)
        text, why = self._extract(body)
        state = self._read_path(body, "state", self._state_expr)
        if state is not None and not isinstance(state, dict):
            raise ProviderError(f"state path '{self.http['state']}' found {type(state).__name__}, "
                                f"expected an object (the bot's state)")
        found = self._read_path(body, "parts", self._parts_expr)
        parts = as_parts(found, f"parts path '{self.http['parts']}'") if found is not None else None
        finish = self._read_path(body, "finish_reason", self._finish_expr)
        if finish is not None and not isinstance(finish, str):
            raise ProviderError(f"finish_reason path '{self.http['finish_reason']}' found {type(finish).__name__}, "
                                "expected text (stop, length, ...)")
        # no text beside tool calls or parts is still a reply (OpenAI's `content: null`); nothing at all is none
        return reply(ProviderResponse(content="", latency_ms=latency, tool_calls=calls, metadata=metadata, state=state,
                                      parts=parts, finish_reason=normalize_finish_reason(finish),
                                      session=COOKIES in context.conversation), text, self.id, why)

    def _read_path(self, response: Body, key: str, expr: Any) -> Any:
        """What the `state:` / `parts:` / `finish_reason:` JMESPath finds, read like `response:` (docs/en/rule-self-tests.md#verdicts-that-hold,
        §24): the object holding its last key must be there (else an error naming the path); the key
        itself may be absent (None: this turn has none)."""
        if expr is None:
            return None
        path = self.http[key]
        try:
            data = response.json()
        except ValueError:
            raise ProviderError(f"response is not JSON, cannot apply {key} path '{path}': "
                                f"{response.text[:200]!r}") from None
        holder = calls_path(expr.parsed)
        if holder is None:  # a filter, function or projection: what it finds
            return expr.search(data)
        parent_expr, last = holder
        parent = data if parent_expr is None else TreeInterpreter().visit(parent_expr, data)
        if not isinstance(parent, dict) or (parent_expr is None and last not in parent):
            where = "its key" if parent_expr is None else "the object holding its last key"
            raise ProviderError(f"{key} path '{path}' found nothing: {where} is not in "
                                f"{str(data)[:200]} (check the path)")
        return parent.get(last)

    async def _read(self, response: httpx.Response, url: str) -> bytes:
        """The body, read as it streams in and refused once it passes `max_response_bytes` (never loaded whole first)."""
        limit = self.max_bytes
        too_big = ProviderError(f"{self.id} ({url}): the response is larger than {limit:,} bytes "
                                f"(http.max_response_bytes); raise the limit if the bot really answers this much")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit and "content-encoding" not in response.headers:
            raise too_big
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise too_big
            chunks.append(chunk)
        return b"".join(chunks)

    def _tool_calls(self, response: Body, metadata: dict[str, object]) -> list[Any] | None:
        """The calls the bot reports (`tool_calls:` JMESPath), read like a `response:` path: the object that
        holds the last key exists but lacks it, or holds null, means no calls; a missing earlier key (or the
        missing only key of a one-key path) is an error naming the path. `metadata["tool_calls_path"]`
        records whether the key was there, so a path that never matched can be reported."""
        if self._calls_expr is None:
            return None
        path = self.http["tool_calls"]
        try:
            data = response.json()
        except ValueError:
            raise ProviderError(f"{self.id}: response is not JSON, cannot apply tool_calls path '{path}': "
                                f"{response.text[:200]!r}") from None
        if self._calls_path is None:  # a filter, function or projection: what it finds, or no calls
            found = self._calls_expr.search(data)
            present = found is not None
        else:
            parent_expr, key = self._calls_path
            parent = data if parent_expr is None else TreeInterpreter().visit(parent_expr, data)
            if not isinstance(parent, dict) or (parent_expr is None and key not in parent):
                where = "its key" if parent_expr is None else "the object holding its last key"
                raise ProviderError(f"{self.id}: tool_calls path '{path}' found nothing: {where} is not in "
                                    f"{str(data)[:200]} (check the path)")
            present, found = key in parent, parent.get(key)
        metadata["tool_calls_path"] = {"path": path, "found": present}
        if found is not None and not isinstance(found, list):
            raise ProviderError(f"{self.id}: tool_calls path '{path}' found "
                                f"{type(found).__name__}, expected a list of calls")
        return found or None

    def _extract(self, response: Body) -> tuple[str | None, str]:
        """The reply text the response holds (None: none), and why it holds none."""
        try:
            data = response.json()
        except ValueError:
            if self._expr is not None:
                raise ProviderError(f"{self.id}: response is not JSON, cannot apply '{self.path}': "
                                    f"{response.text[:200]!r}") from None
            if not response.content.strip():
                return None, f"the response body is empty (HTTP {response.status_code})"
            return response.text, ""
        if self._expr is not None:
            text = found_text(self._expr.search(data), f"{self.id}: response path '{self.path}'")
            return text, f"response path '{self.path}' found nothing in {str(data)[:200]}"
        if isinstance(data, str):
            return data, ""
        for guess in GUESSES:
            value = jmespath.search(guess, data)
            if isinstance(value, str):
                return value, ""
        return None, f"cannot find the reply in {str(data)[:200]}; set `response:` (a JMESPath)"

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


class _SetCookies:
    """What http.cookiejar reads of an answer (`info().get_all`): its `Set-Cookie` values read as UTF-8,
    to go back byte for byte (httpx would read `café` as Latin-1 text when another header is not UTF-8)."""

    def __init__(self, response: httpx.Response) -> None:
        self.values = [v.decode("utf-8", "surrogateescape") for k, v in response.headers.raw if k.lower() == b"set-cookie"]

    def info(self) -> _SetCookies:
        return self

    def get_all(self, name: str, default: list[str]) -> list[str]:
        return self.values if name.lower() == "set-cookie" else default


def keep_cookies(context: CallContext, response: httpx.Response) -> None:
    """Keep the cookies an answer sets (`Set-Cookie`, an error's or a retried 429's too) for this
    conversation alone, as a browser tab would (docs/en/providers.md#cookies)."""
    if "set-cookie" in response.headers:
        import urllib.request

        jar: http.cookiejar.CookieJar | None = context.conversation.get(COOKIES)
        if jar is None:
            jar = context.conversation[COOKIES] = conversation_jar()
        jar.extract_cookies(_SetCookies(response), urllib.request.Request(str(response.request.url)))  # type: ignore[arg-type]


def send_cookies(context: CallContext, request: httpx.Request) -> None:
    """Send back the cookies this conversation's bot set, which its URL's host and path still take (a
    `Cookie` of the suite's `headers:` is sent as written instead, docs/en/providers.md#cookies), each
    byte as it came."""
    jar: http.cookiejar.CookieJar | None = context.conversation.get(COOKIES)
    if jar is None or "cookie" in request.headers:
        return
    import urllib.request

    asked = urllib.request.Request(str(request.url), method=request.method)
    jar.add_cookie_header(asked)
    value = asked.get_header("Cookie")
    if value:
        import httpx

        request.headers = httpx.Headers([*request.headers.raw, (b"Cookie", value.encode("utf-8", "surrogateescape"))])


LOOPBACK = ("localhost", "127.0.0.1", "::1")  # hosts a browser holds for secure over plain http


@lru_cache(maxsize=1)
def _cookie_policy() -> type[http.cookiejar.DefaultCookiePolicy]:
    """http.cookiejar's policy, but as a browser: a cookie whose `Domain` is the request's host itself
    (`localhost`, a compose service `bot`) is kept and sent back (http.cookiejar wants a dot in it), and a
    `Secure` one goes back to a bot on this machine over plain http (browsers hold `localhost` and
    127.0.0.1 for secure); one with a control character in it is dropped, as browsers drop it (HTTP
    cannot send it back). (Made on first use: http.cookiejar is loaded with httpx, not with every run.)"""
    import http.cookiejar
    import urllib.parse
    import urllib.request

    def own_host(cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
        return cookie.domain.lstrip(".").lower() == urllib.parse.urlsplit(request.get_full_url()).hostname

    class HostPolicy(http.cookiejar.DefaultCookiePolicy):
        def set_ok(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
            text = cookie.name + (cookie.value or "")
            return not any(c < " " and c != "\t" or c == "\x7f" for c in text) and super().set_ok(cookie, request)

        def set_ok_domain(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
            return own_host(cookie, request) or super().set_ok_domain(cookie, request)

        def return_ok_domain(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
            return own_host(cookie, request) or super().return_ok_domain(cookie, request)

        def return_ok_secure(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
            host = urllib.parse.urlsplit(request.get_full_url()).hostname
            return host in LOOPBACK or super().return_ok_secure(cookie, request)

    return HostPolicy


def conversation_jar() -> http.cookiejar.CookieJar:
    """An empty cookie jar for one conversation (docs/en/providers.md#cookies)."""
    import http.cookiejar

    return http.cookiejar.CookieJar(_cookie_policy()())


def calls_path(node: dict[str, Any]) -> tuple[dict[str, Any] | None, str] | None:
    """(the expression of the object holding the last key, or None for the response itself; the last key)
    of a path that ends in a plain key (`actions`, `choices[0].message.tool_calls`), else None."""
    if node["type"] == "field":
        return None, str(node["value"])
    children = node["children"]
    if node["type"] == "subexpression" and children[-1]["type"] == "field":
        parent = children[0] if len(children) == 2 else {**node, "children": children[:-1]}
        return parent, str(children[-1]["value"])
    return None


# -- the `http` kind -----------------------------------------------------------------------------

HTTP_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "minLength": 1},
        "method": {"enum": ["POST", "PUT", "GET", "PATCH", "post", "put", "get", "patch"]},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "body": {"description": "JSON body template ({{ message }}, {{ thread_id }}, {{ messages }}, vars)"},
        "response": {"type": "string", "description": "JMESPath into the JSON response"},
        "stateful": {"type": "boolean"},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "tool_calls": {"type": "string", "description": "JMESPath to the tool calls the bot reports"},
        "state": {"type": "string", "description": "JMESPath to the bot's state after the turn (docs/en/state.md)"},
        "parts": {"type": "string", "description": "JMESPath to the turn's messages {text, buttons, image, custom}"},
        "finish_reason": {"type": "string", "description": "JMESPath to why the model stopped "
                                                           "(stop, length, content_filter, tool_calls)"},
        "max_response_bytes": {"type": "integer", "minimum": 1,
                               "description": "a larger response is an error (default 10 MiB)"},
    },
    "additionalProperties": False,
    "required": ["url"],
}


def http_url_problems(raw: Mapping[str, object]) -> list[tuple[tuple[str, ...], str]]:
    """A written (not templated) URL that is not http(s)://host/..., and a header that is not ASCII,
    with their keys."""
    http = raw["http"]
    url = http.get("url") if isinstance(http, dict) else None
    wrong = url_problem(url) if isinstance(url, str) and not is_template(url) else None
    found: list[tuple[tuple[str, ...], str]] = [(("http", "url"), f"provider '{raw.get('id')}': {wrong}")] if wrong else []
    headers = http.get("headers") if isinstance(http, dict) else None
    for name, value in headers.items() if isinstance(headers, dict) else ():
        if (problem := header_problem(str(name), value)) is not None:
            found.append((("http", "headers", name), f"provider '{raw.get('id')}': {problem}"))
    return found


def header_problem(name: str, value: Any) -> str | None:
    """HTTP sends a header's name and value as ASCII: a character pasted from elsewhere (a curly quote, a
    full-width space, Chinese text) would fail every call. The value itself is never quoted (it may be a
    secret): the character and its position are (docs/en/providers.md#http)."""
    for what, text in (("name", name), ("value", value if isinstance(value, str) else "")):
        bad = next(((i, c) for i, c in enumerate(text) if not c.isascii()), None)
        if bad is not None:
            return (f"header '{name}' has a character that is not ASCII in its {what} ({bad[1]!r}, U+{ord(bad[1]):04X}, at position "
                    f"{bad[0] + 1}): HTTP headers are ASCII; retype it")
    return None


def http_problems(config: Mapping[str, object]) -> list[str]:
    """A missing or malformed URL, or a JMESPath that does not compile, found before any call."""
    http = config.get("http") or {}
    if not isinstance(http, dict):  # `http: http://…`: the schema's problem names it, with its line
        return []
    url = http.get("url")
    problems = []
    if not isinstance(url, str) or not url:
        return ["http needs a `url`"]
    if not is_template(url) and (wrong := url_problem(url)):
        problems.append(wrong)
    for key in ("response", "tool_calls", "state", "parts", "finish_reason"):
        if http.get(key):
            try:
                jmespath.compile(http[key])
            except jmespath.exceptions.JMESPathError as exc:
                problems.append(f"bad JMESPath in `{key}`: {exc}")
    return problems


def http_stateful(config: Mapping[str, object]) -> bool:
    http = config.get("http")
    return isinstance(http, dict) and bool(http.get("stateful"))


def prepare_http(spec: ProviderSpec) -> None:
    """The transport, imported before the run's first call (not on the event loop mid-run)."""
    load_transport()


@provider_kind("http", schema=HTTP_SCHEMA, check=http_url_problems, stateful=http_stateful,
               preflight=lambda spec, suite: http_problems(spec.config), prepare=prepare_http,
               doc="any HTTP chatbot: templated url/headers/body, JMESPath response, stateful or not")
def build_http(spec: ProviderSpec, suite: SuiteView) -> HttpProvider:
    return HttpProvider(spec.id, spec.config, suite.vars)
