"""Small builders shared by the tests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from evalspec.app.cli.main import main
from evalspec.assertions.evaluate import AssertionResult, evaluate
from evalspec.config.asserts import parse_assertion
from evalspec.config.model import AssertionSpec
from evalspec.config.paths import LineMap
from evalspec.core.errors import ConfigError
from evalspec.extend.check import GradingContext

# the tests that import litellm in the test process (`client: litellm`): one xdist worker runs them all, so
# litellm, seconds of CPU to import, is imported once per run of the suite instead of once per worker
LITELLM = pytest.mark.xdist_group("litellm")


def spec(text: str, under_turn: int | None = None) -> AssertionSpec:
    """An assertion item written in YAML -> AssertionSpec (raises ConfigError on problems)."""
    problems: list[Any] = []
    parsed = parse_assertion(yaml.safe_load(text), (), LineMap("<test>"), problems, under_turn)
    if problems or parsed is None:
        raise ConfigError(problems)
    return parsed


def transcript(*exchanges: tuple[str, str], **extra: Any) -> list[dict[str, Any]]:
    """[(user, assistant), ...] -> transcript messages numbered from turn 1."""
    out: list[dict[str, Any]] = []
    for i, (user, assistant) in enumerate(exchanges, 1):
        out.append({"role": "user", "content": user, "turn": i})
        out.append({"role": "assistant", "content": assistant, "turn": i, "latency_ms": extra.get("latency", 10.0) * i,
                    "tokens": extra.get("tokens", 5), "cost": extra.get("cost", 0.001)})
    return out


def check(text: str, messages: list[dict[str, Any]], labels: dict[str, int] | None = None,
          turn: int | None = None, suite_dir: Path | None = None, **ctx: Any) -> AssertionResult:
    s = spec(text, under_turn=turn)
    context = GradingContext(transcript=messages, labels=labels or {}, vars={}, test_id="t", turn=None,
                             suite_dir=suite_dir or Path("."), **ctx)
    return asyncio.run(evaluate(s, context))


def invoke(*args: str) -> tuple[int, str]:
    """`evalspec ARGS` in this process: its exit code and output; an exception other than SystemExit is raised."""
    result = CliRunner().invoke(main, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output
