"""`python: FILE.py:function` — a function (sync or async) is the system under test."""

from __future__ import annotations

import asyncio
import inspect
import time
from pathlib import Path
from typing import Any

from evalspec.errors import ProviderError
from evalspec.loading import LoadError, load_callable
from evalspec.providers.base import CallContext, ProviderResponse
from evalspec.providers.history import ContextStrategy, strategy_metadata


class PythonProvider:
    def __init__(self, pid: str, ref: str, base_dir: Path) -> None:
        self.id, self.ref, self.base_dir = pid, ref, base_dir
        self._fn: Any = None
        self.strategy = ContextStrategy()  # `history:` is attached by the provider pool

    def cache_identity(self) -> dict[str, Any]:
        return {"python": self.ref, "base": str(self.base_dir)}

    def load(self) -> None:
        """Import the function now, so a bad reference stops the run before any call."""
        try:
            self._fn = load_callable(self.ref, self.base_dir)
        except LoadError as exc:
            raise ProviderError(str(exc)) from exc

    async def respond(self, messages: list[dict[str, Any]], context: CallContext) -> ProviderResponse:
        if self._fn is None:
            self.load()
        sent, usage = await self.strategy.build(None, messages, context)
        ctx = {"thread_id": context.thread_id, "vars": dict(context.vars), "test_id": context.test_id,
               "turn": context.turn, "repeat": context.repeat}
        start = time.perf_counter()
        try:
            if inspect.iscoroutinefunction(self._fn):
                result = await self._fn([dict(m) for m in sent], ctx)
            else:
                result = await asyncio.to_thread(self._fn, [dict(m) for m in sent], ctx)
        except Exception as exc:
            raise ProviderError(f"{self.ref} raised {type(exc).__name__}: {exc}") from exc
        latency = (time.perf_counter() - start) * 1000
        return strategy_metadata(to_response(result, latency, self.ref), usage)


def to_response(result: Any, latency: float, where: str) -> ProviderResponse:
    if isinstance(result, str):
        return ProviderResponse(result, latency)
    if isinstance(result, dict) and isinstance(result.get("content"), (str, type(None))):
        usage = result.get("usage") or {}
        tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
        return ProviderResponse(result.get("content") or "", latency, tokens=tokens,
                                prompt_tokens=usage.get("prompt_tokens") if isinstance(usage, dict) else None,
                                completion_tokens=usage.get("completion_tokens") if isinstance(usage, dict) else None,
                                cost=result.get("cost"), tool_calls=result.get("tool_calls"),
                                metadata=result.get("metadata") or {})
    raise ProviderError(f"{where} returned {type(result).__name__}; expected a string or a dict with 'content'")
