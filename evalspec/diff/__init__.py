"""Regressions against a baseline (SPEC §10): compare two runs, confirm regressions by replaying
them, gate on "no regression", and fetch the base branch's run.json from GitHub."""

from evalspec.diff.compare import BLOCKING, CATEGORIES, compare_runs

__all__ = ["BLOCKING", "CATEGORIES", "compare_runs"]
