"""The simulator spread in every report (docs/en/agents.md#comparing-two-simulators): each simulator's pass
rate over the simulated tests it played, side by side, and the largest difference between them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from rich.console import Console
from rich.markup import escape as rich_escape

from evalspec.reporters.catalogue import words
from evalspec.reporters.vocabulary import one_line
from evalspec.results.rundata import RunData

if TYPE_CHECKING:
    from markupsafe import Markup

__all__ = ["SpreadRow", "html_section", "markdown_lines", "print_spread", "spread_rows"]


class SpreadRow(NamedTuple):
    simulator: str
    rate: str  # the pass rate as shown: `67%`, or `—` over nothing counted
    passed: int
    counted: int  # passed + failed: what the rate counts


def spread_rows(run: RunData) -> list[SpreadRow]:
    """One row per simulator of `summary.simulator_spread`, its counts from the verdicts it played."""
    spread = (run.get("summary") or {}).get("simulator_spread")
    if not spread:
        return []
    out = []
    for name, rate in spread["rates"].items():
        passed = counted = 0  # counted in one walk of the verdicts (docs/en/scale-and-ray.md#memory)
        for v in run.get("verdicts") or []:
            if v.get("simulator") == name and v.get("gated") and v["status"] in ("passed", "failed"):
                passed += v["status"] == "passed"
                counted += 1
        out.append(SpreadRow(name, "—" if rate is None else f"{rate:.0%}", passed, counted))
    return out


def difference(run: RunData) -> str:
    found = run["summary"].get("simulator_spread", {}).get("max_difference")
    return "—" if found is None else f"{found:.0%}"


def print_spread(console: Console, run: RunData) -> None:
    rows = spread_rows(run)
    for row in rows:
        console.print(words("spread_line", name=f"[bold]{rich_escape(one_line(row.simulator))}[/]", rate=row.rate,
                            passed=row.passed, counted=row.counted))
    if len(rows) > 1:
        console.print(words("spread_max", diff=difference(run)))


def _heads() -> list[str]:
    return [words("spread_simulator"), words("pass_rate"), words("spread_counted")]


def markdown_lines(run: RunData, md: Any) -> list[str]:
    rows = spread_rows(run)
    if not rows:
        return []
    out = ["", f"### {words('spread_title')}", "", "| " + " | ".join(md(h) for h in _heads()) + " |",
           "|---|---:|---:|"]
    out += [f"| {md(r.simulator)} | {r.rate} | {r.passed}/{r.counted} |" for r in rows]
    return [*out, "", words("spread_max", diff=difference(run))] if len(rows) > 1 else out


def html_section(run: RunData) -> Markup:
    from markupsafe import Markup, escape  # the HTML report only (docs/en/scale-and-ray.md#start-up)

    rows = spread_rows(run)
    if not rows:
        return Markup("")
    name, rate, counted = (f" data-label='{escape(h)}'" for h in _heads())
    body = "".join(f"<tr><td{name}><code>{escape(r.simulator)}</code></td><td class='num'{rate}>{escape(r.rate)}</td>"
                   f"<td class='num'{counted}>{r.passed}/{r.counted}</td></tr>" for r in rows)
    heads = "".join(f"<th>{escape(h)}</th>" for h in _heads())
    tail = f"<p>{escape(words('spread_max', diff=difference(run)))}</p>" if len(rows) > 1 else ""
    return Markup(f"<section id='simulator-spread'><h2>{escape(words('spread_title'))}</h2><div class='scroll'>"
                  f"<table class='spread stack'><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table></div>"
                  f"{tail}</section>")
