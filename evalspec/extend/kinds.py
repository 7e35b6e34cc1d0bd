"""The provider-kind registry: each kind (`python`, `model`, `http`, `rasa`, and plugins') with its schema,
builder, preflight and doc, so that parser, schema, factory and `evalspec list` read one table.

    from evalspec import provider_kind

    @provider_kind("echo", schema={"type": "object", "properties": {"prefix": {"type": "string"}}},
                   doc="answers with the user's message")
    def build_echo(spec, suite):          # spec.config["echo"] is the value written in the suite
        return EchoProvider(spec.id, spec.config["echo"])   # anything with `id`, `respond`, `cache_identity`

The built-in kinds register the same way, each in the module that implements it (`BUILTIN`); this
table imports those modules on first use, as it imports plugins' entry points, so that the suite's
parser and schema (which read names, schemas and config checks) stand before the providers layer.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evalspec.core.redact import mask_config
from evalspec.extend.params import JsonSchema
from evalspec.extend.provider import Provider


# -- the builder's contract: what a provider kind is given ------------------------------------------------
@dataclass
class ProviderSpec:
    """A system under test (or judge / simulator / embedder): what a kind's builder is given."""

    id: str
    kind: str  # a registered provider kind: python, model, http or a plugin's
    config: dict[str, Any]
    where: tuple[str | int, ...] = ()  # the suite's key path of the provider mapping (config.paths.PathKey)
    max_concurrency: int | None = None
    rpm: float | None = None

    @property
    def stateful(self) -> bool:
        """The system keeps the conversation itself: only the new message is sent (its kind decides)."""
        return is_stateful(self.config, self.kind)

    def redacted(self, secrets: set[str]) -> dict[str, Any]:
        """The configuration as outputs show it, every secret masked where it stands and wherever it
        reappears (docs/en/suite-format.md#secrets)."""
        out: dict[str, Any] = {"id": self.id, self.kind: self.config.get(self.kind)}
        out.update({k: v for k, v in self.config.items() if k != self.kind})
        if takes_history(self.kind):
            out["context"] = describe_history(self.config.get("history"))
        if self.kind == "model" and self.config.get("system"):
            out["system_sha256"] = hashlib.sha256(str(self.config["system"]).encode()).hexdigest()[:12]
        return dict(mask_config(out, secrets))


def describe_history(history: object) -> str:
    """`full`, `window 4`, `summary 2 by openai/gpt-4o-mini`: a provider's context strategy in a few words."""
    if not isinstance(history, dict) or history.get("mode", "full") == "full":
        return "full"
    text = f"{history['mode']} {history.get('turns')}"
    model = history.get("model")
    if isinstance(model, dict):
        model = model.get("model") or model.get("python") or model.get("id")
    return text + (f" by {model}" if model else "")


class ToolView(Protocol):
    """One of the suite's `tools:` as a builder sees it (config.model.ToolSpec)."""

    def definition(self) -> dict[str, Any]: ...


class TestView(Protocol):
    """A test as a builder sees it (config.model.TestSpec)."""

    @property
    def id(self) -> str: ...
    @property
    def providers(self) -> Collection[str] | None: ...
    @property
    def vars(self) -> Mapping[str, Any]: ...
    @property
    def matrix(self) -> Mapping[str, Any]: ...


class SuiteView(Protocol):
    """The suite a provider is built for, as its kind's builder and preflight see it (config.model.Suite)."""

    @property
    def path(self) -> Path: ...
    @property
    def vars(self) -> dict[str, Any]: ...  # handed on to the provider, which renders with it
    @property
    def tests(self) -> Sequence[TestView]: ...
    @property
    def tools(self) -> Sequence[ToolView]: ...


Builder = Callable[[ProviderSpec, SuiteView], Provider]
Preflight = Callable[[ProviderSpec, SuiteView], list[str]]
Prepare = Callable[[ProviderSpec], None]
# config-time problems of one provider mapping: (key path under the provider, message)
ConfigCheck = Callable[[Mapping[str, object]], list[tuple[tuple[str, ...], str]]]

# kind -> the module that registers it; their order is the order of the suite schema's `oneOf`
BUILTIN = {"python": "evalspec.providers.python_provider", "model": "evalspec.providers.model_provider",
           "http": "evalspec.providers.http_provider", "rasa": "evalspec.providers.rasa_provider"}


def _no_problems(spec: ProviderSpec, suite: SuiteView) -> list[str]:
    return []


def _nothing_to_prepare(spec: ProviderSpec) -> None:
    return None


def _no_config_problems(raw: Mapping[str, object]) -> list[tuple[tuple[str, ...], str]]:
    return []


def _never(config: Mapping[str, object]) -> bool:
    return False


@dataclass(frozen=True)
class ProviderKind:
    """A registered provider kind.

    `schema` is the JSON Schema of the value under the kind's key; `keys` the other provider keys the
    kind reads (`system`, `history`, ...) with theirs; `check` finds what a schema cannot in a provider
    mapping (reported with the line); `preflight` what stops a built provider from working, without
    calling it; `prepare` loads, before a run's first call, what the kind's first call would otherwise
    load on the event loop (an HTTP transport: `validate` does not need it, so preflight leaves it); `stateful` says whether the system keeps the conversation itself (only the new message
    is sent, and `assistant:` history cannot be)."""

    name: str
    doc: str
    schema: JsonSchema
    build: Builder
    preflight: Preflight = _no_problems
    keys: dict[str, JsonSchema] = field(default_factory=dict)
    check: ConfigCheck = _no_config_problems
    stateful: Callable[[Mapping[str, object]], bool] = _never
    builtin: bool = False
    prepare: Prepare = _nothing_to_prepare


PROVIDER_KINDS: dict[str, ProviderKind] = {}
_loaded_builtin = False


def provider_kind(name: str, *, schema: JsonSchema | None, doc: str = "", preflight: Preflight | None = None,
                  keys: dict[str, JsonSchema] | None = None, check: ConfigCheck | None = None,
                  stateful: Callable[[Mapping[str, object]], bool] | None = None,
                  prepare: Prepare | None = None) -> Callable[[Builder], Builder]:
    """Register a builder `(spec, suite) -> Provider` under the suite key `name` (`schema` None: any value)."""

    def register(build: Builder) -> Builder:
        text = doc or ((build.__doc__ or "").strip().splitlines() or [""])[0]
        PROVIDER_KINDS[name] = ProviderKind(
            name, text, schema if schema is not None else {}, build, preflight or _no_problems, dict(keys or {}),
            check or _no_config_problems, stateful or _never, builtin=BUILTIN.get(name) == build.__module__,
            prepare=prepare or _nothing_to_prepare)
        return build

    return register


def provider_kinds() -> dict[str, ProviderKind]:
    """Every kind: the built-in ones first, then plugins (installed as `evalspec.providers` entry points
    or named by a suite's `plugins:`)."""
    global _loaded_builtin
    if not _loaded_builtin:
        _loaded_builtin = True
        for module in BUILTIN.values():
            importlib.import_module(module)
    from evalspec.core.plugins import load_entry_points

    load_entry_points()
    builtin = {name: PROVIDER_KINDS[name] for name in BUILTIN if name in PROVIDER_KINDS}
    return {**builtin, **PROVIDER_KINDS}


def kind_of(config: Mapping[str, object]) -> str | None:
    """The kind a provider mapping (as written, or as recorded in run.json) names, or None."""
    return next((name for name in provider_kinds() if name in config), None)


def takes_history(kind: str) -> bool:
    """Whether a kind's providers take a client-side context strategy (`history:` among its keys)."""
    entry = provider_kinds().get(kind)
    return entry is not None and "history" in entry.keys


def is_stateful(config: Mapping[str, object], kind: str | None = None) -> bool:
    """Whether the system a provider mapping (or a recorded one) describes keeps the conversation itself
    (docs/en/providers.md `stateful: true`): its kind's registry entry decides."""
    entry = provider_kinds().get(kind or kind_of(config) or "")
    return entry is not None and entry.stateful(config)
