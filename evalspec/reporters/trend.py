"""Trends across runs (docs/en/reports-and-gate.md#regressions-against-a-baseline): pass rate per suite and per metric, half-life per curve, over runs in
time order, as one self-contained HTML page with inline SVG charts (no script, no network)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

from markupsafe import Markup, escape

from evalspec.results.aggregate import metrics as metric_board
from evalspec.results.rundata import RunData

COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"]

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>evalspec trend</title>
<style>
body{{font-family:system-ui,-apple-system,"PingFang SC","Noto Sans CJK SC",sans-serif;margin:0;background:#f6f7f9;color:#1f2937}}
header{{background:#111827;color:#fff;padding:16px 24px}}header h1{{margin:0;font-size:20px}}
main{{padding:16px 24px;max-width:1100px}}svg{{background:#fff;border-radius:8px;box-shadow:0 1px 2px #0002;max-width:100%;height:auto}}
table{{border-collapse:collapse;background:#fff;margin:8px 0 24px;font-size:13px;display:block;overflow-x:auto}}
td,th{{padding:4px 8px;border-bottom:1px solid #e5e7eb;text-align:right}}td:first-child,th:first-child{{text-align:left}}
.meta{{color:#6b7280;font-size:12px}}
</style></head><body>
<header><h1>evalspec trend</h1><div class="meta" style="color:#d1d5db">{count} runs, {first} → {last}</div></header>
<main>{charts}</main></body></html>
"""


class TrendChart(TypedDict):
    """One chart of the trend page: a value per run (None where a run has none) for each series."""

    title: str
    unit: Literal["rate", "value"]
    series: dict[str, list[float | None]]


def _metric_rates(run: RunData) -> dict[str, float]:
    """Per metric: tests passed / tests, from summary.metrics (recomputed from the records when absent)."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    summary = run.get("summary")
    listed: Sequence[Mapping[str, Any]] | None = summary.get("metrics") if summary else None
    if not (isinstance(listed, list) and listed):
        listed = metric_board(run.get("results", []))
    for m in listed:
        totals[str(m["metric"])][0] += int(m.get("passed") or 0)
        totals[str(m["metric"])][1] += int(m.get("total") or 0)
    return {k: p / t for k, (p, t) in totals.items() if t}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def trend_series(runs: list[RunData]) -> list[TrendChart]:
    """Charts: each {title, unit, series: {name: [value per run or None]}}; runs already in time order."""
    suites: dict[str, list[float | None]] = {}
    metrics: dict[str, list[float | None]] = {}
    curves: dict[str, list[float | None]] = {}
    for i, run in enumerate(runs):
        gate = run.get("gate")
        for s in gate.get("suites", []) if gate else []:
            suites.setdefault(s["suite"], [None] * len(runs))[i] = _num(s.get("pass_rate"))
        for name, rate in _metric_rates(run).items():
            metrics.setdefault(name, [None] * len(runs))[i] = rate
        for c in run.get("curves", []):
            curves.setdefault(f"{c['test']} @ {c['provider']}", [None] * len(runs))[i] = _num(c.get("half_life"))
    charts: list[TrendChart] = [{"title": "Pass rate per suite", "unit": "rate", "series": suites}]
    if metrics:
        charts.append({"title": "Pass rate per metric", "unit": "rate", "series": metrics})
    if curves:
        charts.append({"title": "Half-life per curve", "unit": "value", "series": curves})
    return charts


def line_chart(chart: TrendChart, labels: list[str], width: int = 720, height: int = 280) -> Markup:
    """One line per series, one point per run that has a value (x = run, in time order)."""
    pad_l, pad_r, pad_t, pad_b = 56, 56, 16, 40
    values = [v for vs in chart["series"].values() for v in vs if v is not None]
    top = 1.0 if chart["unit"] == "rate" else max(values, default=1.0) * 1.1 or 1.0
    n = len(labels)

    def x(i: int) -> float:
        return pad_l + (i / (n - 1) if n > 1 else 0.5) * (width - pad_l - pad_r)

    def y(v: float) -> float:
        return pad_t + (1 - v / top) * (height - pad_t - pad_b)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" role="img" aria-label="{escape(chart["title"])}">']
    for k in range(5):
        v = top * k / 4
        label = f"{v:.0%}" if chart["unit"] == "rate" else f"{v:g}"
        parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e5e7eb"/>'
                     f'<text x="{pad_l - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">{label}</text>')
    for i, label in enumerate(labels):
        parts.append(f'<text x="{x(i):.1f}" y="{height - pad_b + 16}" font-size="11" text-anchor="middle">'
                     f"{escape(label)}</text>")
    for j, (name, vs) in enumerate(chart["series"].items()):
        color = COLORS[j % len(COLORS)]
        points = [(i, v) for i, v in enumerate(vs) if v is not None]
        if len(points) > 1:
            path = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in points)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        for i, v in points:
            shown = f"{v:.0%}" if chart["unit"] == "rate" else f"{v:g}"
            parts.append(f'<circle class="point" data-series="{escape(name)}" data-run="{i}" cx="{x(i):.1f}" '
                         f'cy="{y(v):.1f}" r="4" fill="{color}"><title>{escape(name)} · {escape(labels[i])}: '
                         f"{shown}</title></circle>")
    parts.append("</svg>")
    return Markup("".join(parts))


def _table(chart: TrendChart, labels: list[str]) -> Markup:
    head = "".join(f"<th>{escape(label)}</th>" for label in labels)
    rows = []
    for j, (name, vs) in enumerate(chart["series"].items()):
        cells = "".join("<td>–</td>" if v is None else f"<td>{v:.0%}</td>" if chart["unit"] == "rate"
                        else f"<td>{v:g}</td>" for v in vs)
        rows.append(f'<tr><td><span style="color:{COLORS[j % len(COLORS)]}">■</span> {escape(name)}</td>{cells}</tr>')
    return Markup(f"<table><tr><th></th>{head}</tr>{''.join(rows)}</table>")


def render_trend(runs: list[RunData]) -> str:
    """The trend page of several runs, put in time order (`started_at`)."""
    ordered = sorted(runs, key=lambda r: str(r.get("started_at") or ""))
    labels = [str(r.get("started_at") or "")[5:19].replace("T", " ") or str(r.get("run_id")) for r in ordered]
    charts = []
    for chart in trend_series(ordered):
        charts.append(Markup(f"<h2>{escape(chart['title'])}</h2>") + line_chart(chart, labels) + _table(chart, labels))
    return PAGE.format(count=len(ordered), first=escape(labels[0] if labels else ""),
                       last=escape(labels[-1] if labels else ""), charts=Markup("").join(charts))
