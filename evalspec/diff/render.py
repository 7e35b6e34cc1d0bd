"""A diff (run.json's `baseline` key) as console lines, Markdown and an HTML section: a reporter (text
from the run is made safe by the same helpers as the rest of each report).

The reporters call these with the run's `baseline` value; `evalspec diff` calls them directly.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape
from rich.console import Console
from rich.markup import escape as rich_escape
from rich.table import Table

from evalspec.diff.compare import CATEGORIES, SCORE_DELTA
from evalspec.reporters.markdown import md

STYLE = {"regressed": "red", "new failing": "red", "failing, no baseline verdict": "red", "new error": "yellow", "flaky": "yellow", "fixed": "green",
         "recovered": "green", "still failing": "magenta", "new": "cyan", "removed": "dim", "unchanged": "dim"}
ICON = {"regressed": "🔴", "new failing": "🔴", "failing, no baseline verdict": "🔴", "new error": "⚠️", "flaky": "🟡", "fixed": "🟢", "recovered": "🟢",
        "still failing": "🟣", "new": "🆕", "removed": "➖", "unchanged": "⚪"}
LISTED = [c for c in CATEGORIES if c != "unchanged"]


def _status(side: dict[str, Any] | None) -> str:
    return "—" if side is None else str(side["status"])


def _num(v: Any, fmt: str = "{:.2f}") -> str:
    return "—" if v is None else fmt.format(v)


def _figure(head: Any, delta: Any, fmt: str, unit: str = "", prefix: str = "") -> str:
    """`13 ms (+9)`, or `—` when HEAD has no figure."""
    if head is None:
        return "—"
    shown = f"{prefix}{fmt.format(head)}{unit}"
    return shown if delta is None else f"{shown} ({fmt.replace('{:', '{:+').format(delta)})"


def headline(diff: dict[str, Any]) -> str:
    """One line: what changed against which run (or why there is no baseline)."""
    if not diff.get("available"):
        return f"no baseline: {diff.get('note') or 'none given'}; the usual gate ran"
    c = diff["counts"]
    parts = [f"{c[k]} {k}" for k in CATEGORIES if c.get(k)]
    base = diff["base"]
    return f"against baseline {base.get('run_id') or base.get('path')}: " + (", ".join(parts) or "no verdicts")


def _note(row: dict[str, Any]) -> str:
    bits = []
    if row["replays"]:
        bits.append("replays: " + ", ".join(row["replays"]))
    if row["draft"]:
        bits.append("draft, not gated")
    if row["measured"]:
        bits.append("measured point, not gated")
    if row["critical_new"]:
        bits.append("critical rule newly failed")
    if row["score_delta"] is not None and abs(row["score_delta"]) >= SCORE_DELTA - 1e-9:
        bits.append(f"score {_num(row['base']['score'])} → {_num(row['head']['score'])} ({row['score_delta']:+.2f})")
    return "; ".join(bits)


def print_diff(console: Console, diff: dict[str, Any]) -> None:
    console.print(f"[bold]{rich_escape(headline(diff))}[/]")
    if not diff.get("available"):
        return
    rows = [r for r in diff["rows"] if r["category"] != "unchanged"]
    rows.sort(key=lambda r: CATEGORIES.index(r["category"]))
    if rows:
        table = Table(title="against the baseline", show_lines=False)
        for col in ("change", "test", "provider", "base → head", "first problem / note"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(f"[{STYLE[r['category']]}]{r['category']}[/]", rich_escape(r["test_id"]),
                          rich_escape(r["provider"]), f"{_status(r['base'])} → {_status(r['head'])}",
                          rich_escape("; ".join(x for x in (r["problem"], _note(r)) if x)))
        console.print(table)
    listed = {(r["suite"], r["test_id"], r["provider"]) for r in rows}
    for s in diff["score_changes"]:
        if (s["suite"], s["test_id"], s["provider"]) not in listed:
            console.print(f"score {rich_escape(s['test_id'])} @ {rich_escape(s['provider'])}: "
                          f"{_num(s['base'])} → {_num(s['head'])} ({s['delta']:+.2f})")
    for line in curve_lines(diff):
        console.print(rich_escape(line))
    for line in provider_lines(diff):
        console.print(f"[dim]{rich_escape(line)}[/]")
    for reason in diff["reasons"]:
        console.print(f"[red]blocks:[/] {rich_escape(reason)}")


def curve_lines(diff: dict[str, Any]) -> list[str]:
    out = []
    for c in diff["curves"]:
        hl, fp = c["half_life"], c["failure_point"]
        sla = "; ".join(f"SLA at {x['at']} ≥ {x['min_score']}: {x['base'] or '—'} → {x['head']}"
                        + (" (newly missed)" if x["newly_missed"] else "") for x in c["sla"])
        out.append(f"curve {c['test']} @ {c['provider']}: half-life {hl[0]} → {hl[1]}, "
                   f"failure point {fp[0]} → {fp[1]}" + (f"; {sla}" if sla else ""))
    return out


def provider_lines(diff: dict[str, Any]) -> list[str]:
    out = []
    for p in diff["providers"]:
        b, h, d = p["base"] or {}, p["head"] or {}, p["delta"]
        out.append(f"{p['provider']}: latency mean {_figure(h.get('latency_mean'), d['latency_mean'], '{:.0f}', ' ms')}, "
                   f"p95 {_figure(h.get('latency_p95'), d['latency_p95'], '{:.0f}', ' ms')}, "
                   f"tokens/conversation {_figure(h.get('tokens'), d['tokens'], '{:.0f}')}, "
                   f"cost/conversation {_figure(h.get('cost'), d['cost'], '{:.4f}', prefix='$')}"
                   + ("" if b else " (new provider)"))
    return out


def markdown_lines(diff: dict[str, Any], limit: int = 50) -> list[str]:
    """The PR comment's section: newly failing tests first, then every other change."""
    out = [f"### {'Against the baseline' if diff.get('available') else 'No baseline'}", "", md(headline(diff))]
    if not diff.get("available"):
        return out
    rows = [r for r in diff["rows"] if r["category"] != "unchanged"]
    rows.sort(key=lambda r: (not r["blocking"], CATEGORIES.index(r["category"])))
    if rows:
        out += ["", "| change | test | provider | base → head | first problem / note |", "|---|---|---|---|---|"]
        for r in rows[:limit]:
            text = "; ".join(x for x in (r["problem"], _note(r)) if x)
            name = r["name"] if r["name"] == r["test_id"] else f"{r['name']} ({r['test_id']})"
            out.append(f"| {ICON[r['category']]} **{r['category']}** | {md(name)} | {md(r['provider'])} | "
                       f"{_status(r['base'])} → {_status(r['head'])} | {md(text[:300])} |")
        if len(rows) > limit:
            out.append(f"\n… and {len(rows) - limit} more changes (see the HTML report)")
    listed = {(r["suite"], r["test_id"], r["provider"]) for r in rows}
    extra = [f"- score {md(s['test_id'])} @ {md(s['provider'])}: {_num(s['base'])} → {_num(s['head'])} "
             f"({s['delta']:+.2f})" for s in diff["score_changes"]
             if (s["suite"], s["test_id"], s["provider"]) not in listed]
    extra += [f"- {md(line)}" for line in curve_lines(diff)]
    if extra:
        out += ["", *extra[:limit]]
    if diff["providers"]:
        out += ["", "| provider | latency mean | p95 | tokens / conv. | cost / conv. |", "|---|---:|---:|---:|---:|"]
        for p in diff["providers"]:
            h, d = p["head"] or {}, p["delta"]
            out.append(f"| {md(p['provider'])} | {_figure(h.get('latency_mean'), d['latency_mean'], '{:.0f}', ' ms')} | "
                       f"{_figure(h.get('latency_p95'), d['latency_p95'], '{:.0f}', ' ms')} | "
                       f"{_figure(h.get('tokens'), d['tokens'], '{:.0f}')} | "
                       f"{_figure(h.get('cost'), d['cost'], '{:.4f}', prefix='$')} |")
    return out


def html_section(diff: dict[str, Any]) -> Markup:
    """A self-contained `<section>` for the HTML report (everything escaped)."""
    parts = [f'<section id="baseline"><h2>{"Against the baseline" if diff.get("available") else "No baseline"}</h2>',
             f"<p>{escape(headline(diff))}</p>"]
    if diff.get("available"):
        rows = sorted((r for r in diff["rows"] if r["category"] != "unchanged"),
                      key=lambda r: (not r["blocking"], CATEGORIES.index(r["category"])))
        if rows:
            # its own scroll box: a narrow screen scrolls the table, never the page
            parts.append('<div style="overflow-x:auto;max-width:100%"><table>'
                         "<tr><th>change</th><th>test</th><th>provider</th><th>base → head</th>"
                         "<th>first problem / note</th></tr>")
            for r in rows:
                css = "failed" if r["blocking"] else "passed" if r["category"] in ("fixed", "recovered") else "skipped"
                text = "; ".join(x for x in (r["problem"], _note(r)) if x)
                parts.append(f'<tr data-change="{escape(r["category"])}"><td class="{css}" style="white-space:nowrap">{escape(r["category"])}</td>'
                             f"<td>{escape(r['name'])} <span class=\"meta\">{escape(r['test_id'])}</span></td>"
                             f"<td>{escape(r['provider'])}</td><td>{escape(_status(r['base']))} → "
                             f"{escape(_status(r['head']))}</td><td style='overflow-wrap:anywhere'>{escape(text)}</td></tr>")
            parts.append("</table></div>")
        listed = {(r["suite"], r["test_id"], r["provider"]) for r in rows}
        items = [f"score {s['test_id']} @ {s['provider']}: {_num(s['base'])} → {_num(s['head'])} ({s['delta']:+.2f})"
                 for s in diff["score_changes"] if (s["suite"], s["test_id"], s["provider"]) not in listed]
        items += curve_lines(diff) + provider_lines(diff)
        if items:
            parts.append('<ul style="word-break:break-word">' + "".join(f"<li>{escape(i)}</li>" for i in items)
                         + "</ul>")
    parts.append("</section>")
    return Markup("".join(parts))


def junit_properties(diff: dict[str, Any]) -> dict[str, str]:
    """Name → value pairs for JUnit `<properties>`."""
    if not diff.get("available"):
        return {"baseline": "none", "baseline.note": str(diff.get("note") or "")}
    props = {"baseline": str(diff["base"].get("run_id") or diff["base"].get("path"))}
    props.update({f"baseline.{c.replace(' ', '_')}": str(diff["counts"][c]) for c in CATEGORIES})
    return props
