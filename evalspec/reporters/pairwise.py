"""The pairwise section of every report (docs/en/judges.md#comparing-two-bot-versions-pairwise), from
run.json's `summary.pairwise` alone: per rule, wins, ties, position-inconsistent ties and losses, the
win rate with its Wilson interval, and against the baseline the sign test's p-value. When half the
comparisons or more changed winner with the order, the line says so: such ties pass `not_worse` by
rule, and a judge that only follows the position would otherwise turn the gate green unnoticed."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape as rich_escape

from evalspec.reporters.catalogue import words
from evalspec.results.rundata import RunData
from evalspec.results.stats import format_rate

if TYPE_CHECKING:
    from markupsafe import Markup


def pairwise_lines(run: RunData) -> list[str]:
    """One line per pairwise rule (`summary.pairwise`); none when the run compared nothing."""
    out = []
    for line in (run.get("summary") or {}).get("pairwise") or []:
        text = words("pairwise_line", rule=line["rule"], wins=line["wins"], ties=line["ties"],
                     inconsistent=line["inconsistent"], losses=line["losses"], n=line["n"],
                     rate=format_rate(line["wins"], line["n"]))
        if line.get("sign_p") is not None:
            text += words("pairwise_sign", p=f"{line['sign_p']:.3g}")
        if line["n"] and line["inconsistent"] * 2 >= line["n"]:  # a judge that follows the order, not the replies
            text += words("pairwise_order", inconsistent=line["inconsistent"], n=line["n"])
        out.append(text)
    return out


def markdown_lines(run: RunData, md: Callable[[str], str]) -> list[str]:
    """The Markdown section (`md` escapes one line of text)."""
    lines = pairwise_lines(run)
    if not lines:
        return []
    return [f"### {words('pairwise_title')}", "", *(f"- {md(x)}" for x in lines), ""]


def print_pairwise(console: Console, run: RunData) -> None:
    """The console lines."""
    for text in pairwise_lines(run):
        console.print(f"[bold]{rich_escape(words('pairwise_title'))}[/] {rich_escape(text)}")


def html_section(run: RunData) -> Markup:
    """The HTML section (escaped)."""
    from markupsafe import Markup, escape  # the HTML report only (docs/en/scale-and-ray.md#start-up)

    lines = pairwise_lines(run)
    if not lines:
        return Markup("")
    return Markup(f"<h2>{escape(words('pairwise_title'))}</h2><ul>"
                  + "".join(f"<li>{escape(x)}</li>" for x in lines) + "</ul>")
