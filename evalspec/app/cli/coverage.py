"""`evalspec coverage SUITE... [--run RUN.json] [--grid A,B] [--min N] [--md P] [-o P]` (docs/en/coverage.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from evalspec.core.exitcodes import ExitCode


def _same_file(a: str, b: str) -> bool:
    return a == b or Path(a).resolve() == Path(b).resolve()


def _write(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


def coverage_report(suites: list[Any], plan: Any, run: dict[str, Any] | None, grid: tuple[str, str] | None,
                    minimum: int | None, run_path: str | None = None) -> dict[str, Any]:
    """What the command prints and `-o` writes."""
    from evalspec.results import coverage as cov

    units = cov.units(plan)
    dims = cov.declared(s.coverage for s in suites)
    paths = [str(s.path) for s in suites]
    mine: dict[str, Any] | None = None
    if run is not None:  # the run's records and verdicts of these suites, named by the paths given here
        def given(entry: dict[str, Any]) -> str | None:
            return next((p for p in paths if _same_file(str(entry.get("suite")), p)), None)

        mine = {"results": [{**r, "suite": at} for r in run.get("results") or [] if (at := given(r))],
                "verdicts": [{**v, "suite": at} for v in run.get("verdicts") or [] if (at := given(v))]}
    report: dict[str, Any] = {"suites": paths, "run": run_path if run is not None else None,
                              **cov.matrix(units, dims, mine, grid)}
    report["rules"] = cov.gated_rules(suites)
    if mine is not None:
        report["state"] = cov.state_seen(mine["results"])
        called = cov.tools_called(mine["results"])
        report["tools_never_called"] = [t for t in cov.declared_tools(suites) if t not in called]
    report["min"] = minimum
    report["below_min"] = cov.below(report, minimum) if minimum is not None else []
    return report


@click.command("coverage")
@click.argument("paths", nargs=-1, required=True, metavar="SUITE...")
@click.option("--run", "run_path", type=click.Path(dir_okay=False),
              help="a run.json: also count each value's passed / failed / error verdicts, the state values "
                   "seen and the declared tools never called")
@click.option("--grid", help="two dimensions A,B drawn as a table (cells: tests / approved)")
@click.option("--min", "minimum", type=click.IntRange(0), help="exit 1 when a declared value has fewer than N "
                                                                 "approved (non-draft) tests")
@click.option("--md", "md_path", type=click.Path(dir_okay=False), help="also write the matrix as Markdown")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="also write it as JSON")
@click.option("--lang", type=click.Choice(["zh", "en"]),
              help="the language of the output (default: the suite's report.lang, else the user turns')")
def coverage_command(paths: tuple[str, ...], run_path: str | None, grid: str | None, minimum: int | None,
                     md_path: str | None, output: str | None, lang: str | None) -> None:
    """What the suites cover: each `coverage:` value with its tests, approved tests and (with --run) its
    verdicts; the gated rules with their tests and examples (docs/en/coverage.md). Exit 1 under --min N when a value
    has fewer than N approved tests."""
    from evalspec.app.api import expand_paths
    from evalspec.core.suggest import did_you_mean
    from evalspec.plan.build import Selection
    from evalspec.plan.preflight import prepare
    from evalspec.reporters.catalogue import choose_lang, speaking
    from evalspec.reporters.coverage import report_lines
    from evalspec.results.runjson import read_run, untyped

    suites, plan = prepare(list(expand_paths(list(paths))), {}, Selection(repeat=1), gate=False)  # a ConfigError: exit 2
    dims = [d for s in suites for d in s.coverage]
    pair: tuple[str, str] | None = None
    if grid is not None:
        names = [n.strip() for n in grid.split(",")]
        if len(names) != 2 or not all(names):
            raise click.BadParameter(f"expects two dimensions A,B, got {grid!r}", param_hint="--grid")
        for name in names:
            if name not in dims:
                known = ", ".join(dict.fromkeys(dims)) or "none declared"
                raise click.BadParameter(f"'{name}' is not a 'coverage:' dimension{did_you_mean(name, dims)} "
                                         f"(dimensions: {known})", param_hint="--grid")
        pair = (names[0], names[1])
    run = None
    if run_path is not None:
        run = untyped(read_run(run_path))  # exit 2 naming what is wrong with it
    report = coverage_report(suites, plan, run, pair, minimum, run_path)
    with speaking(choose_lang(None, lang, suites=suites)):
        text = "\n".join(report_lines(report, md=False))
        markdown = "\n".join(report_lines(report, md=True)) + "\n"
    click.echo(text)
    if output:
        _write(output, json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    if md_path:
        _write(md_path, markdown)
    sys.exit(ExitCode.GATE_FAILED if report["below_min"] else 0)
