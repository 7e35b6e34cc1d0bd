"""Report sections of SPEC §11, from run.json alone: the judge's second opinion on rules (`judge_review`,
a flagged type first) and failures grouped by attribution. Each reporter calls one function here."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape
from rich.console import Console
from rich.markup import escape as rich_escape

from evalspec.reporters.vocabulary import one_line
from evalspec.results.attribution import ATTRIBUTABLE, by_attribution

FLAG_TEXT = "flagged: the judge disagrees with more than 10% of its verdicts (at least 5 sampled)"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def review_rows(run: dict[str, Any]) -> list[tuple[str, int, str, bool]]:
    """(type, sampled, agreement, flagged) per assertion type of the second opinion; flagged types first."""
    by_type = (run.get("judge_review") or {}).get("by_type") or {}
    rows = [(name, int(t["sampled"]), _pct(t["agreement"]), bool(t["flagged"])) for name, t in by_type.items()]
    return sorted(rows, key=lambda r: (not r[3], r[0]))


def review_headline(run: dict[str, Any]) -> str:
    review = run["judge_review"]
    flagged = review.get("flagged") or []
    head = (f"judge second opinion on {review['sampled']} of {review['candidates']} rule verdicts: "
            f"agreement {_pct(review['agreement'])}")
    if review.get("errors"):
        head += f", {review['errors']} unanswered"
    return head + (f" · FLAGGED: {', '.join(flagged)}" if flagged else "")


def attribution_groups(run: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(class, ["test @ provider (by) ..."]) for failed/errored records, when any carries an attribution or a
    suggestion; else nothing (a run nobody attributed shows no extra section)."""
    from evalspec.results.stream import records_where

    if not records_where(run["results"], lambda r: r.get("attribution") or r.get("attribution_suggested")):
        return []
    records = records_where(run["results"], lambda r: r["status"] in ATTRIBUTABLE)
    out = []
    for cls, members in by_attribution(records).items():
        names = []
        for r in members:
            text = f"{r['test_id']} @ {r['provider']}"
            if r.get("attribution_by"):
                text += f" ({r['attribution_by']})"
            if r.get("attribution_suggested") and r.get("attribution") != r["attribution_suggested"]:
                text += f" — suggested: {r['attribution_suggested']}"
            note = (r.get("triage") or {}).get("note")
            if note:
                text += f" — {note}"
            names.append(one_line(text))
        out.append((cls, list(dict.fromkeys(names))))
    return out


def markdown_lines(run: dict[str, Any], md: Any) -> list[str]:
    """The Markdown section (`md` escapes one line of text)."""
    lines: list[str] = []
    if run.get("judge_review"):
        lines += ["### Judge second opinion", "", md(review_headline(run)), "",
                  "| assertion type | sampled | agreement | |", "|---|---:|---:|---|"]
        lines += [f"| {md(name)} | {n} | {rate} | {'**⚠️ flagged**' if flagged else ''} |"
                  for name, n, rate, flagged in review_rows(run)]
        if any(r[3] for r in review_rows(run)):
            lines += ["", f"*{md(FLAG_TEXT)}*"]
    groups = attribution_groups(run)
    if groups:
        lines += [""] if lines else []
        lines += ["### Failures by attribution", ""]
        lines += [f"- **{md(cls)}** ({len(names)}): " + "; ".join(md(n) for n in names) for cls, names in groups]
    return lines


def print_judging(console: Console, run: dict[str, Any]) -> None:
    """The console lines."""
    if run.get("judge_review"):
        flagged = bool(run["judge_review"].get("flagged"))
        console.print(f"[{'red' if flagged else 'dim'}]{rich_escape(review_headline(run))}[/]")
        for name, n, rate, is_flagged in review_rows(run):
            if is_flagged:
                console.print(f"  [red]flagged[/] {rich_escape(name)}: agreement {rate} on {n} sampled")
    for cls, names in attribution_groups(run):
        console.print(f"[bold]{cls}[/] ({len(names)}): {rich_escape('; '.join(names))}")


def html_section(run: dict[str, Any]) -> Markup:
    """The HTML section (escaped)."""
    parts: list[str] = []
    if run.get("judge_review"):
        flag_cell = '<td class="failed">⚠ flagged</td>'
        rows = "".join(f"<tr><td>{escape(name)}</td><td>{n}</td><td>{rate}</td>{flag_cell if flagged else '<td></td>'}</tr>"
                       for name, n, rate, flagged in review_rows(run))
        parts.append(f"<h2>Judge second opinion</h2><p>{escape(review_headline(run))}</p>"
                     f"<table><tr><th>assertion type</th><th>sampled</th><th>agreement</th><th></th></tr>{rows}</table>")
        if any(r[3] for r in review_rows(run)):
            parts.append(f"<p class=\"meta\">{escape(FLAG_TEXT)}</p>")
    groups = attribution_groups(run)
    if groups:
        items = "".join(f"<li><b>{escape(cls)}</b> ({len(names)}): {escape('; '.join(names))}</li>"
                        for cls, names in groups)
        parts.append(f"<h2>Failures by attribution</h2><ul>{items}</ul>")
    return Markup("".join(parts))


def junit_properties(run: dict[str, Any]) -> dict[str, str]:
    """JUnit `<property>`s: the second opinion's agreement and flagged types, failures per attribution."""
    props: dict[str, str] = {}
    review = run.get("judge_review")
    if review:
        props["evalspec.judge_review.agreement"] = _pct(review.get("agreement"))
        props["evalspec.judge_review.flagged"] = ", ".join(review.get("flagged") or []) or "none"
    for cls, names in attribution_groups(run):
        props[f"evalspec.attribution.{cls}"] = str(len(names))
    return props
