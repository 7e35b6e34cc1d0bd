"""Build providers from their specs (each kind's registry entry builds and checks its own) and share
them across a run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalspec.config.model import ProviderSpec, Suite
from evalspec.config.providers import model_ref
from evalspec.core.errors import ConfigError
from evalspec.extend.check import EmbedFn, JudgeFn
from evalspec.extend.kinds import provider_kinds
from evalspec.extend.provider import Provider
from evalspec.providers.cache import ResponseCache
from evalspec.providers.calls import CallStats, ProviderCaller, embedding_fn
from evalspec.providers.history import attach_strategy
from evalspec.providers.limits import Limits
from evalspec.providers.local_embedder import IDENTITY, LocalEmbedding, is_local
from evalspec.providers.tool_rounds import ToolKit, tool_problems, toolkit_for

LimitsFor = Callable[[Suite, ProviderSpec], Limits | None]


class PreflightError(ConfigError):
    """A provider cannot work as configured; nothing was called."""


def build_provider(spec: ProviderSpec, suite: Suite) -> Provider:
    return provider_kinds()[spec.kind].build(spec, suite)


def provider_problems(spec: ProviderSpec, suite: Suite) -> list[str]:
    """What stops `spec` from working, found without calling it: its tools and teardown (keys every
    provider has), then its kind's own preflight."""
    kind = provider_kinds().get(spec.kind)
    if kind is None:
        return [f"unknown provider kind '{spec.kind}'"]
    return tool_problems(spec, suite.path.parent, suite.tools) or kind.preflight(spec, suite)


def prepare_provider(spec: ProviderSpec) -> None:
    """Load, before a run's first call, what `spec`'s first call would otherwise load on the event loop."""
    kind = provider_kinds().get(spec.kind)
    if kind is not None:
        kind.prepare(spec)


def jury_members(raw: list[Any]) -> list[ProviderSpec]:
    """An assertion's own jury: each member a model reference named by its `id`, else its model string."""
    return [replace(model_ref(item), id=str(item.get("id") or item.get("model") or f"judge-{i + 1}")
                    if isinstance(item, dict) else str(item)) for i, item in enumerate(raw)]


class ProviderPool:
    """One caller per (suite, provider id); judges and embedders per suite."""

    def __init__(self, suites: list[Suite], cache_dir: Path | None, *, cache: ResponseCache | None = None,
                 limits_for: LimitsFor | None = None, concurrency: int | None = None) -> None:
        """`cache` and `limits_for` (a Ray worker's) replace the cache in `cache_dir` and the callers'
        own `max_concurrency`/`rpm` limits. `concurrency` (`-j`) caps what an adaptive limit grows back to."""
        self.suites = suites
        self.cache = cache if cache is not None else ResponseCache(cache_dir) if cache_dir is not None else None
        if self.cache is not None:  # the file never holds a secret (docs/en/suite-format.md#secrets)
            from evalspec.core.redact import run_secrets

            self.cache.secrets = run_secrets(suites)
        self.limits_for = limits_for
        self.concurrency = concurrency
        self.stats = CallStats()
        self._callers: dict[tuple[str, str], ProviderCaller] = {}
        self._judges: dict[str, JudgeFn] = {}
        self._embedders: dict[str, EmbedFn | None] = {}
        self._embedder_callers: list[ProviderCaller] = []
        self._toolkits: dict[tuple[str, str], ToolKit] = {}

    def get(self, spec: ProviderSpec, suite: Suite) -> ProviderCaller:
        key = (str(suite.path), spec.id + "@" + str(spec.where))
        caller = self._callers.get(key)
        if caller is None:
            cfg = spec.config
            provider = build_provider(spec, suite)
            attach_strategy(provider, spec, suite, self.get)
            caller = ProviderCaller(
                provider, cache=self.cache if suite.option("cache") else None,
                timeout=float(cfg.get("timeout") or suite.option("timeout")),
                retries=int(cfg.get("retries", suite.option("retries"))),
                max_concurrency=spec.max_concurrency, rpm=spec.rpm, stats=self.stats,
                stateful=spec.stateful, max_retry_wait=float(suite.option("max_retry_wait")),
                limits=self.limits_for(suite, spec) if self.limits_for is not None else None,
                ceiling=self.concurrency)
            self._callers[key] = caller
        return caller

    def toolkit(self, spec: ProviderSpec, suite: Suite) -> ToolKit:
        """How `spec`'s tool calls are handled (answered from the suite's `tools:` and `tool_results`)."""
        key = (str(suite.path), spec.id + "@" + str(spec.where))
        if key not in self._toolkits:
            timeout = float(spec.config.get("timeout") or suite.option("timeout"))
            self._toolkits[key] = toolkit_for(spec, suite.path.parent, suite.vars, timeout, suite.tools)
        return self._toolkits[key]

    def judge_fn(self, suite: Suite) -> JudgeFn | None:
        """The suite's judge, or None when it has none."""
        if suite.jury is not None:  # docs/en/judges.md#juries
            from evalspec.providers.judge import Jury

            return Jury([(m.id, self._judge(suite, m)) for m in suite.jury.members], suite.jury.rule, suite.jury.quorum)
        return self._judge(suite, suite.judge) if suite.judge is not None else None

    def judge_for(self, suite: Suite, raw: Any) -> JudgeFn:
        """The judge named by an assertion's own `provider:` (a model string or a provider mapping), or its
        own jury (`judge: [...]` with `jury:`, as `{jury: [...], rule, quorum}`)."""
        if isinstance(raw, dict) and isinstance(raw.get("jury"), list):
            from evalspec.providers.judge import Jury

            members = jury_members(raw["jury"])
            return Jury([(m.id, self._judge(suite, m)) for m in members], str(raw.get("rule") or "majority"),
                        raw.get("quorum"))
        return self._judge(suite, model_ref(raw))

    def _judge(self, suite: Suite, spec: ProviderSpec) -> JudgeFn:
        key = f"{suite.path}|{spec.id}|{spec.config!r}"
        judge = self._judges.get(key)
        if judge is None:
            from evalspec.providers.judge import make_judge

            judge = self._judges[key] = make_judge(self.get(spec, suite), spec.config.get("max_tokens"))
            if spec.config.get("batch"):  # docs/en/rate-limits.md: a conversation's judged checks in one call
                from evalspec.providers.judge import BATCHING

                BATCHING.add(judge)
        return judge

    def embed_fn(self, suite: Suite) -> EmbedFn | None:
        key = str(suite.path)
        if key not in self._embedders:
            self._embedders[key] = None
            spec = suite.embedder
            if spec is not None:
                from evalspec.providers.model_provider import EmbeddingModel

                provider: Any = LocalEmbedding() if is_local(spec) else EmbeddingModel(spec)
                caller = ProviderCaller(  # limits, time-out and retries like any call; counted apart (not a model call)
                    provider, cache=None, timeout=float(spec.config.get("timeout") or suite.option("timeout")),
                    retries=int(spec.config.get("retries", suite.option("retries"))),
                    max_concurrency=spec.max_concurrency, rpm=spec.rpm, stats=CallStats(),
                    max_retry_wait=float(suite.option("max_retry_wait")), ceiling=self.concurrency)
                embed = embedding_fn(caller, self.cache, IDENTITY if is_local(spec) else provider.cache_identity())
                self._embedder_callers.append(caller)
                self._embedders[key] = embed
        return self._embedders[key]

    async def aclose(self) -> None:
        for embedder in self._embedder_callers:
            close = getattr(embedder.provider, "aclose", None)
            if close is not None:
                await close()
        for caller in self._callers.values():
            close = getattr(caller.provider, "aclose", None)
            if close is not None:
                await close()
        if self.cache is not None:
            self.cache.close()
