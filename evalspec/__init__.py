"""evalspec: test chatbots and agents as whole conversations.

The facade: `run`/`arun` play suites, `load_suite` reads one; a plugin author needs `assertion` and
`provider_kind` (the decorators), `Check`, `Evidence`, `Reply`, `GradingContext` and `Message` (what a
check receives and returns), `JudgeRequest` and `JudgeVerdict` (a model-graded check's call to its
judge), and `Provider`, `ProviderResponse` and `CallContext` (what a provider kind builds); `ConfigError` (a suite that does not validate) and `EvalspecError` (the root of every
error evalspec raises) for callers. Nothing outside this list is API: the modules behind it move.
"""

from __future__ import annotations

from evalspec.app.api import Run, RunResult, arun, run
from evalspec.assertions import builtin as _builtin  # noqa: F401  (registers the built-in checks)
from evalspec.config import Suite, load_suite
from evalspec.core.errors import ConfigError, EvalspecError
from evalspec.core.version import __version__
from evalspec.extend.check import Check, Evidence, GradingContext, JudgeRequest, JudgeVerdict, Reply
from evalspec.extend.kinds import provider_kind
from evalspec.extend.provider import CallContext, Provider, ProviderResponse
from evalspec.extend.registry import assertion
from evalspec.extend.transcript import Message

__all__ = ["CallContext", "Check", "ConfigError", "EvalspecError", "Evidence", "GradingContext", "JudgeRequest",
           "JudgeVerdict", "Message", "Provider", "ProviderResponse", "Reply", "Run", "RunResult", "Suite", "__version__",
           "arun", "assertion", "load_suite", "provider_kind", "run"]
