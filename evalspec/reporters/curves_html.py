"""Curves in the HTML report: one chart per `chart` (or per curve test), the mean score of each test ×
provider as a line, token growth per conversation beside it, and the points as a table.

Colours tell tests apart, dash patterns tell providers apart (when a chart holds one test, colours tell
providers apart). Everything written into the SVG is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from evalspec.config.model import describe_provider
from evalspec.reporters.catalogue import word, words
from evalspec.results.aggregate import sla_text
from evalspec.results.curves import DEFAULT_TERMS, as_number, charts, sla_entry_status
from evalspec.results.rundata import Provider, RunData

COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d", "#4d7c0f"]
DASHES = ["", "6 4", "2 3", "10 3 2 3"]
FIGURE = "flex:1 1 420px;min-width:0;margin:0"


def line_svg(lines: Sequence[Mapping[str, Any]], key: str, css: str, top: float | None = None,
             slas: bool = False, width: int = 520, height: int = 260) -> Markup:
    """One polyline per line (`points` with `value` and `key`), sharing the axes; `top` fixes the y range."""
    pad, left = 36, 56
    values = [p["value"] for c in lines for p in c["points"]]
    numeric = bool(values) and all(as_number(v) is not None for v in values)
    xs = sorted(set(values), key=lambda v: as_number(v) or 0.0) if numeric else list(dict.fromkeys(values))
    lo, hi = (as_number(xs[0]) or 0.0, as_number(xs[-1]) or 0.0) if numeric and xs else (0.0, float(max(len(xs) - 1, 1)))
    ys = [p[key] for c in lines for p in c["points"] if p.get(key) is not None]
    ymax = top if top is not None else (max(ys) * 1.1 if ys and max(ys) > 0 else 1.0)

    def x(v: Any) -> float:
        pos = as_number(v) if numeric else float(xs.index(v))
        return left + ((pos or 0.0) - lo) / ((hi - lo) or 1) * (width - left - pad)

    def y(value: float) -> float:
        return height - pad - value / ymax * (height - 2 * pad)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="{css}" viewBox="0 0 {width} {height}" '
             f'width="100%" style="max-width:{width}px" role="img">']
    for i in range(5):
        tick = ymax * i / 4
        label = f"{tick:g}" if top is not None else f"{tick:,.0f}"
        parts.append(f'<line x1="{left}" x2="{width - pad}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#e5e7eb"/>'
                     f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" font-size="11" text-anchor="end">{label}</text>')
    for v in xs:
        parts.append(f'<text x="{x(v):.1f}" y="{height - pad + 16}" font-size="11" text-anchor="middle">'
                     f'{escape(str(v))}</text>')
    for c in lines:
        pts = [(x(p["value"]), y(p[key]), p) for p in c["points"] if p.get(key) is not None]
        if pts:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b, _ in pts)
            dash = f' stroke-dasharray="{c["dash"]}"' if c["dash"] else ""
            parts.append(f'<polyline class="line" data-line="{escape(c["label"])}" fill="none" stroke="{c["color"]}" '
                         f'stroke-width="2"{dash} points="{path}"/>')
        for a, b, p in pts:
            parts.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{c["color"]}"><title>{escape(c["label"])} '
                         f'{escape(str(p["value"]))}: {p[key]:,.2f}</title></circle>')
        if slas and numeric:
            for s in c.get("sla", []):
                parts.append(f'<line x1="{left}" x2="{x(min(s["at"], hi)):.1f}" y1="{y(s["min_score"]):.1f}" '
                             f'y2="{y(s["min_score"]):.1f}" stroke="#f59e0b" stroke-dasharray="4 3"/>')
    parts.append(f'<text x="{(left + width - pad) / 2}" y="{height - 4}" font-size="12" text-anchor="middle">'
                 f'{escape(str(lines[0]["variable"]) if lines else "")}</text></svg>')
    return Markup("".join(parts))


def styled(chart: Mapping[str, Any], configs: Mapping[tuple[str, str], Provider]) -> list[dict[str, Any]]:
    """The chart's curves with a colour, a dash pattern, a label and the provider's configuration."""
    tests = list(dict.fromkeys((c["suite"], c["test"]) for c in chart["curves"]))
    providers = list(dict.fromkeys(c["provider"] for c in chart["curves"]))
    out = []
    for i, c in enumerate(chart["curves"]):
        cfg = configs.get((c["suite"], c["provider"]))
        shown = str(cfg and cfg.get("label") or c["provider"])  # a provider's `label:` names its line
        if len(tests) > 1:
            color = COLORS[tests.index((c["suite"], c["test"])) % len(COLORS)]
            dash = DASHES[providers.index(c["provider"]) % len(DASHES)]
            label = f"{c['name']} @ {shown}"
        else:
            color, dash, label = COLORS[i % len(COLORS)], "", shown
        out.append({**c, "color": color, "dash": dash, "label": label,
                    "config": describe_provider(cfg) if cfg else "", "terms": terms_words(c)})
    return out


def _fmt(v: Any, digits: int = 0) -> str:
    return "—" if v is None else f"{v:,.{digits}f}"


def chart_html(chart: Mapping[str, Any], lines: Sequence[Mapping[str, Any]]) -> Markup:
    rows = []
    for c in lines:
        # the SLA verdict's own words, with the measured value beside the target (as in every report)
        sla = "; ".join(f"{word(sla_entry_status(s))}: {sla_text(c, s)}"
                        for s in c["sla"])
        dash = "- -" if c["dash"] else "——"
        rows.append(f'<tr><td style="color:{c["color"]}">{dash} {escape(c["label"])}</td>'
                    f'<td class="meta">{escape(c["config"])}</td><td>{escape(c["terms"])}</td>'
                    f'<td>{escape(str(c.get("stable_until")) if c.get("stable_until") is not None else "—")}</td>'
                    f'<td>{escape(sla)}</td></tr>')
    points = []
    for c in lines:
        for p in c["points"]:
            points.append(f'<tr><td>{escape(c["label"])}</td><td>{escape(str(p["value"]))}</td>'
                          f'<td>{_fmt(p["mean"], 2)}</td><td>{p["n"]}</td><td>{_fmt(p.get("prompt_tokens"))}</td>'
                          f'<td>{_fmt(p.get("completion_tokens"))}</td><td>{_fmt(p.get("strategy_tokens"))}</td>'
                          f'<td>{_fmt(p.get("tokens"))}</td><td>{_fmt(p.get("cost"), 5)}</td></tr>')
    has_tokens = any(p.get("tokens") is not None for c in lines for p in c["points"])
    tokens = (Markup(f'<figure style="{FIGURE}"><figcaption>{escape(words("tokens_per_conversation"))}</figcaption>')
              + line_svg(lines, "tokens", "token-chart") + Markup("</figure>")) if has_tokens else Markup("")
    return (Markup(f'<section class="chart" data-chart="{escape(chart["title"])}"><h3>{escape(chart["title"])}</h3>'
                   '<div class="chart-row" style="display:flex;flex-wrap:wrap;gap:12px">'
                   f'<figure style="{FIGURE}"><figcaption>{escape(words("mean_score"))}</figcaption>')
            + line_svg(lines, "mean", "curve-chart", top=1.0, slas=True) + Markup("</figure>") + tokens
            + Markup('</div><table><tr>' + _heads("line", "configuration", "summary", "stable_until_col") + '<th>SLA</th></tr>'
                     + "".join(rows) + f'</table><details><summary>{escape(words("points"))}</summary><table><tr>'
                     + _heads("line", "x", "mean_score", "n", "prompt_tokens", "completion_tokens", "strategy_tokens",
                              "tokens", "cost") + "</tr>"
                     + "".join(points) + "</table></details></section>"))


def _heads(*keys: str) -> str:
    return "".join(f"<th>{escape(words(k))}</th>" for k in keys)


def terms_words(curve: Mapping[str, Any]) -> str:
    """The terms a curve is described by, in the report's language: `half-life 8 · failure point 5`."""
    parts = []
    for term in curve.get("describe") or DEFAULT_TERMS:
        if term == "half_life":
            parts.append(words("term_half_life", v=curve["half_life"]) if curve["half_life"] is not None
                         else words("half_life_none"))
        elif term == "failure_point":
            parts.append(words("term_failure_point", v=curve["failure_point"]) if curve["failure_point"] is not None
                         else words("failure_point_none"))
        elif term == "stable_range":
            rng = curve.get("stable_range")
            parts.append(words("term_stable_range", a=rng[0], b=rng[1]) if rng else words("term_stable_none"))
    return " · ".join(parts)


def curves_section(run: RunData) -> Markup:
    """Every chart of the run, or nothing when it has no curve."""
    configs = {(s["path"], p["id"]): p for s in run.get("suites", []) for p in s.get("providers", [])}
    groups = charts(run.get("curves") or [])
    if not groups:
        return Markup("")
    body = Markup("").join(chart_html(chart, styled(chart, configs)) for chart in groups)
    return Markup(f'<h2>{escape(words("Curves"))}</h2><div class="curves">') + body + Markup("</div>")


def pass_k_section(run: RunData) -> Markup:
    """pass^k and pass@k for k = 1..m (run.json `summary.pass_hat_k`, `summary.pass_at_k`) as one chart with
    their values in a table (docs/en/statistics.md); nothing when no test repeated."""
    summary = run.get("summary") or {}
    hat, at = list(summary.get("pass_hat_k") or []), list(summary.get("pass_at_k") or [])
    if not hat and not at:
        return Markup("")
    k_word = words("curve_k")
    lines = [{"label": words(name), "color": color, "dash": dash, "variable": k_word,
              "points": [{"value": k, "rate": float(v)} for k, v in enumerate(values, 1) if v is not None]}
             for name, values, color, dash in (("curve_pass_hat_k", hat, COLORS[0], ""),
                                               ("curve_pass_at_k", at, COLORS[2], "6 4")) if values]
    rows = "".join(f"<tr><td>{k}</td><td>{_fmt(h, 3)}</td><td>{_fmt(a, 3)}</td></tr>"
                   for k, h, a in zip(range(1, max(len(hat), len(at)) + 1), hat + [None] * len(at),
                                      at + [None] * len(hat)))
    legend = "".join(f'<span style="color:{c["color"]}">{"- -" if c["dash"] else "——"} {escape(c["label"])}</span> '
                     for c in lines)
    return (Markup(f'<section id="pass-k" class="chart"><h2>{escape(words("curve_pass_k_title"))}</h2>'
                   f'<figure style="{FIGURE}"><figcaption>{legend}</figcaption>')
            + line_svg(lines, "rate", "pass-k-chart", top=1.0)
            + Markup(f'</figure><table><tr><th>k</th><th>pass^k</th><th>pass@k</th></tr>{rows}</table></section>'))
