"""`grade` and `rerun`: a finished run's recorded conversations graded again, or its failures played
again (each failed test, or only its failing turn)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape

from evalspec.app.cli.common import MAX_FAILURES_OPTION, err_console
from evalspec.app.cli.judges import after_grading, judge_sample_options
from evalspec.core.exitcodes import ExitCode

if TYPE_CHECKING:
    from evalspec.config.model import Suite
    from evalspec.plan.build import Instance


@click.command()
@click.argument("run_json", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here instead of replacing RUN.json")
@click.option("--no-cache", is_flag=True, help="do not use the cache for judge and embedder calls")
@judge_sample_options
@MAX_FAILURES_OPTION
def grade(run_json: str, output: str | None, no_cache: bool, judge_sample: float | None, seed: int,
          max_failures: int) -> None:
    """Re-run assertions on the recorded transcripts (no calls to the systems under test)."""
    import asyncio
    import tempfile

    from evalspec.play.replay import instances_of, regrade
    from evalspec.reporters.console import print_summary
    from evalspec.results.runjson import read_run, untyped, write_json
    from evalspec.review.triage import keep_attributions

    data = read_run(run_json, stream=True)  # a large run's records stay on disk (docs/en/scale-and-ray.md#memory)
    cache_dir = None if no_cache else Path(".evalspec/cache")
    with tempfile.TemporaryDirectory(prefix="evalspec-grade-") as spool:
        regraded, warnings = asyncio.run(regrade(untyped(data), cache_dir, Path(spool) / "graded.jsonl"))
        for w in warnings:
            err_console.print(f"warning: {escape(w)}")
        keep_attributions(data, regraded)
        instances: dict[str, Instance] = {}  # the plan again, only for a second opinion (a large run's is large)
        suites: list[Suite] = []
        if judge_sample:
            from evalspec.review.second_opinion import needs_judges

            instances, _ = instances_of(untyped(regraded))
            suites = list({id(i.suite): i.suite for i in instances.values()}.values())
            needs_judges(suites)
        regraded.pop("judge_review", None)  # an earlier second opinion judged verdicts that may have changed
        regraded = after_grading(regraded, instances, suites, judge_sample, seed, cache_dir)
        out = Path(output or run_json)
        write_json(out, regraded)
        print_summary(Console(highlight=False, soft_wrap=True), regraded, {"run.json": str(out)},
                      max_failures=max_failures)
    sys.exit(regraded["gate"]["exit_code"])


@click.command()
@click.argument("run_json", type=click.Path(exists=True, dir_okay=False))
@click.option("--failed", "failed_only", is_flag=True, help="re-play the failed tests")
@click.option("--at-turn", "at_turn", is_flag=True,
              help="ask each failed conversation's failing turn again, its history frozen (diagnoses, never gates)")
@click.option("--times", type=click.IntRange(min=1),
              help="replays per failed test (default 2), or asks of the failing turn with --at-turn (default 10)")
@click.option("--ids", "ids", multiple=True, metavar="ID",
              help="with --at-turn: only these tests (instance ids; repeatable or comma-separated)")
@click.option("-j", "--concurrency", type=click.IntRange(min=1), default=8, show_default=True)
def rerun(run_json: str, failed_only: bool, at_turn: bool, times: int | None, ids: tuple[str, ...],
          concurrency: int) -> None:
    """Re-play failed and errored tests N times and label each reproduced / flaky / error (--failed), or
    ask each failed conversation's failing turn again N times given its recorded history (--at-turn).

    --failed: exit 1 when any failure reproduced, 3 when replays only errored, else 0 (all flaky).
    --at-turn: exit 0 (2 on a usage error): it diagnoses, it does not gate."""
    if failed_only == at_turn:
        raise click.UsageError("choose one of --failed and --at-turn")
    if ids and not at_turn:
        raise click.UsageError("--ids goes with --at-turn")
    if at_turn:
        _rerun_at_turn(run_json, times or 10, [i for x in ids for i in x.split(",") if i.strip()], concurrency)
    import asyncio

    from evalspec.play.replay import rerun_failed
    from evalspec.results.runjson import read_run, untyped, write_json
    from evalspec.review.triage import attribute_reruns

    times = times or 2
    data = read_run(run_json)
    rows, warnings = asyncio.run(rerun_failed(untyped(data), times, concurrency))
    for w in warnings:
        err_console.print(f"warning: {escape(w)}")
    console = Console(highlight=False, soft_wrap=True)
    if not rows:
        console.print("no failed test to re-play")
    for row in rows:
        style = {"reproduced": "red", "flaky": "yellow", "error": "magenta"}[row["label"]]
        console.print(f"[{style}]{row['label']:10}[/] {escape(row['test_id'])} @ {escape(row['provider'])}  "
                      f"[dim]{', '.join(row['statuses'])}[/]")
    out = Path(run_json).with_name("rerun.json")
    write_json(out, {"run": str(run_json), "times": times, "results": rows})
    if attribute_reruns(data, rows):
        write_json(Path(run_json), data)  # reproduced -> bot_defect, flaky -> model_fluctuation, error -> infrastructure
    console.print(f"[dim]rerun.json: {escape(str(out))}[/]")
    labels = {r["label"] for r in rows}
    sys.exit(1 if "reproduced" in labels else 3 if labels == {"error"} else 0)


def _rerun_at_turn(run_json: str, times: int, ids: list[str], concurrency: int) -> None:
    """`rerun --at-turn` (docs/en/statistics.md#replay-at-the-failing-turn-rerun-at-turn): one line per conversation,
    `at_turn` written on its record in RUN.json; exit 0."""
    import asyncio

    from evalspec.play.at_turn import named, rerun_at_turn
    from evalspec.reporters.catalogue import choose_lang, speaking
    from evalspec.reporters.vocabulary import at_turn_text
    from evalspec.results.runjson import read_run, untyped, write_json

    data = untyped(read_run(run_json))
    unknown = [i for i in ids if not any(named(r, [i]) for r in data["results"])]
    if unknown:
        raise click.UsageError(f"--ids: no test {', '.join(map(repr, unknown))} in {run_json}")
    rows, warnings = asyncio.run(rerun_at_turn(data, times, ids, concurrency))
    for w in warnings:
        err_console.print(f"warning: {escape(w)}")
    console = Console(highlight=False, soft_wrap=True)
    if not rows:
        console.print("no failed conversation to replay at its turn")
    with speaking(choose_lang(data, None)):
        for row in rows:
            console.print(f"{escape(row['test_id'])} @ {escape(row['provider'])}: {escape(at_turn_text(row))}")
    if rows:
        write_json(Path(run_json), data)
    sys.exit(ExitCode.OK)
