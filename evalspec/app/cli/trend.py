"""`evalspec report A.json B.json ... --html trend.html`: the trend of several runs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import click

from evalspec.reporters.trend import render_trend, trend_series
from evalspec.results.runjson import read_run


def trend_command(paths: list[str], reports: Mapping[str, str]) -> int:
    """`reports`: format name → path (evalspec.reporters.formats.FORMATS); a trend is only HTML."""
    from evalspec.reporters.formats import FORMATS

    if any(name != "html" for name in reports):
        others = " and ".join(r.flag for r in sorted(FORMATS, key=lambda r: r.flag) if r.name != "html")
        raise click.UsageError(f"several run.json files make a trend: use --html ({others} take one run)")
    html_path = reports.get("html")
    runs = [read_run(p, stream=True) for p in paths]  # each run's records stay on disk (docs/en/scale-and-ray.md#memory)
    if html_path:
        Path(html_path).parent.mkdir(parents=True, exist_ok=True)
        Path(html_path).write_text(render_trend(runs), encoding="utf-8")
    ordered = sorted(runs, key=lambda r: str(r.get("started_at") or ""))
    for chart in trend_series(ordered):
        click.echo(chart["title"])
        for name, values in chart["series"].items():
            shown = ["–" if v is None else f"{v:.0%}" if chart["unit"] == "rate" else f"{v:g}" for v in values]
            click.echo(f"  {name}: {' → '.join(shown)}")
    if html_path:
        click.echo(f"trend: {html_path}")
    return 0
