"""Commands over finished runs: `report` (re-render, or a trend of several), `diff`, `github-comment` and
`view` (the browser review)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.markup import escape

from evalspec.app.cli.common import LANG_OPTION, MAX_FAILURES_OPTION, err_console, report_options
from evalspec.core.exitcodes import ExitCode


@click.command()
@click.argument("run_jsons", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@report_options(helped=False)
@click.option("--html-all", "html_all", is_flag=True,
              help="embed every transcript in the HTML (a large run summarises passing ones beyond 1,000)")
@MAX_FAILURES_OPTION
@LANG_OPTION
def report(run_jsons: tuple[str, ...], reports: dict[str, str], html_all: bool, max_failures: int,
           lang: str | None) -> None:
    """Re-render reports from run.json (no path: the latest run in .evalspec/runs/);
    several run.json files: a trend (--html), runs in time order."""
    from evalspec.reporters.console import make_console, print_summary
    from evalspec.reporters.formats import ReportSettings, write_reports

    if len(run_jsons) > 1:
        from evalspec.app.cli.trend import trend_command

        sys.exit(trend_command(list(run_jsons), reports))
    from evalspec.results.runjson import read_run

    run_json = run_jsons[0] if run_jsons else latest_run(Path(".evalspec/runs"))
    data = read_run(run_json, stream=True)  # a large run's records stay on disk (docs/en/scale-and-ray.md#memory)
    written = write_reports(data, reports, ReportSettings(lang, max_failures, html_all))
    console = make_console()
    if not run_jsons:
        console.print(f"[dim]latest run: {escape(str(run_json))}[/]")
    print_summary(console, data, written, quiet=True, lang=lang, max_failures=max_failures)


def latest_run(runs: Path) -> str:
    """The run.json of the run that finished last (docs/en/rule-self-tests.md#verdicts-that-hold): each .evalspec/runs/<run-id>/ holds its
    run.json or, after `run -o`, a pointer to it; by modification time. Exit 2 when there is none."""
    from evalspec.app.api import POINTER

    found: list[tuple[float, str, Path]] = []
    for marker in [*runs.glob("*/run.json"), *runs.glob(f"*/{POINTER}")]:
        target = marker if marker.name == "run.json" else Path(marker.read_text(encoding="utf-8").strip())
        if target.is_file():
            found.append((marker.stat().st_mtime, marker.parent.name, target))
    if not found:
        err_console.print(f"error: no run found in {runs}/ (run `evalspec run` first, or give RUN.json)")
        sys.exit(ExitCode.CONFIG_ERROR)
    return str(max(found)[2])


@click.command(name="github-comment")
@click.argument("run_json", type=click.Path(exists=True, dir_okay=False))
@LANG_OPTION
def github_comment(run_json: str, lang: str | None) -> None:
    """Create or update this pull request's evalspec comment (found by a hidden marker).

    Reads GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_EVENT_PATH and GITHUB_TOKEN, as any Action step does.
    Exit 0 when the comment is up to date (or the event is not a pull request), 1 when GitHub refused."""
    from evalspec.review.github import GitHubError, NotAPullRequest, comment_run

    try:
        action, url = comment_run(Path(run_json), os.environ, lang)
    except NotAPullRequest as exc:
        click.echo(f"not a pull request ({exc}): no comment")
        return
    except GitHubError as exc:
        err_console.print(f"error: {escape(str(exc))}")
        sys.exit(1)
    click.echo(f"{action} the pull-request comment {url}".rstrip())


@click.command(name="diff")
@click.argument("base_json", type=click.Path(exists=True, dir_okay=False))
@click.argument("head_json", type=click.Path(exists=True, dir_okay=False))
@click.option("--md", "md_path", type=click.Path(dir_okay=False), help="write the diff as Markdown")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="write the diff as a self-contained HTML page")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the diff as JSON")
@click.option("--max-failures", "max_failures", type=click.IntRange(min=0), default=50, show_default=True,
              help="changed tests the console and Markdown list (then how many more; -o and --html list every one)")
@LANG_OPTION
def diff_(base_json: str, head_json: str, md_path: str | None, html_path: str | None, output: str | None,
          max_failures: int, lang: str | None) -> None:
    """Compare two runs verdict by verdict (docs/en/reports-and-gate.md#regressions-against-a-baseline).

    Exit 1 when anything regressed (regressed, new failing, an SLA newly missed), else 0."""
    from evalspec.app.cli.diff import run_diff_command

    sys.exit(run_diff_command(base_json, head_json, md_path, html_path, output, lang, max_failures))


@click.command()
@click.argument("paths", nargs=-1, metavar="[DIR] [RUN.json]...", type=click.Path(exists=True))
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0: any free port")
@click.option("--host", default="127.0.0.1", show_default=True, help="the address to bind (only this machine by default)")
@click.option("--reviewer", help="who the review actions are recorded as (default: the OS user)")
@click.option("--lang", type=click.Choice(["zh", "en"]),
              help="the pages' language (default: each run's own; the other pages the newest run's)")
def view(paths: tuple[str, ...], port: int, host: str, reviewer: str | None, lang: str | None) -> None:
    """Review runs in the browser: the runs of DIR/.evalspec/runs (and any RUN.json given), each run's report,
    the diff of two runs; record attributions, judge labels and draft approvals into DIR."""
    import asyncio

    from evalspec.app.view.server import serve
    from evalspec.review.triage import os_user

    dirs = [Path(p) for p in paths if Path(p).is_dir()]
    if len(dirs) > 1:
        raise click.UsageError(f"one project directory, got {len(dirs)}: {', '.join(map(str, dirs))}")
    root = (dirs[0] if dirs else Path(".")).resolve()
    extra = [Path(p).resolve() for p in paths if not Path(p).is_dir()]

    def announce(url: str) -> None:
        from evalspec.app.view.pages import home_lang
        from evalspec.app.view.runs import RunStore
        from evalspec.reporters.catalogue import speaking, words

        click.echo(url)
        with speaking(home_lang(RunStore(root, extra), lang)):  # the pages' language
            click.echo(words("cli_view_serving", root=root, who=reviewer or os_user()), err=True)

    try:
        asyncio.run(serve(root, extra, host, port, reviewer or os_user(), announce, lang))
    except OSError as exc:
        raise click.UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (try --port 0)") from None
    except KeyboardInterrupt:
        pass
