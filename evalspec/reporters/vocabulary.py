"""The words and figures every report shares, written once: verdict counts, pass rate, the gate
headline, curve and SLA lines, the failing verdicts. Console, HTML, Markdown and JUnit render these,
so their counts cannot disagree (SPEC §9)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from evalspec.textutil import strip_controls

COUNT_LABELS = (("passed", "passed"), ("failed", "failed"), ("error", "error"), ("xfailed", "xfailed"),
                ("xpassed", "xpassed"), ("measured", "measured"), ("drafts", "drafts"),
                ("slas_missed", "SLAs missed"))
WHITESPACE = re.compile(r"\s+")


def one_line(text: Any) -> str:
    """Controls stripped, runs of whitespace (newlines too) made one space; edges kept for excerpts."""
    return WHITESPACE.sub(" ", strip_controls(text))


def ensure_current(run: dict[str, Any]) -> dict[str, Any]:
    """A run.json written before the shared vocabulary gets its counts recomputed from its records."""
    if "slas" in run and "measured" in run.get("summary", {}):
        return run
    from evalspec.results.aggregate import finalize

    gate = run.get("gate", {})
    return finalize(run, gate.get("fail_under"), bool(gate.get("include_drafts")))


def count_items(counts: dict[str, Any]) -> list[tuple[str, int]]:
    """(label, count) in display order; `skipped` only when something was skipped."""
    items = [(label, int(counts.get(key, 0))) for key, label in COUNT_LABELS]
    if counts.get("skipped"):
        items.insert(5, ("skipped", int(counts["skipped"])))
    return items


def counts_text(counts: dict[str, Any]) -> str:
    return " · ".join(f"{n} {label}" for label, n in count_items(counts))


def pass_rate_text(rate: float | None) -> str:
    """No gated verdict reached: "—", never 100%."""
    return "—" if rate is None else f"{rate:.0%}"


def gate_headline(gate: dict[str, Any]) -> str:
    return {0: "gate passed", 1: "gate failed", 3: "gate: errors left tests without a verdict"}.get(
        gate["exit_code"], f"exit {gate['exit_code']}")


def gate_line(gate: dict[str, Any], rate: Callable[[str], str] = str) -> str:
    """`gate failed · pass rate 25%`: the run's headline in every report (`rate` marks up the figure)."""
    return f"{gate_headline(gate)} · pass rate {rate(pass_rate_text(gate['pass_rate']))}"


def suite_gate_word(s: dict[str, Any]) -> str:
    return "failed" if not s["ok"] else "errors" if s.get("errors_exceeded") else "ok"


METRIC_COLUMNS = ("metric", "suite", "provider", "mean score", "share of tests passed")


def metric_cells(m: dict[str, Any]) -> list[str]:
    """One `summary.metrics` row as the scoreboard shows it: the mean score of the metric's checks beside
    the share of verdicts (test × provider, repeats combined) that passed every one of them, out of those
    that reached one — two different figures, each labelled (SPEC §17)."""
    share = f"{m['passed'] / m['total']:.0%} ({m['passed']}/{m['total']})" if m["total"] else "—"
    return [str(m["metric"]), str(m["suite"]), str(m["provider"]),
            "—" if m["mean"] is None else f"{m['mean']:.2f}", share]


def conversations_text(n: int) -> str:
    return f"{n} conversation{'s' if n != 1 else ''}"


def judge_text(summary: dict[str, Any]) -> str:
    """`4 judge calls (60 tokens, $0.0001)`: the calls evalspec made on its own behalf (judge, second opinion,
    simulated user, attacker), apart from the system under test's; "" when none was made."""
    if not summary.get("judge_calls"):
        return ""
    return (f"{summary['judge_calls']} judge call{'s' if summary['judge_calls'] != 1 else ''} "
            f"({summary.get('judge_tokens') or 0} tokens, ${summary.get('judge_cost') or 0.0:.4f})")


def curve_text(c: dict[str, Any]) -> str:
    """Points, half-life and failure point spelled out, so a met SLA never reads as a contradiction."""
    pts = ", ".join(f"{p['value']}: {p['mean']:.2f}" if p["mean"] is not None else f"{p['value']}: —"
                    for p in c["points"])
    parts = [f"{c['variable']} → mean score {pts}"]
    terms = c.get("describe") or ["half_life", "failure_point"]  # a curve's `summary:` term only (SPEC §17)
    if "half_life" in terms:
        parts.append(f"half-life {c['half_life']} (first mean < 0.5)" if c["half_life"] is not None
                     else "half-life: not reached")
    if "failure_point" in terms:
        parts.append(f"failure point {c['failure_point']} (first value where most samples fail)"
                     if c["failure_point"] is not None else "failure point: not reached")
    if "stable_range" in terms:
        parts.append(stable_text(c))
    return " · ".join(parts)


def verdict_records(run: dict[str, Any], v: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in run["results"] if r["suite"] == v["suite"] and r["base_id"] == v["test_id"]
            and r["provider"] == v["provider"]]


def failing(run: dict[str, Any]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Failed and errored verdicts (and measured points that failed a critical assertion), critical first,
    each with the records that show why (the failing repeats)."""
    out = []
    for v in run["verdicts"]:
        if v["category"] in ("failed", "error") or (v["category"] == "measured" and v["critical_failed"]):
            recs = [r for r in verdict_records(run, v) if r["status"] in ("failed", "error")]
            out.append((v, recs))
    out.sort(key=lambda item: (not item[0]["critical_failed"], item[0]["category"] == "error"))
    return out


def repeats_text(v: dict[str, Any]) -> str:
    return f" ({v['n'] - v['passed']} of {v['n']} repeats failed)" if v["n"] > 1 else ""


def stable_text(c: dict[str, Any]) -> str:
    """`stable until 6 (0.8, or the SLA minimum)`: the term seed 002 uses for topic switch and conflict."""
    if c.get("stable_until") is None:
        return "stable range: none (the first point is already below its minimum)"
    return f"stable until {c['stable_until']} (mean ≥ the SLA minimum covering each point, else 0.8)"
