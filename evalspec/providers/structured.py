"""Structured output for the calls evalspec makes on its own behalf (judge, second opinion, simulated user,
attacker, context strategies): docs/en/judges.md#how-a-verdict-is-reached and §20.

Each such call carries `max_tokens` and asks for the answer's JSON Schema in the first form the model
accepts, trying in order (docs/en/real-models.md):

    json_schema         `response_format: {type: json_schema, json_schema: {name, schema, strict}}` (OpenAI, vLLM)
    json_object+schema  `response_format: {type: json_object, schema: ...}` (llama-cpp-python's server, older vLLM)
    json_object         `response_format: {type: json_object}`
    none                no format: the tolerant reader (`answers.read_answer`) reads the answer

Ollama models (`ollama/`, `ollama_chat/`) take `format: <schema>`, else none. A form the server rejects
(a client error about the request's shape, or any error naming the format: llama-cpp-python answers
HTTP 500 "Input should be 'text' or 'json_object'") moves to the next; the form accepted is remembered
per model (endpoint + model name) for the process and in the cache directory across runs, so the
rejected requests are not repeated.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from evalspec.core.errors import ProviderError
from evalspec.extend.provider import CallContext, ProviderResponse
from evalspec.extend.transcript import ChatMessage
from evalspec.providers.calls import ProviderCaller
from evalspec.providers.openai_compat import about_format

JUDGE_MAX_TOKENS = 512
SIMULATOR_MAX_TOKENS = 256
# a simulated user's or an attacker's message, as its schema asks (`maxLength`): a grammar-constrained server
# (llama.cpp) closes the string there instead of running on past the model's turn until the token cap cuts it
MESSAGE_MAX_CHARS = 200
REASON_MAX_CHARS = 300  # a verdict's reason, likewise: a small model's ramble ends there, not at the token cap
# what strict `json_schema` (OpenAI) does not take: kept for the forms grammar-constrained servers read
_NOT_STRICT = ("minLength", "maxLength")

FORMS = ("json_schema", "json_object+schema", "json_object", "none")
OLLAMA_FORMS = ("ollama_format", "none")

# a 4xx that is about the request's shape (not auth, not a missing route): the server did not take the format
_FORMAT_REJECTED = re.compile(r"HTTP 4(00|22)|BadRequest|UnprocessableEntity|UnsupportedParams|response_format|json_schema",
                              re.IGNORECASE)
_ACCEPTED: dict[str, str] = {}  # model key -> the form it accepted, for this process
_PROBES: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Lock] = {}  # a model whose form is not known yet
_STORE_PREFIX = "structured-output-form|"  # the cache's entry for a model (never a sha256 response key)


def response_format(name: str, schema: Mapping[str, object]) -> dict[str, object]:
    """The OpenAI `response_format` asking for JSON that follows `schema` (strict: without string lengths)."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": _strict(schema), "strict": True}}


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strict(v) for k, v in schema.items() if k not in _NOT_STRICT}
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def form_params(form: str, name: str, schema: Mapping[str, object]) -> dict[str, object]:
    """The request parameters that ask for `schema` in `form`."""
    if form == "json_schema":
        return {"response_format": response_format(name, schema)}
    if form == "json_object+schema":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if form == "json_object":
        return {"response_format": {"type": "json_object"}}
    if form == "ollama_format":
        return {"format": schema}
    return {}


def verdict_schema(answer_key: str, answer: Mapping[str, object]) -> dict[str, object]:
    """`{"reason": str, <answer_key>: <answer>}`, reason first so a model explains before it decides."""
    return {"type": "object", "properties": {"reason": {"type": "string", "maxLength": REASON_MAX_CHARS},
                                             answer_key: answer},
            "required": ["reason", answer_key], "additionalProperties": False}


def model_key(caller: ProviderCaller) -> str:
    """Which model an accepted form is remembered for: the endpoint and model name."""
    identity = caller.provider.cache_identity()
    return f"{identity.get('api_base') or ''}|{identity.get('model') or caller.id}"


def forms_for(caller: ProviderCaller) -> tuple[str, ...]:
    """The forms to try for the model behind `caller`, best first."""
    model = str(caller.provider.cache_identity().get("model") or "")
    return OLLAMA_FORMS if model.startswith(("ollama/", "ollama_chat/")) else FORMS


def rejects_format(exc: ProviderError) -> bool:
    """A client error about the request's shape, or any error naming the format (llama-cpp-python's server
    answers HTTP 500 "response_format.type: Input should be 'text' or 'json_object'")."""
    text = str(exc)
    if about_format(text) or "'format'" in text:
        return True
    return not exc.retryable and bool(_FORMAT_REJECTED.search(text))


def accepted_form(caller: ProviderCaller) -> str | None:
    """The form the model behind `caller` accepted, in this process or (from the cache directory) an
    earlier run; None when it has not been asked yet."""
    key = model_key(caller)
    form = _ACCEPTED.get(key)
    if form is None and caller.cache is not None:
        stored = caller.cache.get(_STORE_PREFIX + key)
        value = stored.get("form") if stored else None
        if isinstance(value, str) and value in (*FORMS, *OLLAMA_FORMS):
            form = _ACCEPTED[key] = value
    return form


def format_rejected(caller: ProviderCaller) -> bool:
    """True once the model behind `caller` has rejected every structured-output form."""
    return accepted_form(caller) == "none"


def remember(caller: ProviderCaller, form: str) -> None:
    key = model_key(caller)
    if _ACCEPTED.get(key) == form:
        return
    _ACCEPTED[key] = form
    if caller.cache is not None:
        caller.cache.put(_STORE_PREFIX + key, {"form": form})


def forget_forms() -> None:
    """Forget the forms accepted in this process (the cache directory keeps its own)."""
    _ACCEPTED.clear()


async def call_structured(caller: ProviderCaller, messages: list[ChatMessage], context: CallContext, *,
                          name: str, schema: Mapping[str, object], max_tokens: int, seed: int | None = None,
                          read: bool = True) -> ProviderResponse:
    """Call with `max_tokens` (and `seed` when given), asking for `schema` in the first structured-output
    form the model accepts (starting at the one remembered for it); the accepted form is remembered."""
    params: dict[str, object] = {"max_tokens": max_tokens}
    if seed is not None:
        params["seed"] = seed
    if accepted_form(caller) is None:  # the first call finds the form; the model's other calls wait for it
        async with _probe_lock(model_key(caller)):
            return await _call(caller, messages, context, name, schema, params, read)
    return await _call(caller, messages, context, name, schema, params, read)


async def _call(caller: ProviderCaller, messages: list[ChatMessage], context: CallContext, name: str,
                schema: Mapping[str, object], params: Mapping[str, object], read: bool) -> ProviderResponse:
    forms = forms_for(caller)
    known = accepted_form(caller)
    start = forms.index(known) if known in forms else 0
    for i, form in enumerate(forms[start:], start):
        request = {**params, **form_params(form, name, schema)}
        try:
            response = await caller.call(messages, _with(context, request), extra=request, read=read)
        except ProviderError as exc:
            if i == len(forms) - 1 or not rejects_format(exc):
                raise
            continue
        remember(caller, form)
        return response
    raise AssertionError("unreachable: the last form raises or returns")  # pragma: no cover


def _probe_lock(key: str) -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    for stale in [k for k in _PROBES if k[0] is not loop and k[0].is_closed()]:
        del _PROBES[stale]
    return _PROBES.setdefault((loop, key), asyncio.Lock())


def call_usage(response: ProviderResponse) -> dict[str, Any]:
    """One call's `{tokens, cost, cached}` (and `cached_tokens` when the provider's prompt cache served some:
    docs/en/rate-limits.md), as the judge figures count it (`results.record.judge_figures`)."""
    usage: dict[str, Any] = {"tokens": response.tokens, "cost": response.cost, "cached": response.cached}
    if response.cached_tokens is not None:
        usage["cached_tokens"] = response.cached_tokens
    return usage


def _with(context: CallContext, params: dict[str, object]) -> CallContext:
    return CallContext(thread_id=context.thread_id, test_id=context.test_id, turn=context.turn, vars=context.vars,
                       repeat=context.repeat, params=params, conversation=context.conversation)
