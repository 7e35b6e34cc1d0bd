"""evalspec: test chatbots and agents as whole conversations.

The facade: `run`/`arun` play suites, `load_suite` reads one; a plugin author needs `assertion` and
`provider_kind` (the decorators), `Check`, `Evidence`, `Reply`, `GradingContext` and `Message` (what a
check receives and returns), `JudgeRequest` and `JudgeVerdict` (a model-graded check's call to its
judge), and `Provider`, `ProviderResponse` and `CallContext` (what a provider kind builds); `ConfigError` (a suite that does not validate) and `EvalspecError` (the root of every
error evalspec raises) for callers. Nothing outside this list is API: the modules behind it move.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from evalspec.core.version import __version__
from evalspec.extend.registry import BUILT_IN_MODULES as _BUILT_IN_MODULES

if TYPE_CHECKING:
    from evalspec.app.api import Run, RunResult, arun, run
    from evalspec.config import Suite, load_suite
    from evalspec.core.errors import ConfigError, EvalspecError
    from evalspec.extend.check import Check, Evidence, GradingContext, JudgeRequest, JudgeVerdict, Reply
    from evalspec.extend.kinds import provider_kind
    from evalspec.extend.provider import CallContext, Provider, ProviderResponse
    from evalspec.extend.registry import assertion
    from evalspec.extend.transcript import Message

#: each public name → the module that defines it, imported on first use (PEP 562), so that `evalspec --help`
#: and `import evalspec.<module>` do not load the whole package
_HOMES = {
    "Run": "evalspec.app.api", "RunResult": "evalspec.app.api", "arun": "evalspec.app.api", "run": "evalspec.app.api",
    "Suite": "evalspec.config", "load_suite": "evalspec.config",
    "ConfigError": "evalspec.core.errors", "EvalspecError": "evalspec.core.errors",
    "Check": "evalspec.extend.check", "Evidence": "evalspec.extend.check", "GradingContext": "evalspec.extend.check",
    "JudgeRequest": "evalspec.extend.check", "JudgeVerdict": "evalspec.extend.check", "Reply": "evalspec.extend.check",
    "provider_kind": "evalspec.extend.kinds",
    "CallContext": "evalspec.extend.provider", "Provider": "evalspec.extend.provider",
    "ProviderResponse": "evalspec.extend.provider",
    "assertion": "evalspec.extend.registry",
    "Message": "evalspec.extend.transcript",
}


_BUILT_IN_MODULES.append("evalspec.assertions.builtin")  # the built-in checks, registered on the first lookup


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'evalspec' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = ["CallContext", "Check", "ConfigError", "EvalspecError", "Evidence", "GradingContext", "JudgeRequest",
           "JudgeVerdict", "Message", "Provider", "ProviderResponse", "Reply", "Run", "RunResult", "Suite", "__version__",
           "arun", "assertion", "load_suite", "provider_kind", "run"]
