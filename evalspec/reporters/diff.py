"""A diff (run.json's `baseline` key) as console lines, Markdown and an HTML section: a reporter (text
from the run is made safe by the same helpers as the rest of each report).

The reporters call these with the run's `baseline` value; `evalspec diff` calls them directly.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from markupsafe import Markup, escape
from rich.console import Console
from rich.markup import escape as rich_escape
from rich.table import Table

from evalspec.reporters.catalogue import word, words
from evalspec.reporters.vocabulary import md
from evalspec.results.compare import CATEGORIES, SCORE_DELTA
from evalspec.results.rundata import Baseline, BaselineRow, ScoreChange

STYLE = {"regressed": "red", "new failing": "red", "failing, no baseline verdict": "red", "new error": "yellow", "flaky": "yellow", "fixed": "green",
         "recovered": "green", "still failing": "magenta", "new": "cyan", "removed": "dim", "unchanged": "dim"}
ICON = {"regressed": "🔴", "new failing": "🔴", "failing, no baseline verdict": "🔴", "new error": "⚠️", "flaky": "🟡", "fixed": "🟢", "recovered": "🟢",
        "still failing": "🟣", "new": "🆕", "removed": "➖", "unchanged": "⚪"}
LISTED = [c for c in CATEGORIES if c != "unchanged"]


def _status(side: Mapping[str, Any] | None) -> str:
    return "—" if side is None else word(str(side["status"]))


def _num(v: Any, fmt: str = "{:.2f}") -> str:
    return "—" if v is None else fmt.format(v)


def _figure(head: Any, delta: Any, fmt: str, unit: str = "", prefix: str = "") -> str:
    """`13 ms (+9)`, or `—` when HEAD has no figure."""
    if head is None:
        return "—"
    shown = f"{prefix}{fmt.format(head)}{unit}"
    return shown if delta is None else f"{shown} ({fmt.replace('{:', '{:+').format(delta)})"


def headline(diff: Baseline) -> str:
    """One line: what changed against which run (or why there is no baseline)."""
    if not diff.get("available"):
        return words("no_baseline", note=diff.get("note") or words("no_baseline_given"))
    return words("against_baseline", base=diff["base"].get("run_id") or diff["base"].get("path"),
                 parts=" · ".join(headline_parts(diff["rows"])) or words("no_verdicts"))


def headline_parts(rows: Iterable[BaselineRow]) -> list[str]:
    """`2 regressed · 1 fixed · 4 measured points changed`: gated changes by kind, curve points apart (they
    gate only through their SLA, docs/en/reports-and-gate.md#language); one pass over the rows."""
    gated, measured = dict.fromkeys(CATEGORIES, 0), 0
    for r in rows:
        if not r.get("measured"):
            gated[r["category"]] += 1
        elif r["category"] != "unchanged":
            measured += 1
    parts = [f"{n} {words(k)}" for k in CATEGORIES if (n := gated[k])]
    if measured:
        parts.append(words("measured_point_changed" if measured == 1 else "measured_points_changed", n=measured))
    return parts


def _scored(row: BaselineRow) -> bool:
    """An errored side has no score to compare (`vocabulary.score_text`)."""
    return all(side is None or side.get("status") != "error" for side in (row["base"], row["head"]))


def _changes(diff: Baseline, order: Callable[[BaselineRow], tuple[object, ...]],
             limit: int | None = None) -> tuple[Iterable[BaselineRow], int, list[ScoreChange]]:
    """The changed rows in `order` (only the first `limit` kept), how many rows changed, and the score
    changes a report shows beside them (none where either run errored, `_scored`, nor of a listed row): one pass over the
    rows, which a large diff reads back from disk (docs/en/scale-and-ray.md#memory). All of a large diff's
    changed rows (no `limit`) are not held to be sorted: they are read again once for each place in `order`
    that some row takes (most diffs have one to three), in the diff's order within it."""
    scored = {(s["suite"], s["test_id"], s["provider"]) for s in diff["score_changes"]}
    shown: set[tuple[str, str, str]] = set()  # score changes listed as a change, or with an errored side
    changed = 0
    orders: set[tuple[object, ...]] = set()
    on_disk = limit is None and not isinstance(diff["rows"], list)

    def changes() -> Iterator[BaselineRow]:
        nonlocal changed
        for r in diff["rows"]:
            if (key := (r["suite"], r["test_id"], r["provider"])) in scored and (r["category"] != "unchanged" or not _scored(r)):
                shown.add(key)
            if r["category"] != "unchanged":
                changed += 1
                if on_disk:
                    orders.add(order(r))
                else:
                    yield r

    rows: Iterable[BaselineRow]
    if on_disk or limit == 0:  # (heapq.nsmallest(0, …) would not walk the rows: nothing counted)
        for _ in changes():
            pass
        rows = _in_order(diff["rows"], order, sorted(orders)) if on_disk else []  # type: ignore[type-var]
    else:
        rows = sorted(changes(), key=order) if limit is None else heapq.nsmallest(limit, changes(), key=order)
    extra = [s for s in diff["score_changes"] if (s["suite"], s["test_id"], s["provider"]) not in shown]
    return rows, changed, extra


def _in_order(rows: Iterable[BaselineRow], order: Callable[[BaselineRow], tuple[object, ...]],
              places: list[tuple[object, ...]]) -> Iterator[BaselineRow]:
    """The changed rows, those of each place in `order` in turn: a pass over the rows for each."""
    for place in places:
        for r in rows:
            if r["category"] != "unchanged" and order(r) == place:
                yield r


def _by_kind(r: BaselineRow) -> tuple[int]:
    return (CATEGORIES.index(r["category"]),)


def _blocking_first(r: BaselineRow) -> tuple[bool, int]:
    return not r["blocking"], CATEGORIES.index(r["category"])


def _note(row: BaselineRow) -> str:
    bits = []
    if row["replays"]:
        bits.append(words("replays", list=", ".join(row["replays"])))
    if row["draft"]:
        bits.append(words("draft_not_gated"))
    if row["measured"]:
        bits.append(words("measured_not_gated"))
    if row["critical_new"]:
        bits.append(words("critical_newly"))
    delta, base, head = row.get("score_delta"), row["base"], row["head"]
    if delta is not None and abs(delta) >= SCORE_DELTA - 1e-9 and _scored(row) and base and head:  # both scored
        bits.append(words("score_change", base=_num(base["score"]), head=_num(head["score"]), delta=f"{delta:+.2f}"))
    return "; ".join(bits)


def print_diff(console: Console, diff: Baseline, limit: int = 50) -> None:
    """The diff on screen: the first `limit` changed tests by kind (`--max-failures`), then how many more."""
    console.print(f"[bold]{rich_escape(headline(diff))}[/]")
    if not diff.get("available"):
        return
    rows, changed, extra = _changes(diff, _by_kind, limit)
    if rows:
        table = Table(title=words("against_the_baseline_title"), show_lines=False)
        for col in _COLUMNS:
            table.add_column(words(col), overflow="fold")
        for r in rows:
            table.add_row(f"[{STYLE[r['category']]}]{words(r['category'])}[/]", rich_escape(r["test_id"]),
                          rich_escape(r["provider"]), f"{_status(r['base'])} → {_status(r['head'])}",
                          rich_escape("; ".join(x for x in (r["problem"], _note(r)) if x)))
        console.print(table)
    if changed > limit:
        console.print(rich_escape(words("more_changes", n=changed - limit)))
    for s in extra:
        console.print(rich_escape(_score_line(s)))
    for line in curve_lines(diff):
        console.print(rich_escape(line))
    for line in provider_lines(diff):
        console.print(f"[dim]{rich_escape(line)}[/]")
    for reason in diff["reasons"]:
        console.print(f"[red]{words('blocks')}[/] {rich_escape(reason)}")


_COLUMNS = ("change", "test", "provider", "base_head", "first_problem")


def _score_line(s: ScoreChange) -> str:
    return words("score_line", test=s["test_id"], provider=s["provider"], base=_num(s["base"]), head=_num(s["head"]),
                 delta=f"{s['delta']:+.2f}")


def curve_lines(diff: Baseline) -> list[str]:
    out = []
    for c in diff["curves"]:
        hl, fp = c["half_life"], c["failure_point"]
        sla = "; ".join(words("sla_diff", at=x["at"], min=x["min_score"], base=x["base"] or "—", head=x["head"])
                        + (words("newly_missed") if x["newly_missed"] else "") for x in c["sla"])
        out.append(words("curve_diff", test=c["test"], provider=c["provider"], hl0=hl[0], hl1=hl[1], fp0=fp[0],
                         fp1=fp[1]) + (f"; {sla}" if sla else ""))
    return out


def provider_lines(diff: Baseline) -> list[str]:
    out = []
    for p in diff["providers"]:
        b, h, d = p["base"] or {}, p["head"] or {}, p["delta"]
        out.append(words("provider_diff", provider=p["provider"],
                         mean=_figure(h.get("latency_mean"), d["latency_mean"], "{:.0f}", " ms"),
                         p95=_figure(h.get("latency_p95"), d["latency_p95"], "{:.0f}", " ms"),
                         tokens=_figure(h.get("tokens"), d["tokens"], "{:.0f}"),
                         cost=_figure(h.get("cost"), d["cost"], "{:.4f}", prefix="$"))
                   + ("" if b else words("new_provider")))
    return out


def markdown_lines(diff: Baseline, limit: int = 50) -> list[str]:
    """The PR comment's section: newly failing tests first, then every other change."""
    out = [f"### {words('Against the baseline' if diff.get('available') else 'No baseline')}", "", md(headline(diff))]
    if not diff.get("available"):
        return out
    rows, changed, scored = _changes(diff, _blocking_first, limit)
    if rows:
        out += ["", "| " + " | ".join(words(c) for c in _COLUMNS) + " |", "|---|---|---|---|---|"]
        for r in rows:
            text = "; ".join(x for x in (r["problem"], _note(r)) if x)
            name = r["name"] if r["name"] == r["test_id"] else f"{r['name']} ({r['test_id']})"
            out.append(f"| {ICON[r['category']]} **{words(r['category'])}** | {md(name)} | {md(r['provider'])} | "
                       f"{_status(r['base'])} → {_status(r['head'])} | {md(text[:300])} |")
        if changed > limit:
            out.append("\n" + words("more_changes", n=changed - limit))
    extra = [f"- {md(_score_line(s))}" for s in scored]
    extra += [f"- {md(line)}" for line in curve_lines(diff)]
    if extra:
        out += ["", *extra[:limit]]
    if diff["providers"]:
        out += ["", "| " + " | ".join(words(c) for c in ("provider", "latency_mean", "p95", "tokens_conv", "cost_conv"))
                + " |", "|---|---:|---:|---:|---:|"]
        for p in diff["providers"]:
            h, d = p["head"] or {}, p["delta"]
            out.append(f"| {md(p['provider'])} | {_figure(h.get('latency_mean'), d['latency_mean'], '{:.0f}', ' ms')} | "
                       f"{_figure(h.get('latency_p95'), d['latency_p95'], '{:.0f}', ' ms')} | "
                       f"{_figure(h.get('tokens'), d['tokens'], '{:.0f}')} | "
                       f"{_figure(h.get('cost'), d['cost'], '{:.4f}', prefix='$')} |")
    return out


def html_section(diff: Baseline) -> Markup:
    """A self-contained `<section>` for the HTML report (everything escaped)."""
    return Markup("".join(html_section_parts(diff)))


def html_section_parts(diff: Baseline) -> Iterator[str]:
    """`html_section` piece by piece, a changed test a piece: a page of a large diff is written as its
    rows are read, never held whole (docs/en/scale-and-ray.md#memory)."""
    yield (f'<section id="baseline"><h2>{escape(words("Against the baseline" if diff.get("available") else "No baseline"))}</h2>'
           f"<p>{escape(headline(diff))}</p>")
    if diff.get("available"):
        rows, changed, scored = _changes(diff, _blocking_first)
        if changed:
            # its own scroll box: a narrow screen scrolls the table, never the page
            labels = [escape(words(c)) for c in _COLUMNS]
            yield ('<div style="overflow-x:auto;max-width:100%"><table><thead><tr>'
                   + "".join(f"<th>{label}</th>" for label in labels) + "</tr></thead>")
            for r in rows:
                css = "failed" if r["blocking"] else "passed" if r["category"] in ("fixed", "recovered") else "skipped"
                text = "; ".join(x for x in (r["problem"], _note(r)) if x)
                yield (f'<tr data-change="{escape(r["category"])}"><td data-label="{labels[0]}" class="{css}" style="white-space:nowrap">{escape(words(r["category"]))}</td>'
                       f"<td data-label=\"{labels[1]}\">{escape(r['name'])} <span class=\"meta\">{escape(r['test_id'])}</span></td>"
                       f"<td data-label=\"{labels[2]}\">{escape(r['provider'])}</td><td data-label=\"{labels[3]}\">{escape(word(_status(r['base'])))} → "
                       f"{escape(word(_status(r['head'])))}</td><td data-label=\"{labels[4]}\" style='overflow-wrap:anywhere'>{escape(text)}</td></tr>")
            yield "</table></div>"
        items = [_score_line(s) for s in scored]
        items += curve_lines(diff) + provider_lines(diff)
        if items:
            yield '<ul style="word-break:break-word">' + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>"
    yield "</section>"


def junit_properties(diff: Baseline) -> dict[str, str]:
    """Name → value pairs for JUnit `<properties>`."""
    if not diff.get("available"):
        return {"baseline": "none", "baseline.note": str(diff.get("note") or "")}
    props = {"baseline": str(diff["base"].get("run_id") or diff["base"].get("path"))}
    props.update({f"baseline.{c.replace(' ', '_')}": str(diff["counts"][c]) for c in CATEGORIES})
    return props
