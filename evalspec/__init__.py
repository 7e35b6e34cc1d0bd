"""evalspec: test chatbots and agents as whole conversations."""

from __future__ import annotations

__version__ = "0.1.0"

from evalspec.api import Run, RunResult, arun, run  # noqa: E402
from evalspec.assertions import builtin as _builtin  # noqa: E402, F401  (registers the built-in checks)
from evalspec.assertions.registry import assertion  # noqa: E402
from evalspec.config import Suite, load_suite  # noqa: E402

__all__ = ["Run", "RunResult", "Suite", "__version__", "arun", "assertion", "load_suite", "run"]
