"""What the §27 gate keys ask of a suite's plan, checked before the first call (docs/en/statistics.md):
`gate.min_pass_hat_k: {k, min}` needs repeated tests, each played at least k times (after `--repeat`)."""

from __future__ import annotations

from evalspec.config.model import Suite
from evalspec.core.errors import Problem


def min_pass_hat_k_problems(suite: Suite, repeat: int | None) -> list[Problem]:
    """A problem when k exceeds the smallest repeat count of the suite's repeated tests, or none repeats;
    `repeat` is `--repeat` (it overrides every test's count)."""
    wanted = suite.min_pass_hat_k
    if not wanted or suite.lines is None:
        return []
    k = int(wanted["k"])
    counts = [repeat or t.repeat.n for t in suite.tests if not t.curve and not t.recorded]
    repeated = [n for n in counts if n >= 2]
    where = ("gate", "min_pass_hat_k", "k")
    if not repeated:
        return [suite.lines.problem(where, f"min_pass_hat_k needs repeated tests: no test of this suite repeats "
                                           f"(give them 'repeat: {max(k, 2)}' or run with --repeat {max(k, 2)})")]
    if k > min(repeated):
        return [suite.lines.problem(where, f"min_pass_hat_k: k={k} is more than the smallest repeat count of the "
                                           f"suite's repeated tests ({min(repeated)}); use k ≤ {min(repeated)} or "
                                           f"repeat every test at least {k} times")]
    return []
