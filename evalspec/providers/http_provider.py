"""`http:` providers: any HTTP chatbot, through httpx.

url, headers and body are templates (`{{ message }}`, `{{ thread_id }}`, `{{ messages }}`, suite vars);
`response` is a JMESPath into the JSON reply. `stateful: true` sends only the new message with a
thread id stable within one conversation; otherwise the whole history goes as `messages`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import jmespath

from evalspec.config.interpolate import TemplateProblem, is_template, render_value
from evalspec.errors import ProviderError
from evalspec.providers.base import CallContext, ProviderResponse, url_problem
from evalspec.providers.kinds import provider_kind
from evalspec.providers.openai_compat import load_transport, make_client, status_error, transport_error

if TYPE_CHECKING:
    import httpx

    from evalspec.config.model import ProviderSpec, Suite

GUESSES = ("content", "reply", "response", "answer", "message", "text", "output", "choices[0].message.content",
           "data.reply", "data.content")


class HttpProvider:
    def __init__(self, pid: str, config: dict[str, Any], variables: dict[str, Any] | None = None) -> None:
        self.id = pid
        self.http = dict(config["http"])
        self.vars = dict(variables or {})
        self.method = str(self.http.get("method", "POST")).upper()
        self.stateful = http_stateful(config)
        self.path = self.http.get("response")
        self._expr = jmespath.compile(self.path) if self.path else None
        self._calls_expr = jmespath.compile(self.http["tool_calls"]) if self.http.get("tool_calls") else None
        self._client: httpx.AsyncClient | None = None

    def cache_identity(self) -> dict[str, Any]:
        return {"http": {k: v for k, v in self.http.items() if k != "timeout"}, "vars": self.vars}

    def cache_request(self, messages: list[dict[str, Any]], context: CallContext) -> tuple[str, dict[str, str], Any]:
        """The request as sent, with `{{ thread_id }}` left a placeholder (the cache key's request part)."""
        return self._request(messages, context, thread_id="{{ thread_id }}")

    def _request(self, messages: list[dict[str, Any]], context: CallContext,
                 thread_id: str | None = None) -> tuple[str, dict[str, str], Any]:
        message = messages[-1]["content"]
        thread_id = context.thread_id if thread_id is None else thread_id
        variables = {**self.vars, **context.vars, "message": message, "thread_id": thread_id,
                     "messages": messages, "turn": context.turn}
        try:
            url = str(render_value(self.http["url"], variables))
            headers = {str(k): str(render_value(v, variables)) for k, v in (self.http.get("headers") or {}).items()}
            if "body" in self.http:
                body = render_value(self.http["body"], variables)
            elif self.stateful:
                body = {"message": message, "thread_id": thread_id}
            else:
                body = {"messages": messages}
        except TemplateProblem as exc:
            raise ProviderError(f"{self.id}: {exc}") from None
        return url, headers, body

    async def respond(self, messages: list[dict[str, Any]], context: CallContext) -> ProviderResponse:
        import httpx  # loaded with the transport, before the run's first call: a look-up here

        url, headers, body = self._request(messages, context)
        if self._client is None:
            self._client = make_client()
        start = time.perf_counter()
        try:
            if self.method == "GET":
                response = await self._client.get(url, params=body if isinstance(body, dict) else None, headers=headers)
            else:
                response = await self._client.request(self.method, url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise transport_error(exc, f"{self.id} ({url})") from exc
        latency = (time.perf_counter() - start) * 1000
        if response.status_code >= 400:
            raise status_error(response, f"{self.id} ({url})")
        return ProviderResponse(content=self._extract(response), latency_ms=latency,
                                tool_calls=self._tool_calls(response), metadata={"status": response.status_code})

    def _tool_calls(self, response: httpx.Response) -> list[Any] | None:
        """The calls the bot reports (`tool_calls:` JMESPath); nothing found means no calls."""
        if self._calls_expr is None:
            return None
        try:
            found = self._calls_expr.search(response.json())
        except ValueError:
            return None
        if found is not None and not isinstance(found, list):
            raise ProviderError(f"{self.id}: tool_calls path '{self.http['tool_calls']}' found "
                                f"{type(found).__name__}, expected a list of calls")
        return found or None

    def _extract(self, response: httpx.Response) -> str:
        try:
            data = response.json()
        except ValueError:
            if self._expr is not None:
                raise ProviderError(f"{self.id}: response is not JSON, cannot apply '{self.path}': "
                                    f"{response.text[:200]!r}") from None
            if not response.content.strip():
                raise ProviderError(f"{self.id}: no reply: the response body is empty "
                                    f"(HTTP {response.status_code})") from None
            return response.text
        if self._expr is not None:
            value = self._expr.search(data)
            if value is None:
                raise ProviderError(f"{self.id}: no reply: response path '{self.path}' found nothing in "
                                    f"{str(data)[:200]}")
            if isinstance(value, (dict, list)):
                raise ProviderError(f"{self.id}: response path '{self.path}' found {type(value).__name__}, "
                                    f"not text: {str(value)[:200]}")
            return value if isinstance(value, str) else str(value)
        if isinstance(data, str):
            return data
        for guess in GUESSES:
            value = jmespath.search(guess, data)
            if isinstance(value, str):
                return value
        raise ProviderError(f"{self.id}: cannot find the reply in {str(data)[:200]}; set `response:` (a JMESPath)")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


# -- the `http` kind -----------------------------------------------------------------------------

HTTP_SCHEMA: dict[str, Any] = {
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
    },
    "additionalProperties": False,
    "required": ["url"],
}


def http_url_problems(raw: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """A written (not templated) URL that is not http(s)://host/..., with its key."""
    url = raw["http"].get("url") if isinstance(raw["http"], dict) else None
    wrong = url_problem(url) if isinstance(url, str) and not is_template(url) else None
    return [(("http", "url"), f"provider '{raw.get('id')}': {wrong}")] if wrong else []


def http_problems(config: dict[str, Any]) -> list[str]:
    """A missing or malformed URL, or a JMESPath that does not compile, found before any call."""
    http = config.get("http") or {}
    url = http.get("url")
    problems = []
    if not isinstance(url, str) or not url:
        return ["http needs a `url`"]
    if not is_template(url) and (wrong := url_problem(url)):
        problems.append(wrong)
    for key in ("response", "tool_calls"):
        if http.get(key):
            try:
                jmespath.compile(http[key])
            except jmespath.exceptions.JMESPathError as exc:
                problems.append(f"bad JMESPath in `{key}`: {exc}")
    return problems


def http_stateful(config: dict[str, Any]) -> bool:
    http = config.get("http")
    return isinstance(http, dict) and bool(http.get("stateful"))


def prepare_http(spec: ProviderSpec) -> None:
    """The transport, imported before the run's first call (not on the event loop mid-run)."""
    load_transport()


@provider_kind("http", schema=HTTP_SCHEMA, check=http_url_problems, stateful=http_stateful,
               preflight=lambda spec, suite: http_problems(spec.config), prepare=prepare_http,
               doc="any HTTP chatbot: templated url/headers/body, JMESPath response, stateful or not")
def build_http(spec: ProviderSpec, suite: Suite) -> HttpProvider:
    return HttpProvider(spec.id, spec.config, suite.vars)
