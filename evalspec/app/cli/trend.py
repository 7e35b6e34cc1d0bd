"""`evalspec report A.json B.json ... --html trend.html`: the trend of several runs."""

from __future__ import annotations

from pathlib import Path

import click

from evalspec.reporters.trend import render_trend, trend_series
from evalspec.results.runjson import read_run


def trend_command(paths: list[str], html_path: str | None, junit_path: str | None, md_path: str | None) -> int:
    if junit_path or md_path:
        raise click.UsageError("several run.json files make a trend: use --html (--junit and --md take one run)")
    runs = [read_run(p) for p in paths]
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
