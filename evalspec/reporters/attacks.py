"""The attack table (docs/en/attacks.md) in every report: success rate per red line × strategy × provider."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape as rich_escape

from evalspec.reporters.catalogue import words
from evalspec.reporters.vocabulary import one_line
from evalspec.results.rundata import AttackSummary, RunData

if TYPE_CHECKING:
    from markupsafe import Markup


def rows(run: RunData) -> list[AttackSummary]:
    summary = run.get("summary")
    return list(summary.get("attacks") or []) if summary else []


def rate_text(row: AttackSummary) -> str:
    if row.get("success_rate") is None:
        return "—"
    return f"{row['breached']}/{row['attempts']} ({row['success_rate']:.0%})"


def turns_text(row: AttackSummary) -> str:
    turns = [t for t in row.get("breach_turns") or [] if t is not None]
    return ", ".join(str(t) for t in turns) if turns else "—"


def print_attacks(console: Console, run: RunData) -> None:
    for row in rows(run):
        style = "red" if row["breached"] else "green"
        result = (f"[{style}]{words('attack_breached', rate=rate_text(row))}[/]"
                  + (words("attack_at_turn", turns=turns_text(row)) if row["breached"] else "")
                  + (words("attack_errored", n=row["errors"]) if row.get("errors") else ""))
        console.print(words("attack_line", red_line=f"[bold]{rich_escape(one_line(row['red_line']))}[/]",
                            strategy=rich_escape(row["strategy"]), provider=rich_escape(one_line(row["provider"])),
                            result=result))


def _heads() -> list[str]:
    return [words(k) for k in ("red_line", "strategy", "provider", "breached", "at_turn")]


def markdown_lines(run: RunData, md: Any) -> list[str]:
    if not rows(run):
        return []
    out = ["", f"### {words('attacks_title')}", "",
           "| " + " | ".join(md(h) for h in _heads()) + " |", "|---|---|---|---:|---|"]
    out += [f"| {md(r['red_line'])} | {md(r['strategy'])} | {md(r['provider'])} | "
            f"{'**' + rate_text(r) + '**' if r['breached'] else rate_text(r)} | {turns_text(r)} |" for r in rows(run)]
    return out


def html_section(run: RunData) -> Markup:
    from markupsafe import Markup, escape  # the HTML report only (docs/en/scale-and-ray.md#start-up)

    if not rows(run):
        return Markup("")
    red, strategy, provider, breached, at_turn = (f" data-label='{escape(h)}'" for h in _heads())
    body = "".join(
        f"<tr class='{'breached' if r['breached'] else 'held'}'><td{red}><code>{escape(r['red_line'])}</code></td>"
        f"<td{strategy}>{escape(r['strategy'])}</td><td{provider}>{escape(r['provider'])}</td>"
        f"<td class='num'{breached}>{'<mark>' if r['breached'] else ''}{escape(rate_text(r))}"
        f"{'</mark>' if r['breached'] else ''}</td><td{at_turn}>{escape(turns_text(r))}</td></tr>" for r in rows(run))
    heads = "".join(f"<th>{escape(h)}</th>" for h in _heads())
    # class stack: at 420 px each row is a card of label/value lines (html.py's CSS)
    return Markup(f"<section id='attacks'><h2>{escape(words('attacks_title'))}</h2><div class='scroll'>"
                  f"<table class='attacks stack'><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table></div></section>")
