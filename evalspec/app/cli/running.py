"""`evalspec run`: its options checked, the suites prepared, the run played (in a child the parent watches,
when it can: evalspec.play.supervise), its reports written and its exit code chosen."""

from __future__ import annotations

import asyncio
import gc
import os
import shlex
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click
from rich.markup import escape

from evalspec.app.cli.common import config_error, err_console, kept_cwd, parse_vars
from evalspec.core.errors import ConfigError, Problem
from evalspec.core.exitcodes import ExitCode
from evalspec.reporters.formats import ReportSettings

if TYPE_CHECKING:
    from evalspec.app.api import Run
    from evalspec.config.model import Suite
    from evalspec.plan.build import Plan, Selection
    from evalspec.play.ray_executor import RayConfig
    from evalspec.play.runner import RunOptions
    from evalspec.play.supervise import PlayGuard
    from evalspec.reporters.console import ConsoleReporter


@dataclass
class RunCommand:
    """`evalspec run`'s options, as click passes them (their help is on the command in main.py)."""

    paths: tuple[str, ...]
    output: str | None
    reports: dict[str, str]  # format name → path (evalspec.reporters.formats.FORMATS)
    concurrency: int | None
    processes: int | None
    repeat: int | None
    filter_: str | None
    tags: tuple[str, ...]
    providers: tuple[str, ...]
    simulators: str | None  # `--simulator A,B` (docs/en/agents.md#comparing-two-simulators)
    transcripts: str | None
    fail_under: float | None
    include_drafts: bool
    no_cache: bool
    resume_dir: str | None
    var_pairs: tuple[str, ...]
    quiet: bool
    executor: str
    address: str | None
    baseline: str | None
    gate_mode: str | None
    confirm: int
    judge_sample: float | None
    seed: int
    html_all: bool
    max_failures: int
    lang: str | None
    check_judges: bool
    cli_vars: dict[str, str | int | float] = field(init=False)
    selection: Selection = field(init=False)
    written_to: list[str] = field(init=False)  # every file the run writes, as given (checked before it starts)
    run_dir: Path = field(init=False)  # absolute: user code that changes directory must not move it
    shown_run_dir: Path = field(init=False)  # as the user will type it again (--resume)
    hint: str = field(init=False)  # the command that resumes this run

    def start(self) -> None:
        """Refuse bad options (exit 2) before anything loads, then play: watched when it can be."""
        from evalspec.plan.build import Selection
        from evalspec.play.runner import new_run_id
        from evalspec.play.supervise import can_supervise, supervise

        self._check_options()
        self.cli_vars = parse_vars(self.var_pairs)
        self.selection = Selection(self.filter_, list(self.tags), list(self.providers), self.repeat, self.transcripts,
                                   self._simulators())
        self.written_to = [p for p in (self.output, *self.reports.values()) if p]
        # absolute from here on: user code that changes directory must not move evalspec's own files
        self.output = str(Path(self.output).absolute()) if self.output else None
        if self.baseline and self.baseline != "auto":
            self.baseline = str(Path(self.baseline).absolute())
        self.shown_run_dir = Path(self.resume_dir) if self.resume_dir else Path(".evalspec/runs") / new_run_id()
        self.run_dir = self.shown_run_dir.absolute()
        hint = shlex.join(sys.argv[1:])
        self.hint = f"evalspec {hint}" + ("" if "--resume" in hint else f" --resume {self.shown_run_dir}")
        if can_supervise():
            supervise(self.play, self.run_dir / "journal.jsonl", self.hint)
        self.play(None)

    def _simulators(self) -> list[str]:
        """`--simulator A,B`: the model names, each once."""
        if self.simulators is None:
            return []
        names = [name.strip() for name in self.simulators.split(",")]
        if not all(names):
            raise click.BadParameter(f"{self.simulators!r}: give model names separated by commas, e.g. "
                                     "openai/gpt-4o-mini,ollama/qwen2.5:7b", param_hint="--simulator")
        return list(dict.fromkeys(names))

    def _check_options(self) -> None:
        import regex

        if self.executor == "ray":
            try:
                import ray  # noqa: F401
            except ImportError:
                err_console.print("error: --executor ray needs ray: pip install 'evalspec[ray]'")
                sys.exit(ExitCode.CONFIG_ERROR)
        elif self.address:
            raise click.UsageError("--address goes with --executor ray")
        if self.filter_:
            try:
                regex.compile(self.filter_)
            except regex.error as exc:
                raise click.BadParameter(f"bad regex {self.filter_!r}: {exc}", param_hint="--filter") from None

    def play(self, guard: PlayGuard | None) -> NoReturn:
        """The suites loaded and checked (their plugins and python modules imported), then the run, its
        reports and its exit. `guard`: in the watched child (its exit code goes to the parent)."""
        suites, plan = self._prepared(guard)
        if self.resume_dir and not (self.run_dir / "journal.jsonl").exists():
            err_console.print(f"error: --resume {self.resume_dir}: no journal.jsonl there; nothing was run. Start a new "
                              f"run without --resume, or give the run folder under .evalspec/runs/ that was interrupted.")
            sys.exit(ExitCode.CONFIG_ERROR)
        if guard is not None:
            guard.ready()
        from evalspec.reporters.catalogue import choose_lang
        from evalspec.reporters.console import ConsoleReporter

        reporter = ConsoleReporter(quiet=self.quiet, include_drafts=self.include_drafts,
                                   lang=choose_lang(None, self.lang, suites=suites), max_failures=self.max_failures)
        result = self._played(suites, plan, reporter, guard)
        written = {"run.json": os.path.relpath(result.path) if result.path else ""}
        try:
            from evalspec.reporters.formats import write_reports

            written.update(write_reports(result.data, self.reports,
                                         ReportSettings(self.lang, self.max_failures, self.html_all)))
        except OSError as exc:  # a full disk under a report: the run is in run.json and the journal (exit 3)
            reporter.stop()
            self._storage_error(exc)
        reporter.on_finish(result.data, written, self.lang)
        gc.freeze()  # the process ends here: its last collection need not walk every record and module (~0.2 s)
        sys.exit(result.exit_code)

    def _prepared(self, guard: PlayGuard | None) -> tuple[list[Suite], Plan]:
        """The same checks as `validate`, then the run's own (exit 2 on any). User code that changes directory
        while it is loaded (a plugin, a python provider) or while it judges leaves the working directory as it
        was: the output paths are checked where the command was started."""
        from evalspec.app.api import expand_paths
        from evalspec.plan.preflight import prepare

        try:
            with kept_cwd():
                suites, plan = prepare(expand_paths(list(self.paths) or ["suites/*.yaml"]), self.cli_vars,
                                       self.selection)
            if self.transcripts and not any(s.transcripts is not None for s in suites):
                raise ConfigError([Problem("--transcripts", None, "", "no suite has 'transcripts:' to replace")])
            _check_writable(self.written_to)
            if self.check_judges:  # docs/en/judges.md#examples-of-judged-rules
                with kept_cwd():
                    _check_judges(suites, None if self.no_cache else Path(".evalspec/cache").absolute())
        except ConfigError as exc:
            if guard is not None:  # in the watched child: reported here, its exit code goes to the parent
                config_error(exc)
            raise
        return suites, plan

    def _played(self, suites: list[Suite], plan: Plan, reporter: ConsoleReporter, guard: PlayGuard | None) -> Run:
        """The run played and graded; interrupted, out of room or misconfigured, it ends the command."""
        from evalspec.app.api import arun
        from evalspec.core.interrupts import Interrupted, run_interruptible

        progress = None if self.quiet else lambda text: err_console.print(f"[dim]{escape(text)}[/]")
        options = self._options(suites, reporter, guard)
        try:
            with kept_cwd():
                return run_interruptible(arun(
                    suites, output=self.output, selection=self.selection, plan=plan,
                    options=options, baseline=self.baseline, gate=self.gate_mode,
                    confirm=self.confirm, judge_sample=self.judge_sample, seed=self.seed, on_progress=progress))
        except (Interrupted, KeyboardInterrupt) as exc:
            reporter.stop()
            self._interrupted(exc)
        except OSError as exc:  # a full disk, a read-only folder: never a traceback, never exit 1
            reporter.stop()
            self._storage_error(exc)
        except ConfigError as exc:
            reporter.stop()
            if guard is not None:  # in the watched child: reported here, its exit code goes to the parent
                config_error(exc)
            raise

    def _options(self, suites: list[Suite], reporter: ConsoleReporter, guard: PlayGuard | None) -> RunOptions:
        from evalspec.app.api import expand_paths
        from evalspec.play.runner import RunOptions
        from evalspec.results.journal import invocation_of

        ray: RayConfig | None = None
        if self.executor == "ray":  # only then is Ray's side of the run loaded (docs/en/scale-and-ray.md#start-up)
            from evalspec.play.ray_executor import RayConfig

            ray = RayConfig([str(f.resolve()) for f in expand_paths(list(self.paths) or ["suites/*.yaml"])],
                            self.cli_vars, self.selection, self.address)
        return RunOptions(
            concurrency=self.concurrency or max(int(s.option("concurrency")) for s in suites),
            processes=self.processes, run_dir=self.run_dir,
            resume=bool(self.resume_dir) or bool(guard and guard.resumed), use_cache=not self.no_cache,
            cache_dir=Path(".evalspec/cache").absolute(), fail_under=self.fail_under,
            include_drafts=self.include_drafts, on_start=reporter.on_start, on_result=reporter.on_result,
            stream_results=True, ray=ray, guard=guard,
            invocation=invocation_of(self.cli_vars, self.filter_, list(self.tags), list(self.providers), self.repeat,
                                     self.selection.simulators))

    def _interrupted(self, exc: BaseException) -> NoReturn:
        from evalspec.core.interrupts import Interrupted

        args = shlex.join(sys.argv[1:])
        what = "terminated" if isinstance(exc, Interrupted) and exc.signum == signal.SIGTERM else "interrupted"
        err_console.print(f"\n{what}: finished tests are kept in {self.shown_run_dir / 'journal.jsonl'}.\n"
                          f"resume with: evalspec {args} --resume {self.shown_run_dir}" if "--resume" not in args else
                          f"\n{what}: resume again with: evalspec {args}")
        sys.exit(exc.exit_code if isinstance(exc, Interrupted) else ExitCode.INTERRUPTED)

    def _storage_error(self, exc: OSError) -> NoReturn:
        """Exit 2 when nothing was played yet, 3 when some tests were, with the resume command when the
        journal is intact."""
        journal = self.run_dir / "journal.jsonl"
        where = exc.filename or journal
        played = journal.exists() and journal.stat().st_size > 0
        err_console.print(f"error: {escape(str(where))}: {escape(exc.strerror or str(exc))}; " + (
            f"finished tests are kept in {escape(str(journal))}; when there is room again, resume with: "
            f"{escape(self.hint)}" if played else "nothing was run."))
        sys.exit(ExitCode.TOO_MANY_ERRORS if played else ExitCode.CONFIG_ERROR)


def _check_writable(paths: list[str]) -> None:
    """Refuse to start a run whose results could not be written (exit 2, nothing runs)."""
    problems = []
    for raw in paths:
        parent = Path(raw).resolve().parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            problems.append(Problem(raw, None, "", f"cannot create its folder: {exc.strerror or exc}"))
            continue
        if not os.access(parent, os.W_OK) or Path(raw).is_dir():
            problems.append(Problem(raw, None, "", "cannot be written"))
    if problems:
        raise ConfigError(problems)


def _check_judges(suites: list[Suite], cache_dir: Path | None) -> None:
    """`run --check-judges`: every judged rule's examples graded by its judge; a wrong one is a ConfigError."""
    from evalspec.review.judged_examples import check_judges

    problems = [p for rule in asyncio.run(check_judges(suites, cache_dir)) for p in rule.problems]
    if problems:
        raise ConfigError(problems)
