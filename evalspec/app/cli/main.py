"""The `evalspec` command line (docs/en/reference/cli.md): the group, `run`, and the commands of the other modules of
evalspec/app/cli (runs.py: report, diff, github-comment, view; regrade.py: grade, rerun; suites.py:
validate, schema, list, init, redteam; imports.py: import, export; judges.py, coverage.py, plan.py)."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.markup import escape

from evalspec.app.cli.common import (
    LANG_OPTION,
    MAX_FAILURES_OPTION,
    OUTPUT_FLAGS,
    config_error,
    err_console,
    report_options,
)
from evalspec.app.cli.judges import FiniteRange, judge_sample_options
from evalspec.core.errors import ConfigError
from evalspec.core.exitcodes import ExitCode
from evalspec.core.version import __version__

EXIT_CODES_HELP = """\b
Exit codes:
  0  gate passed
  1  gate failed: pass rate below gate.min_pass_rate / --fail-under,
     a critical assertion failed, or an SLA was missed
  2  usage or config error: nothing was run
  3  no gated test failed, but errors (provider, judge, timeout)
     exceeded gate.max_errors
  130 interrupted (Ctrl-C), 143 terminated (SIGTERM): finished tests are
      kept; --resume RUN_DIR completes the run
"""

#: commands whose verdicts were reached before their output could not be written (docs/en/rule-self-tests.md#verdicts-that-hold: 3 after a run)
_GRADING = ("grade", "rerun")


class _Group(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        from evalspec.reporters.catalogue import choose_lang, speaking

        kwargs.setdefault("standalone_mode", True)
        with speaking(choose_lang()):  # each command may choose again (`catalogue.use`) once it has read its input
            return self._main(*args, **kwargs)

    def _main(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().main(*args, **kwargs)
        except ConfigError as exc:
            config_error(exc)
        except OSError as exc:  # a full disk, a read-only folder under an output: never a traceback, never exit 1
            argv = list(kwargs.get("args") or (args[0] if args else None) or sys.argv[1:])
            command = next((a for a in argv if not a.startswith("-")), "")
            outputs = [v for flag, v in zip(argv, argv[1:]) if flag in OUTPUT_FLAGS]  # a failed write names no file
            where = f"{exc.filename}: " if exc.filename else f"{', '.join(outputs)}: " if outputs else ""
            err_console.print(f"error: {escape(str(where))}{escape(exc.strerror or str(exc))}; that output was not "
                              f"written (check its folder and the space left, or choose another path, then run the command again)")
            sys.exit(ExitCode.TOO_MANY_ERRORS if command in _GRADING else ExitCode.CONFIG_ERROR)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalspec")
def main() -> None:
    """Test chatbots and agents as whole conversations."""


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="run.json path (default .evalspec/runs/<run-id>/run.json)")
@report_options()
@click.option("-j", "--concurrency", type=click.IntRange(min=1), help="conversations in flight at once (default 8)")
@click.option("--processes", type=click.IntRange(min=1),
              help="processes playing conversations (default: one per core for 2,000+ conversations without "
                   "rpm/max_concurrency limits; 1: this process only)")
@click.option("--repeat", type=click.IntRange(min=1), help="override every test's repeat count")
@click.option("--filter", "filter_", help="only tests whose id or name matches this regex")
@click.option("--tag", "tags", multiple=True, help="only tests with this tag (repeatable; any)")
@click.option("--provider", "providers", multiple=True, help="only this provider (repeatable)")
@click.option("--simulator", "simulators", metavar="A,B",
              help="play every simulated test with each of these simulator models (in place of the suites' "
                   "simulator:), their pass rates side by side")
@click.option("--transcripts", "transcripts", metavar="PATH",
              help="grade these recorded conversations (JSONL or CSV, or a glob) instead of each suite's transcripts.path")
@click.option("--fail-under", type=FiniteRange(0, 1), help="gate: pass rate (0..1) below this fails the run")
@click.option("--include-drafts", is_flag=True, help="drafts count toward the gate")
@click.option("--no-cache", is_flag=True, help="do not read or write the response cache")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False), help="continue an interrupted run")
@click.option("--var", "var_pairs", multiple=True, help="set/override a suite var: KEY=VALUE (repeatable)")
@click.option("-q", "--quiet", is_flag=True, help="only the summary")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="where conversations run")
@click.option("--address", help="ray cluster address (with --executor ray)")
@click.option("--html-all", "html_all", is_flag=True,
              help="embed every transcript in the HTML (a large run summarises passing ones beyond 1,000)")
@click.option("--baseline", help="BASE.json (or 'auto': the base branch's run on GitHub) to diff against")
@click.option("--gate", "gate_mode", type=click.Choice(["pass_rate", "regressions", "regressions-paired"]),
              help="regressions: only what got worse than --baseline fails the run; regressions-paired: "
                   "an exact paired test decides whether it got worse")
@click.option("--confirm", type=click.IntRange(min=0), default=2, show_default=True,
              help="replays (no cache) before a verdict is called regressed")
@click.option("--check-judges", is_flag=True,
              help="before any call to a system under test, grade the `examples:` of every judged rule with its "
                   "judge (twice, uncached); a misgraded or inconsistent one stops the run (exit 2)")
@MAX_FAILURES_OPTION
@LANG_OPTION
@judge_sample_options
def run(**options: Any) -> None:
    """Run suites (default: suites/*.yaml) and gate on the result."""
    from evalspec.app.cli.running import RunCommand

    RunCommand(**options).start()  # the options, typed: evalspec/app/cli/running.py


from evalspec.app.cli.coverage import coverage_command  # noqa: E402
from evalspec.app.cli.imports import export, import_  # noqa: E402
from evalspec.app.cli.judges import doctor_command, judge_eval_command, triage_command  # noqa: E402
from evalspec.app.cli.plan import plan_command  # noqa: E402
from evalspec.app.cli.regrade import grade, rerun  # noqa: E402
from evalspec.app.cli.runs import diff_, github_comment, report, view  # noqa: E402
from evalspec.app.cli.suites import init, list_, redteam, schema, validate  # noqa: E402

for _command in (report, diff_, github_comment, view, grade, rerun, validate, schema, list_, init, redteam,
                 import_, export, judge_eval_command, triage_command, doctor_command, coverage_command, plan_command):
    main.add_command(_command)

if __name__ == "__main__":  # pragma: no cover
    main()
