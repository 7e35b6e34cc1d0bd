"""Structured output for the calls evalspec makes on its own behalf (judge, simulated user, strategies).

Each such call asks for the answer's JSON Schema through `response_format` (honoured by OpenAI, vLLM,
llama.cpp and Ollama; passed on by litellm where the model supports it) and carries `max_tokens`, so a
small local model answers a short JSON object instead of rambling until the time-out. A server that
rejects `response_format` is asked again without it (the tolerant parser reads the answer); that is
remembered per model for the rest of the process, so the rejected request is not repeated every call.
"""

from __future__ import annotations

import re
from typing import Any

from evalspec.errors import ProviderError
from evalspec.providers.base import CallContext, ProviderResponse
from evalspec.providers.calls import ProviderCaller

JUDGE_MAX_TOKENS = 512
SIMULATOR_MAX_TOKENS = 256

# a 4xx that is about the request's shape (not auth, not a missing route): the server did not take the format
_FORMAT_REJECTED = re.compile(r"HTTP 4(00|22)|BadRequest|UnprocessableEntity|UnsupportedParams|response_format|json_schema",
                              re.IGNORECASE)
_NO_FORMAT: set[str] = set()


def response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI `response_format` asking for JSON that follows `schema`."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def verdict_schema(answer_key: str, answer: dict[str, Any]) -> dict[str, Any]:
    """`{"reason": str, <answer_key>: <answer>}`, reason first so a model explains before it decides."""
    return {"type": "object", "properties": {"reason": {"type": "string"}, answer_key: answer},
            "required": ["reason", answer_key], "additionalProperties": False}


def model_key(caller: ProviderCaller) -> str:
    """Which model a format rejection is remembered for: the endpoint and model name."""
    identity = caller.provider.cache_identity()
    return f"{identity.get('api_base') or ''}|{identity.get('model') or caller.id}"


def rejects_format(exc: ProviderError) -> bool:
    """A client error about the request's shape, or any error naming the format (llama-cpp-python's server
    answers HTTP 500 "response_format.type: Input should be 'text' or 'json_object'")."""
    text = str(exc)
    if "response_format" in text or "json_schema" in text:
        return True
    return not exc.retryable and bool(_FORMAT_REJECTED.search(text))


def format_rejected(caller: ProviderCaller) -> bool:
    """True once the model behind `caller` has rejected `response_format` in this process."""
    return model_key(caller) in _NO_FORMAT


async def call_structured(caller: ProviderCaller, messages: list[dict[str, Any]], context: CallContext, *,
                          name: str, schema: dict[str, Any], max_tokens: int, seed: int | None = None,
                          read: bool = True) -> ProviderResponse:
    """Call with `response_format` and `max_tokens` (and `seed` when given); on a rejection of the format,
    call again without it and remember that for this model."""
    params: dict[str, Any] = {"max_tokens": max_tokens}
    if seed is not None:
        params["seed"] = seed
    key = model_key(caller)
    if key not in _NO_FORMAT:
        structured = {**params, "response_format": response_format(name, schema)}
        try:
            return await caller.call(messages, _with(context, structured), extra=structured, read=read)
        except ProviderError as exc:
            if not rejects_format(exc):
                raise
            response = await caller.call(messages, _with(context, params), extra=params, read=read)
            _NO_FORMAT.add(key)
            return response
    return await caller.call(messages, _with(context, params), extra=params, read=read)


def call_usage(response: ProviderResponse) -> dict[str, Any]:
    """One call's `{tokens, cost, cached}` (and `cached_tokens` when the provider's prompt cache served some:
    SPEC §23), as the judge figures count it (`results.record.judge_figures`)."""
    usage: dict[str, Any] = {"tokens": response.tokens, "cost": response.cost, "cached": response.cached}
    if response.cached_tokens is not None:
        usage["cached_tokens"] = response.cached_tokens
    return usage


def _with(context: CallContext, params: dict[str, Any]) -> CallContext:
    return CallContext(thread_id=context.thread_id, test_id=context.test_id, turn=context.turn, vars=context.vars,
                       repeat=context.repeat, params=params)
