"""The provider-kind registry: each kind (`python`, `model`, `http`, and plugins') with its schema,
builder, preflight and doc, so that parser, schema, factory and `evalspec list` read one table.

    from evalspec.providers.kinds import provider_kind

    @provider_kind("echo", schema={"type": "object", "properties": {"prefix": {"type": "string"}}},
                   doc="answers with the user's message")
    def build_echo(spec, suite):          # spec.config["echo"] is the value written in the suite
        return EchoProvider(spec.id, spec.config["echo"])   # anything with `id`, `respond`, `cache_identity`
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalspec.config.model import ProviderSpec, Suite
    from evalspec.providers.base import Provider

Builder = Callable[["ProviderSpec", "Suite"], "Provider"]
Preflight = Callable[["ProviderSpec", "Suite"], list[str]]


def _no_problems(spec: ProviderSpec, suite: Suite) -> list[str]:
    return []


@dataclass(frozen=True)
class ProviderKind:
    """A registered provider kind: `schema` is the JSON Schema of the value under the kind's key
    (None for the built-in kinds, whose schema config/schema.py writes)."""

    name: str
    doc: str
    schema: dict[str, Any] | None
    build: Builder
    preflight: Preflight = _no_problems
    builtin: bool = False


PROVIDER_KINDS: dict[str, ProviderKind] = {}


def provider_kind(name: str, *, schema: dict[str, Any] | None, doc: str = "", preflight: Preflight | None = None,
                  builtin: bool = False) -> Callable[[Builder], Builder]:
    """Register a builder `(spec, suite) -> Provider` under the suite key `name`."""

    def register(build: Builder) -> Builder:
        text = doc or ((build.__doc__ or "").strip().splitlines() or [""])[0]
        PROVIDER_KINDS[name] = ProviderKind(name, text, schema, build, preflight or _no_problems, builtin)
        return build

    return register


def provider_kinds() -> dict[str, ProviderKind]:
    """Every kind: the built-in ones first, then plugins installed as `evalspec.providers` entry points."""
    from evalspec.plugins import load_entry_points

    load_entry_points()
    return PROVIDER_KINDS


# -- the built-in kinds ------------------------------------------------------------------------

# The built-in kinds: their value schemas are written in config/schema.py (next to the keys they share:
# system, history, tools, ...) and their builders and checks in providers/factory.py.

def _builtin_build(spec: ProviderSpec, suite: Suite) -> Provider:
    from evalspec.providers.factory import build_provider

    return build_provider(spec, suite)


def _builtin_preflight(spec: ProviderSpec, suite: Suite) -> list[str]:
    from evalspec.providers.factory import provider_problems

    return provider_problems(spec, suite)


for _name, _doc in (("python", "FILE.py:function or module:function, called as respond(messages, context)"),
                    ("model", "any litellm model string (openai/gpt-4o-mini, ...), with system/params/history"),
                    ("http", "any HTTP chatbot: templated url/headers/body, JMESPath response, stateful or not")):
    provider_kind(_name, schema=None, doc=_doc, preflight=_builtin_preflight, builtin=True)(_builtin_build)
