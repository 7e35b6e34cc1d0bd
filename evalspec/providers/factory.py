"""Build providers from their specs, check them before any call, and share them across a run."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from evalspec.agent import ToolKit, load_tools, tool_problems, toolkit_for
from evalspec.assertions.base import EmbedFn, JudgeFn
from evalspec.assertions.grade import instance_assertions, needs_model
from evalspec.assertions.registry import resolve_type
from evalspec.cache import ResponseCache
from evalspec.config.model import ProviderSpec, Suite
from evalspec.errors import ConfigError, Problem, ProviderError
from evalspec.plan import Instance
from evalspec.providers.base import Provider
from evalspec.providers.calls import CallStats, ProviderCaller
from evalspec.providers.history import attach_strategy, strategy_model
from evalspec.providers.kinds import provider_kinds
from evalspec.providers.local_embedder import is_local, local_problems, make_local_embedder
from evalspec.providers.python_provider import PythonProvider


class PreflightError(ConfigError):
    """A provider cannot work as configured; nothing was called."""


def build_provider(spec: ProviderSpec, suite: Suite) -> Provider:
    kind = provider_kinds()[spec.kind]
    if not kind.builtin:
        return kind.build(spec, suite)
    base_dir = suite.path.parent
    if spec.kind == "python":
        provider = PythonProvider(spec.id, str(spec.config["python"]), base_dir)
        return _with_source_hash(provider, base_dir)
    if spec.kind == "model":
        from evalspec.providers.model_provider import ModelProvider

        return ModelProvider(spec.id, spec.config, suite.vars, tools=load_tools(spec.config.get("tools"), base_dir))
    from evalspec.providers.http_provider import HttpProvider

    return HttpProvider(spec.id, spec.config, suite.vars)


def _with_source_hash(provider: PythonProvider, base_dir: Path) -> PythonProvider:
    """A python provider's cache identity covers its file and the `.py` files of its folder tree, so
    editing the provider or a module it imports is a cache miss."""
    target = provider.ref.rpartition(":")[0]
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        identity = {"python": provider.ref, "sha256": source_digest(path) if path.is_file() else "missing"}
        provider.cache_identity = lambda: identity  # type: ignore[method-assign]
    return provider


SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", "env"}
MAX_SOURCE_FILES = 1000
MAX_WALKED_ENTRIES = 20_000  # a provider beside a large data folder must not make every run slow


def source_digest(path: Path) -> str:
    """sha256 over `path` and the `.py` files under its folder (up to 1,000, hidden and virtualenv
    folders skipped), each named by its relative path."""
    root = path.parent
    digest = hashlib.sha256(b"entry:" + path.name.encode() + b"\0" + path.read_bytes())
    files: list[Path] = []
    walked = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        files.extend(Path(folder) / n for n in sorted(names) if n.endswith(".py"))
        walked += len(names) + len(dirs)
        if len(files) >= MAX_SOURCE_FILES or walked >= MAX_WALKED_ENTRIES:
            break
    for file in files[:MAX_SOURCE_FILES]:
        try:
            data = file.read_bytes()
        except OSError:
            data = b"<unreadable>"
        digest.update(file.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


class ProviderPool:
    """One caller per (suite, provider id); judges and embedders per suite."""

    def __init__(self, suites: list[Suite], cache_dir: Path | None) -> None:
        self.suites = suites
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.stats = CallStats()
        self._callers: dict[tuple[str, str], ProviderCaller] = {}
        self._judges: dict[str, JudgeFn] = {}
        self._embedders: dict[str, EmbedFn | None] = {}
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
                stateful=_stateful(spec), max_retry_wait=float(suite.option("max_retry_wait")))
            self._callers[key] = caller
        return caller

    def toolkit(self, spec: ProviderSpec, suite: Suite) -> ToolKit:
        """How `spec`'s tool calls are handled (answered from `tool_results` for model providers)."""
        key = (str(suite.path), spec.id + "@" + str(spec.where))
        if key not in self._toolkits:
            timeout = float(spec.config.get("timeout") or suite.option("timeout"))
            self._toolkits[key] = toolkit_for(spec, suite.path.parent, suite.vars, timeout)
        return self._toolkits[key]

    def judge_fn(self, suite: Suite) -> JudgeFn | None:
        """The suite's judge, or None when it has none."""
        return self._judge(suite, suite.judge) if suite.judge is not None else None

    def judge_for(self, suite: Suite, raw: Any) -> JudgeFn:
        """The judge named by an assertion's own `provider:` (a model string or a provider mapping)."""
        return self._judge(suite, assertion_provider(raw))

    def _judge(self, suite: Suite, spec: ProviderSpec) -> JudgeFn:
        key = f"{suite.path}|{spec.id}|{spec.config!r}"
        judge = self._judges.get(key)
        if judge is None:
            from evalspec.providers.judge import make_judge

            judge = self._judges[key] = make_judge(self.get(spec, suite), spec.config.get("max_tokens"))
        return judge

    def embed_fn(self, suite: Suite) -> EmbedFn | None:
        key = str(suite.path)
        if key not in self._embedders:
            self._embedders[key] = None
            if is_local(suite.embedder):
                self._embedders[key] = make_local_embedder(self.cache)
            elif suite.embedder is not None:
                from evalspec.providers.model_provider import make_embedder

                self._embedders[key] = make_embedder(suite.embedder, self.cache,
                                                     float(suite.embedder.config.get("timeout") or suite.option("timeout")))
        return self._embedders[key]

    async def preflight(self, instances: list[Instance]) -> None:
        """Stop before any call when a provider, judge, simulator or embedder cannot work."""
        problems: list[Problem] = []
        checked: set[tuple[str, str]] = set()

        def check(spec: ProviderSpec | None, suite: Suite, role: str, needed_by: str) -> None:
            where = suite.lines.problem(spec.where, "") if spec is not None and suite.lines else None
            if spec is None:
                problems.append(Problem(str(suite.path), None, "",
                                        f"{needed_by} needs a {role}: set `{role}:` in the suite"))
                return
            key = (str(suite.path), role + ":" + spec.id)
            if key in checked:
                return
            checked.add(key)
            for message in provider_problems(spec, suite):
                problems.append(Problem(str(suite.path), where.line if where else None, where.path if where else "",
                                        f"{role} '{spec.id}': {message}"))

        for inst in instances:
            suite = inst.suite
            check(inst.provider, suite, "provider", inst.test_id)
            if (strategy := strategy_model(inst.provider)) is not None:
                check(strategy, suite, "history model", f"provider '{inst.provider.id}'")
            for spec in instance_assertions(inst):
                if needs_model(spec):
                    atype = resolve_type(spec.type)
                    role = atype[0].needs if atype else "judge"
                    if role == "judge" and spec.provider is not None:
                        check(assertion_provider(spec.provider), suite, "judge", f"assertion '{spec.name}'")
                        continue
                    check(suite.judge if role == "judge" else suite.embedder, suite, str(role),
                          f"assertion '{spec.name}' in {inst.test_id}")
            if inst.test.attack is not None and inst.test.attack.python is None:
                check(inst.test.attack.model or suite.simulator, suite, "simulator", f"attack test {inst.test_id}")
            if inst.test.simulate is not None and inst.test.simulate.python:
                problems.extend(scripted_user_problems(inst))
            elif inst.test.simulate is not None:
                check(inst.test.simulate.model or suite.simulator, suite, "simulator", f"simulated test {inst.test_id}")
                if any(c.get("goal_met") for c in inst.test.simulate.stop_when):
                    check(suite.judge, suite, "judge", f"stop_when goal_met in {inst.test_id}")
        if problems:
            raise PreflightError(list(dict.fromkeys(problems)))

    async def aclose(self) -> None:
        for embed in self._embedders.values():
            close = getattr(embed, "aclose", None)
            if close is not None:
                await close()
        for caller in self._callers.values():
            close = getattr(caller.provider, "aclose", None)
            if close is not None:
                await close()
        if self.cache is not None:
            self.cache.close()


def assertion_provider(raw: Any) -> ProviderSpec:
    """An assertion's `provider:` value as a ProviderSpec (a string is a litellm model)."""
    if isinstance(raw, str):
        return ProviderSpec(id=f"judge:{raw}", kind="model", config={"model": raw})
    config = {k: v for k, v in dict(raw).items() if k not in ("id", "max_concurrency", "rpm")}
    kind = next((k for k in provider_kinds() if k in config), "model")
    return ProviderSpec(id=str(raw.get("id") or f"judge:{config.get(kind)}"), kind=kind,  # type: ignore[arg-type]
                        config=config, max_concurrency=raw.get("max_concurrency"), rpm=raw.get("rpm"))


def _stateful(spec: ProviderSpec) -> bool:
    http = spec.config.get("http")
    return isinstance(http, dict) and bool(http.get("stateful"))


def provider_problems(spec: ProviderSpec, suite: Suite) -> list[str]:
    """What stops `spec` from working, found without calling it."""
    if is_local(spec):
        return local_problems()
    kind = provider_kinds().get(spec.kind)
    if kind is None or not kind.builtin:
        return [f"unknown provider kind '{spec.kind}'"] if kind is None else kind.preflight(spec, suite)
    tools = tool_problems(spec, suite.path.parent)
    if tools:
        return tools
    if spec.kind == "python":
        provider = PythonProvider(spec.id, str(spec.config["python"]), suite.path.parent)
        try:
            provider.load()
        except ProviderError as exc:
            return [str(exc)]
        return []
    if spec.kind == "model":
        from evalspec.providers.model_provider import ModelProvider, model_problems

        try:
            ModelProvider(spec.id, spec.config, suite.vars)
        except ProviderError as exc:
            return [str(exc)]
        return model_problems(spec.config)
    from evalspec.providers.http_provider import http_problems

    return http_problems(spec.config)


def scripted_user_problems(inst: Instance) -> list[Problem]:
    """A python simulated user that cannot be loaded, found before any call."""
    from evalspec.scripted_user import load_scripted_user

    try:
        load_scripted_user(inst)
    except ProviderError as exc:
        where = inst.suite.lines.problem((*inst.test.where, "simulate", "python"), "") if inst.suite.lines else None
        return [Problem(str(inst.suite.path), where.line if where else None, where.path if where else "",
                        f"{inst.test_id}: {exc}")]
    return []
