"""What the fault properties share: a suite over one python bot, written from generated tests; the CLI in a
new process; run.json read back as plain JSON; what a `passed` record must hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings

WRONG = "wrong"  # a fault name: a reply that is received and fails its turn's `contains: 好的`

# no shrinking: a failing example is shown as generated (each one costs a run, some a process or two)
FEW = settings(deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate],
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def suite_yaml(tests: list[dict[str, Any]], head: str = "") -> str:
    """A suite over bot.py:respond (JSON is YAML: every generated value is written as data, never as text)."""
    return (f"options: {{cache: false, retries: 0}}\nproviders:\n  - id: bot\n    python: bot.py:respond\n{head}"
            f"tests:\n" + "".join(f"  - {json.dumps(t, ensure_ascii=False)}\n" for t in tests))




def cli(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`evalspec ARGS` in a new process, as CI runs it (real standard streams: the run is supervised)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    env.pop("EVALSPEC_SUPERVISE", None)
    return subprocess.run([sys.executable, "-m", "evalspec", *args], cwd=where, capture_output=True, text=True,
                          timeout=120, env=env)


def plain_json(path: Path) -> dict[str, Any]:
    """run.json read back as plain JSON: NaN or Infinity in it fail."""
    def refuse(name: str) -> None:
        raise AssertionError(f"{path}: {name} is not JSON")

    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)
    return data


def assert_all_ran_and_passed(record: dict[str, Any], assertions: int) -> None:
    """A `passed` record: each of its `assertions` assertions ran and passed, none errored."""
    results = record["assertions"]
    assert len(results) == assertions, record
    assert all(r["pass"] is True and r["error"] is None for r in results), record
