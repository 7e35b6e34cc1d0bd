"""Runs written by hand for the results tests: a record per test, a run around them."""

from __future__ import annotations

from typing import Any


def rec(test_id: str, status: str, *, provider: str = "bot", repeat: int = 1, n: int = 1, rule: str = "all",
        score: float | None = None, suite: str = "suites/a.yaml", **extra: Any) -> dict[str, Any]:
    base_id = test_id
    return {"suite": suite, "test_id": f"{base_id}#{repeat}" if n > 1 else base_id, "base_id": base_id,
            "test": base_id, "name": extra.pop("name", base_id.title()), "provider": provider, "repeat": repeat,
            "repeat_rule": rule, "status": status,
            "score": score if score is not None else (1.0 if status == "passed" else 0.0),
            "draft": extra.pop("draft", False), "xfail": extra.pop("xfail", None), "curve": extra.pop("curve", None),
            "critical_failed": extra.pop("critical_failed", False), "assertions": extra.pop("assertions", []),
            "transcript": extra.pop("transcript", []), "error": extra.pop("error", None), **extra}


def run(*records: dict[str, Any], curves: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"run_id": "r", "started_at": "2026-11-29T00:00:00+00:00", "results": list(records), "curves": curves or []}
