"""Error types.

    EvalspecError
     ├── ConfigError        the suite did not validate; carries every Problem found (exit 2)
     ├── ProviderError      the system under test (or a judge) failed after retries: the test is `error`
     └── GradingError       an assertion could not reach a verdict (bad judge output, regex time-out)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class EvalspecError(Exception):
    """Base of every error evalspec raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One validation problem, located in a suite file."""

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ConfigError(EvalspecError):
    """The configuration is invalid; every problem is reported at once."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class ProviderError(EvalspecError):
    """A call to a provider failed for good (after retries). `rate_limited`: the answer was 429 or 503."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None,
                 rate_limited: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.rate_limited = rate_limited


class GradingError(EvalspecError):
    """An assertion could not produce a verdict. `usage` lists the model calls made on the way (one
    `{tokens, cost, cached}` per judge call whose answer was unusable or came before the failure), so they
    are counted although no verdict came of them."""

    def __init__(self, message: str, *, usage: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.usage: list[dict[str, Any]] = list(usage or [])
