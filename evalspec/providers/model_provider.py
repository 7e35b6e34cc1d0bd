"""`model:` providers: any litellm model string, with a system prompt, params and a context strategy.

OpenAI-compatible endpoints (an `api_base`, or `openai/...` models) go through the lean client in
`openai_compat` unless `client: litellm` is set; everything else goes through `litellm.acompletion`,
imported on first use (it takes seconds) with `LITELLM_LOCAL_MODEL_COST_MAP=True`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalspec.config.interpolate import names_other_vars, render_text
from evalspec.config.model import ProviderSpec
from evalspec.config.strategies import HISTORY_KEY
from evalspec.core.errors import ProviderError, TemplateProblem
from evalspec.core.model_keys import KEY_ENV, NO_KEY, split_model
from evalspec.core.suggest import did_you_mean
from evalspec.extend.kinds import SuiteView, provider_kind
from evalspec.extend.provider import CallContext, ProviderResponse, normalize_finish_reason, url_problem
from evalspec.extend.replies import reply
from evalspec.extend.transcript import ChatMessage
from evalspec.providers.history import ContextStrategy, strategy_metadata
from evalspec.providers.openai_compat import (
    NULL_CONTENT,
    OpenAICompatClient,
    about_format,
    cached_count,
    prepare_client,
    price_map,
    reply_content,
)


def import_litellm() -> Any:
    """Import litellm quietly and without network access at import time."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:  # pragma: no cover - litellm is a dependency
        raise ProviderError("litellm is not installed: pip install litellm") from exc
    litellm.suppress_debug_info = True
    litellm.drop_params = True
    return litellm


def use_lean_client(config: Mapping[str, object]) -> bool:
    """Whether calls for a model config go through the lean client (else litellm): `client:`, else
    OpenAI-compatible endpoints (an `api_base`, or OpenAI itself)."""
    choice = config.get("client", "auto")
    if choice in ("litellm", "lean"):
        return bool(choice == "lean")
    prefix, _ = split_model(str(config["model"]))
    return prefix in ("openai", "hosted_vllm", "lm_studio") and ("api_base" in config or prefix == "openai")


def open_lean_client(config: Mapping[str, object]) -> OpenAICompatClient:
    """The lean client for a model config: its `api_base` (default OpenAI's) and `api_key` (default
    the OPENAI_API_KEY environment variable)."""
    base, key = config.get("api_base"), config.get("api_key")
    return OpenAICompatClient(str(base or "https://api.openai.com/v1"),
                              str(key) if key else os.environ.get("OPENAI_API_KEY"))


class ModelProvider:
    def __init__(self, pid: str, config: Mapping[str, object], variables: Mapping[str, object] | None = None,
                 tools: Sequence[Mapping[str, object]] | None = None, test_vars: frozenset[str] = frozenset()) -> None:
        self.id = pid
        self.tools = tools
        self.config = config
        self.model = str(config["model"])
        self._variables = dict(variables or {})
        self._system_source: str | None = None  # a system prompt naming a test's vars: rendered for each test
        self.system_vars: set[str] = set()  # the test vars it names
        try:
            self.system = render_text(str(config["system"]), self._variables) if config.get("system") else None
        except TemplateProblem as exc:
            named = names_other_vars(str(config["system"]), self._variables)
            if not named or not named <= test_vars:  # a name no test has: a typo, found before any call
                raise ProviderError(f"{pid}: system: {exc}") from None
            self.system, self._system_source, self.system_vars = None, str(config["system"]), named
        params = config.get("params")
        self.params: dict[str, object] = dict(params) if isinstance(params, Mapping) else {}
        self.strategy = ContextStrategy.from_config(config)  # the pool gives summary/facts their model
        self.api_base = config.get("api_base")
        self.api_key = config.get("api_key")
        self.lean = use_lean_client(config)
        self._client: OpenAICompatClient | None = None

    def cache_identity(self) -> dict[str, object]:
        identity = {"model": self.model, "system": self.system or self._system_source, "params": self.params,
                    "history": self.strategy.identity(), "api_base": self.api_base}
        if self.tools:
            identity["tools"] = self.tools
        return identity

    async def respond(self, messages: list[ChatMessage], context: CallContext) -> ProviderResponse:
        sent, usage = await self.strategy.build(self._system_for(context), messages, context)
        return strategy_metadata(await self._chat(sent, context), usage)

    def _system_for(self, context: CallContext) -> str | None:
        """The system prompt of this call: rendered with the test's vars when it names them (the call's key
        holds the test's vars, so a cached answer is never another test's)."""
        if self._system_source is None:
            return self.system
        try:
            return render_text(self._system_source, {**self._variables, **context.vars})
        except TemplateProblem as exc:
            raise ProviderError(f"{self.id}: system: {exc}") from None

    async def _chat(self, sent: list[ChatMessage], context: CallContext) -> ProviderResponse:
        params = {**self.params, **({"tools": self.tools} if self.tools else {}), **(context.params or {})}
        if self.lean:
            if self._client is None:
                self._client = open_lean_client(self.config)
            return await self._client.chat(split_model(self.model)[1], sent, params)
        return await self._litellm(sent, params)

    async def _litellm(self, sent: list[ChatMessage], params: Mapping[str, object]) -> ProviderResponse:
        litellm = import_litellm()
        kwargs: dict[str, object] = {"model": self.model, "messages": sent, "num_retries": 0, **params}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        elif self.api_base:
            kwargs["api_key"] = "EMPTY"  # local OpenAI-compatible servers take any key; the SDK insists on one
        start = time.perf_counter()
        try:
            response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            raise litellm_error(litellm, exc, self.model) from exc
        latency = (time.perf_counter() - start) * 1000
        try:
            choice = response.choices[0]
            message = choice.message
        except (AttributeError, IndexError, TypeError):
            raise ProviderError(f"{self.model}: no choices in response") from None
        usage = getattr(response, "usage", None)
        try:
            cost = float(litellm.completion_cost(completion_response=response))
        except Exception:
            cost = None
        tool_calls = [t.model_dump() if hasattr(t, "model_dump") else t for t in (message.tool_calls or [])]
        text, _ = reply_content(message.content, tool_calls, self.model)
        answer = ProviderResponse(content="", latency_ms=latency, tokens=getattr(usage, "total_tokens", None),
                                  prompt_tokens=getattr(usage, "prompt_tokens", None),
                                  completion_tokens=getattr(usage, "completion_tokens", None),
                                  cost=cost, tool_calls=tool_calls or None, cached_tokens=cached_count(usage),
                                  finish_reason=normalize_finish_reason(getattr(choice, "finish_reason", None)),
                                  metadata={"model": getattr(response, "model", self.model), "client": "litellm"})
        return reply(answer, text, self.model, NULL_CONTENT)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def litellm_error(litellm: Any, exc: Exception, model: str) -> ProviderError:
    """litellm's exception classes -> retryable or not, as the lean client decides them."""
    retryable_types = tuple(t for t in (
        getattr(litellm, "RateLimitError", None), getattr(litellm, "Timeout", None),
        getattr(litellm, "APIConnectionError", None), getattr(litellm, "InternalServerError", None),
        getattr(litellm, "ServiceUnavailableError", None), getattr(litellm, "BadGatewayError", None),
    ) if isinstance(t, type))
    retryable = isinstance(exc, retryable_types) and not about_format(str(exc))
    after = None
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if retryable and headers is not None:
        from evalspec.providers.openai_compat import retry_after

        try:
            after = retry_after(headers)
        except Exception:
            after = None
    lines = str(getattr(exc, "message", "") or exc).strip().splitlines() if str(exc) else [type(exc).__name__]
    message = lines[0][:300]
    # a multi-line error (llama-cpp-python's pydantic 500) names the rejected format further down: keep that line
    about = next((line.strip() for line in lines[1:] if about_format(line)), None)
    if about and not about_format(message):
        message = f"{message} {about[:300]}"
    limited = tuple(t for t in (getattr(litellm, "RateLimitError", None), getattr(litellm, "ServiceUnavailableError", None))
                    if isinstance(t, type))
    return ProviderError(f"{model}: {type(exc).__name__}: {message}", retryable=retryable, retry_after=after,
                         rate_limited=isinstance(exc, limited) or getattr(exc, "status_code", None) in (429, 503))


@lru_cache(maxsize=1)
def litellm_providers() -> frozenset[str]:
    """litellm's provider names, read from its bundled JSON files (importing litellm takes seconds)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return frozenset()
    folder = Path(spec.origin).parent
    names: set[str] = set()
    try:
        endpoints = json.loads((folder / "provider_endpoints_support_backup.json").read_text(encoding="utf-8"))
        names.update(str(k) for k in endpoints.get("providers", {}))
    except (OSError, ValueError, AttributeError):
        pass
    names.update(str(v.get("litellm_provider")) for v in price_map().values()
                 if isinstance(v, dict) and v.get("litellm_provider"))
    return frozenset(names)


def model_problems(config: Mapping[str, object]) -> list[str]:
    """Missing keys or malformed endpoints, found before any call."""
    model = str(config.get("model") or "")
    if not model:
        return ["no model given"]
    problems = []
    base = config.get("api_base")
    if base is not None and (wrong := url_problem(str(base))):
        problems.append(f"api_base: {wrong}")
    prefix, _ = split_model(model)
    known = litellm_providers()
    if "/" in model and known and prefix not in known and prefix not in KEY_ENV and prefix not in NO_KEY:
        hint = did_you_mean(prefix, sorted(known))
        problems.append(f"model '{model}': '{prefix}' is not a provider litellm knows{hint}")
        return problems
    if base is None and prefix not in NO_KEY and not config.get("api_key"):
        env = KEY_ENV.get(prefix)
        if env and not os.environ.get(env):
            problems.append(f"model '{model}' needs an API key: set `api_key:` or the {env} environment variable "
                            "(or `api_base:` for a local OpenAI-compatible server)")
    return problems


class EmbeddingModel:
    """The suite's `embedder` model as a provider: `[{"texts": [...]}]` answered with the vectors in the
    response's `metadata["vectors"]` (`calls.embedding_fn` calls it through a `ProviderCaller`)."""

    def __init__(self, spec: ProviderSpec) -> None:
        self.config = spec.config
        self.model = str(self.config["model"])
        self.id = f"embedder {self.model}"
        self._client: OpenAICompatClient | None = None

    def cache_identity(self) -> dict[str, object]:
        """The key of its cache entries (the embedders' own, `{"vectors": ...}`)."""
        return {"embedder": self.model, "api_base": self.config.get("api_base")}

    async def respond(self, messages: list[ChatMessage], context: CallContext) -> ProviderResponse:
        texts = list(messages[0]["texts"])
        vectors = await self._fetch(texts)
        if len(vectors) != len(texts):
            raise ProviderError(f"{len(vectors)} vectors for {len(texts)} texts")
        return ProviderResponse(content="", metadata={"vectors": vectors})

    async def _fetch(self, texts: list[str]) -> list[list[float]]:
        config, model = self.config, self.model
        if use_lean_client(config):
            if self._client is None:
                self._client = open_lean_client(config)
            return await self._client.embed(split_model(model)[1], texts)
        litellm = import_litellm()
        kwargs = {k: config[k] for k in ("api_base", "api_key") if config.get(k)}
        try:
            response = await litellm.aembedding(model=model, input=texts, **kwargs)
        except Exception as exc:
            raise litellm_error(litellm, exc, model) from exc
        try:
            return [list(map(float, d["embedding"])) for d in response.data]
        except (KeyError, TypeError, ValueError):
            raise ProviderError(f"{model}: malformed embeddings response") from None

    async def aclose(self) -> None:
        """Close the HTTP client (the pool calls it, so no "Unclosed client session" is left behind)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


# -- the `model` kind ----------------------------------------------------------------------------

MODEL_KEYS: dict[str, dict[str, object]] = {
    "client": {"enum": ["auto", "litellm", "lean"],
               "description": "model calls: auto (lean client for OpenAI-compatible endpoints), litellm, lean"},
    "system": {"type": "string"},
    "params": {"type": "object"},
    "api_base": {"type": "string"},
    "api_key": {"type": "string"},
    "history": HISTORY_KEY,
}


def model_preflight(spec: ProviderSpec, suite: SuiteView) -> list[str]:
    """A local embedder that is not installed, a system prompt that does not render, a missing key or a
    malformed endpoint, found before any call."""
    from evalspec.providers.local_embedder import is_local, local_problems

    if is_local(spec):
        return local_problems()
    try:
        provider = ModelProvider(spec.id, spec.config, suite.vars, test_vars=test_var_names(suite))
    except ProviderError as exc:
        return [str(exc)]
    return system_problems(provider, spec, suite) + model_problems(spec.config)


def system_problems(provider: ModelProvider, spec: ProviderSpec, suite: SuiteView) -> list[str]:
    """A system prompt naming a test's vars: each test it plays must have them (else every call of that test
    would be an error; validate says which test before any call)."""
    out = []
    for test in suite.tests if provider.system_vars else []:
        if test.providers is not None and spec.id not in test.providers:
            continue
        if missing := sorted(provider.system_vars - set(test.vars) - set(test.matrix)):
            out.append(f"system: names {', '.join(missing)}, which test '{test.id}' has not among its vars")
    return out


def model_prepare(spec: ProviderSpec) -> None:
    """The lean client's transport and price map, loaded before the run's first call. litellm itself
    stays imported on first use: a run answered from the cache never needs it (it takes seconds)."""
    from evalspec.providers.local_embedder import is_local

    if not is_local(spec) and use_lean_client(spec.config):
        prepare_client()


@provider_kind("model", schema={"type": "string", "description": "any litellm model string"},
               doc="any litellm model string (openai/gpt-4o-mini, ...), with system/params/history",
               keys=MODEL_KEYS, preflight=model_preflight, prepare=model_prepare)
def build_model(spec: ProviderSpec, suite: SuiteView) -> ModelProvider:
    from evalspec.providers.tool_rounds import load_tools

    own = load_tools(spec.config.get("tools"), suite.path.parent)
    tools = [*(own or []), *(t.definition() for t in suite.tools)] or None  # the suite's too (docs/en/world.md#the-world-and-the-tools)
    return ModelProvider(spec.id, spec.config, suite.vars, tools=tools, test_vars=test_var_names(suite))


def test_var_names(suite: SuiteView) -> frozenset[str]:
    """The vars some test of the suite has (its own `vars:` and matrix keys): a system prompt may name them."""
    return frozenset(name for test in suite.tests for name in (*test.vars, *test.matrix))
