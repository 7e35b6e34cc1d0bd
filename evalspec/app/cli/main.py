"""The `evalspec` command line (SPEC §1)."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from evalspec.app.cli.judges import (
    FiniteRange,
    after_grading,
    doctor_command,
    judge_eval_command,
    judge_sample_options,
    triage_command,
)
from evalspec.core.errors import ConfigError, Problem
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

err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def _config_error(exc: ConfigError) -> None:
    """Every problem in file and line order under its lead word, then the count, in the screen's language
    (the problems' own messages are English: docs/en/troubleshooting.md lists them)."""
    from evalspec.reporters.catalogue import words

    for problem in sorted(exc.problems, key=_file_and_line):
        err_console.print(f"[red]{words('cli_error')}[/] {escape(str(problem))}")
    count = len(exc.problems)
    err_console.print(words("cli_problems_one" if count == 1 else "cli_problems_many", n=count))
    sys.exit(ExitCode.CONFIG_ERROR)


def _file_and_line(problem: Problem) -> tuple[str, int]:
    return str(problem.file), problem.line or 0


def files_lang(paths: list[str], override: str | None) -> str:
    """The language of a command over suite files that may not load (`validate`): `choose_lang` given
    the files' first `lang: zh|en` line and their `user:` lines, read as text."""
    import regex

    from evalspec.reporters.catalogue import choose_lang

    texts, declared = [], None
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        declared = declared or next(iter(regex.findall(r"(?m)\blang:\s*['\"]?(zh|en)\b", text)), None)
        texts += regex.findall(r"(?m)^[\s-]*user:\s*(.+)$", text)
    return choose_lang(None, override, declared=declared, texts=texts)


def _parse_vars(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`--var KEY=VALUE`: the value is the text typed (`yes` stays yes, not YAML's true), except a
    number written as Python writes it (`3`, `-2`, `0.5`), which is that number so templates can count
    with it; `007`, `1.50`, `1e3`, `nan` stay text (they would not read back as typed)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"--var expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = _var_value(value)
    return out


def _var_value(text: str) -> str | int | float:
    for number_type in (int, float):
        try:
            number = number_type(text)
        except ValueError:
            continue
        if str(number) == text and math.isfinite(number):
            return number
    return text


def _count(n: int, noun: str) -> str:
    """`1 suite`, `2 tests`; in Chinese `1 个套件`, `2 个测试` (the catalogue's `cli_count_<noun>`)."""
    from evalspec.reporters.catalogue import current, words

    if current() == "zh":
        return words(f"cli_count_{noun}", n=n)
    return f"{n} {noun}{'s' if n != 1 else ''}"


#: commands whose verdicts were reached before their output could not be written (SPEC §17: 3 after a run)
_GRADING = ("grade", "rerun")
_OUTPUT_FLAGS = ("-o", "--output", "--html", "--md", "--junit")


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
            _config_error(exc)
        except OSError as exc:  # a full disk, a read-only folder under an output: never a traceback, never exit 1
            argv = list(kwargs.get("args") or (args[0] if args else None) or sys.argv[1:])
            command = next((a for a in argv if not a.startswith("-")), "")
            outputs = [v for flag, v in zip(argv, argv[1:]) if flag in _OUTPUT_FLAGS]  # a failed write names no file
            where = f"{exc.filename}: " if exc.filename else f"{', '.join(outputs)}: " if outputs else ""
            err_console.print(f"error: {escape(str(where))}{escape(exc.strerror or str(exc))}; that output was not "
                              f"written (check its folder and the space left, or choose another path, then run the command again)")
            sys.exit(ExitCode.TOO_MANY_ERRORS if command in _GRADING else ExitCode.CONFIG_ERROR)


MAX_FAILURES_OPTION = click.option(
    "--max-failures", "max_failures", type=click.IntRange(min=0), default=50, show_default=True,
    help="failing tests the console and Markdown list (then how many more; the HTML lists every one)")
LANG_OPTION = click.option(
    "--lang", type=click.Choice(["zh", "en"]),
    help="the language of the reports (default: the suite's report.lang, else Chinese when most user turns are Chinese)")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalspec")
def main() -> None:
    """Test chatbots and agents as whole conversations."""


def _check_judges(suites: list[Any], cache_dir: Path | None) -> None:
    """`run --check-judges`: every judged rule's examples graded by its judge; a wrong one is a ConfigError."""
    from evalspec.review.judged_examples import check_judges

    problems = [p for rule in asyncio.run(check_judges(suites, cache_dir)) for p in rule.problems]
    if problems:
        raise ConfigError(problems)


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="run.json path (default .evalspec/runs/<run-id>/run.json)")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="write a self-contained HTML report")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="write JUnit XML")
@click.option("--md", "md_path", type=click.Path(dir_okay=False), help="write a Markdown summary")
@click.option("-j", "--concurrency", type=click.IntRange(min=1), help="conversations in flight at once (default 8)")
@click.option("--processes", type=click.IntRange(min=1),
              help="processes playing conversations (default: one per core for 2,000+ conversations without "
                   "rpm/max_concurrency limits; 1: this process only)")
@click.option("--repeat", type=click.IntRange(min=1), help="override every test's repeat count")
@click.option("--filter", "filter_", help="only tests whose id or name matches this regex")
@click.option("--tag", "tags", multiple=True, help="only tests with this tag (repeatable; any)")
@click.option("--provider", "providers", multiple=True, help="only this provider (repeatable)")
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
def run(paths: tuple[str, ...], output: str | None, html_path: str | None, junit_path: str | None,
        md_path: str | None, concurrency: int | None, processes: int | None, repeat: int | None, filter_: str | None,
        tags: tuple[str, ...], providers: tuple[str, ...], transcripts: str | None, fail_under: float | None, include_drafts: bool,
        no_cache: bool, resume_dir: str | None, var_pairs: tuple[str, ...], quiet: bool, executor: str,
        address: str | None, baseline: str | None, gate_mode: str | None, confirm: int,
        judge_sample: float | None, seed: int, html_all: bool, max_failures: int, lang: str | None,
        check_judges: bool) -> None:
    """Run suites (default: suites/*.yaml) and gate on the result."""
    import regex

    from evalspec.app.api import arun, expand_paths
    from evalspec.core.interrupts import Interrupted, run_interruptible
    from evalspec.plan.build import Selection
    from evalspec.plan.preflight import prepare
    from evalspec.play.ray_executor import RayConfig
    from evalspec.play.runner import RunOptions, new_run_id
    from evalspec.play.supervise import PlayGuard, can_supervise, supervise
    from evalspec.reporters.console import ConsoleReporter
    from evalspec.results.journal import invocation_of

    if executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            err_console.print("error: --executor ray needs ray: pip install 'evalspec[ray]'")
            sys.exit(ExitCode.CONFIG_ERROR)
    elif address:
        raise click.UsageError("--address goes with --executor ray")
    if filter_:
        try:
            regex.compile(filter_)
        except regex.error as exc:
            raise click.BadParameter(f"bad regex {filter_!r}: {exc}", param_hint="--filter") from None
    cli_vars = _parse_vars(var_pairs)
    patterns = list(paths) or ["suites/*.yaml"]
    selection = Selection(filter_, list(tags), list(providers), repeat, transcripts)
    written_to = [p for p in (output, html_path, junit_path, md_path) if p]
    # absolute from here on: user code that changes directory must not move evalspec's own files
    cwd = os.getcwd()
    output = str(Path(output).absolute()) if output else None
    baseline = str(Path(baseline).absolute()) if baseline and baseline != "auto" else baseline
    run_dir = Path(resume_dir) if resume_dir else Path(".evalspec/runs") / new_run_id()
    shown_run_dir, run_dir = run_dir, run_dir.absolute()
    hint = shlex.join(sys.argv[1:])
    hint = f"evalspec {hint}" + ("" if "--resume" in hint else f" --resume {shown_run_dir}")

    def play(guard: PlayGuard | None) -> None:
        """The suites loaded and checked (their plugins and python modules imported), then the run, its
        reports and its exit: in a child the parent watches, when it can (evalspec.play.supervise)."""
        try:
            suites, plan = prepare(expand_paths(patterns), cli_vars, selection)  # the same checks as `validate`
            if transcripts and not any(s.transcripts is not None for s in suites):
                raise ConfigError([Problem("--transcripts", None, "", "no suite has 'transcripts:' to replace")])
            _check_writable(written_to)
            if check_judges:  # docs/en/judges.md#examples-of-judged-rules
                _check_judges(suites, None if no_cache else Path(".evalspec/cache").absolute())
        except ConfigError as exc:
            os.chdir(cwd)
            if guard is not None:  # in the watched child: reported here, its exit code goes to the parent
                _config_error(exc)
            raise
        os.chdir(cwd)  # a plugin that changed directory while it was loaded
        if resume_dir and not (run_dir / "journal.jsonl").exists():
            err_console.print(f"error: --resume {resume_dir}: no journal.jsonl there; nothing was run. Start a new "
                              f"run without --resume, or give the run folder under .evalspec/runs/ that was interrupted.")
            sys.exit(ExitCode.CONFIG_ERROR)
        if guard is not None:
            guard.ready()
        from evalspec.reporters.catalogue import choose_lang

        live_lang = choose_lang(None, lang, suites=suites)
        reporter = ConsoleReporter(quiet=quiet, include_drafts=include_drafts, lang=live_lang,
                                   max_failures=max_failures)
        options = RunOptions(concurrency=concurrency or max(int(s.option("concurrency")) for s in suites), processes=processes,
                             run_dir=run_dir, resume=bool(resume_dir) or bool(guard and guard.resumed), use_cache=not no_cache,
                             cache_dir=Path(".evalspec/cache").absolute(),
                             fail_under=fail_under, include_drafts=include_drafts,
                             on_start=reporter.on_start, on_result=reporter.on_result, stream_results=True,
                             ray=RayConfig([str(f.resolve()) for f in expand_paths(patterns)], cli_vars, selection,
                                           address) if executor == "ray" else None, guard=guard,
                             invocation=invocation_of(cli_vars, filter_, list(tags), list(providers), repeat))
        try:
            result = run_interruptible(arun(suites, output=output, selection=selection, plan=plan, options=options,
                                            baseline=baseline, gate=gate_mode, confirm=confirm,
                                            judge_sample=judge_sample, seed=seed,
                                            on_progress=None if quiet else
                                            lambda text: err_console.print(f"[dim]{escape(text)}[/]")))
        except (Interrupted, KeyboardInterrupt) as exc:
            os.chdir(cwd)
            reporter.stop()
            args = shlex.join(sys.argv[1:])
            what = "terminated" if isinstance(exc, Interrupted) and exc.signum == signal.SIGTERM else "interrupted"
            err_console.print(f"\n{what}: finished tests are kept in {shown_run_dir / 'journal.jsonl'}.\n"
                              f"resume with: evalspec {args} --resume {shown_run_dir}" if "--resume" not in args else
                              f"\n{what}: resume again with: evalspec {args}")
            sys.exit(exc.exit_code if isinstance(exc, Interrupted) else ExitCode.INTERRUPTED)
        except OSError as exc:  # a full disk, a read-only folder: never a traceback, never exit 1
            os.chdir(cwd)
            reporter.stop()
            _storage_error(exc, run_dir / "journal.jsonl", hint)
        except ConfigError as exc:
            os.chdir(cwd)
            reporter.stop()
            if guard is not None:  # in the watched child: reported here, its exit code goes to the parent
                _config_error(exc)
            raise
        os.chdir(cwd)
        written = {"run.json": os.path.relpath(result.path) if result.path else ""}
        try:
            written.update(_write_reports(result.data, html_path, junit_path, md_path, html_all, lang,
                                          max_failures))
        except OSError as exc:  # a full disk under a report: the run is in run.json and the journal (exit 3)
            reporter.stop()
            _storage_error(exc, run_dir / "journal.jsonl", hint)
        reporter.on_finish(result.data, written, lang)
        gc.freeze()  # the process ends here: its last collection need not walk every record and module (~0.2 s)
        sys.exit(result.exit_code)

    if can_supervise():
        supervise(play, run_dir / "journal.jsonl", hint)
    play(None)


def _storage_error(exc: OSError, journal: Path, hint: str) -> None:
    """Exit 2 when nothing was played yet, 3 when some tests were, with the resume command when the journal is intact."""
    where = exc.filename or journal
    played = journal.exists() and journal.stat().st_size > 0
    err_console.print(f"error: {escape(str(where))}: {escape(exc.strerror or str(exc))}; " + (
        f"finished tests are kept in {escape(str(journal))}; when there is room again, resume with: {escape(hint)}"
        if played else "nothing was run."))
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


def _write_reports(data: dict[str, Any], html_path: str | None, junit_path: str | None,
                   md_path: str | None, html_all: bool = False, lang: str | None = None,
                   max_failures: int = 50) -> dict[str, str]:
    """Each report asked for; an OSError names the report it was writing (a failed write names no file)."""
    written = {}
    for kind, raw in (("junit", junit_path), ("markdown", md_path), ("html", html_path)):
        if not raw:
            continue
        try:
            _write_report(kind, data, Path(raw), html_all, lang, max_failures)
        except OSError as exc:
            if exc.filename is None:
                exc.filename = raw
            raise
        written[kind] = raw
    return written


def _write_report(kind: str, data: dict[str, Any], path: Path, html_all: bool, lang: str | None,
                  max_failures: int) -> None:
    if kind == "junit":
        from evalspec.reporters.junit import write_junit

        write_junit(data, path, lang)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "markdown":
        from evalspec.reporters.markdown import render_markdown

        path.write_text(render_markdown(data, lang=lang, max_failures=max_failures), encoding="utf-8")
    else:
        from evalspec.reporters.html import write_html

        write_html(data, path, html_all=html_all, lang=lang)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--var", "var_pairs", multiple=True, help="set/override a suite var: KEY=VALUE")
@click.option("--strict", is_flag=True,
              help="also warn on every critical deterministic assertion without a fail example, and treat "
                   "every warning as an error (exit 2)")
@click.option("--lang", type=click.Choice(["zh", "en"]), help="the language of the output (default: the suite's "
              "report.lang, else EVALSPEC_LANG, else Chinese when most user turns are Chinese)")
def validate(paths: tuple[str, ...], var_pairs: tuple[str, ...], strict: bool, lang: str | None) -> None:
    """Everything `run` checks before its first call (schema, labels, templates, python files,
    providers, judges, each rule against its `examples:`); every problem of every file at once; runs nothing."""
    from evalspec.app.api import expand_paths
    from evalspec.config.rule_examples import rule_warnings
    from evalspec.plan.preflight import prepare
    from evalspec.play.supervise import can_supervise, watch
    from evalspec.reporters.catalogue import use, words

    cli_vars = _parse_vars(var_pairs)
    files = [str(p) for p in expand_paths(list(paths))]
    use(files_lang(files, lang))

    def check() -> None:
        suites, plan = prepare(list(expand_paths(list(paths))), cli_vars)
        warnings = rule_warnings(suites, strict)
        if any(s.coverage for s in suites):
            from evalspec.results.coverage import coverage_warnings

            warnings += coverage_warnings(suites, plan)
        from evalspec.core.redact import redact_problems, run_secrets

        warnings = redact_problems(warnings, run_secrets(suites))  # they quote names and values
        if strict and warnings:
            raise ConfigError(warnings)
        for warning in sorted(warnings, key=_file_and_line):
            err_console.print(f"[yellow]{words('cli_warning')}[/] {escape(str(warning))}")
        tests = sum(len(s.tests) for s in suites)
        click.echo(words("cli_validate_ok", suites=_count(len(suites), "suite"), tests=_count(tests, "test"),
                         conversations=_count(len(plan), "conversation")))

    def watched() -> None:
        try:
            check()
        except ConfigError as exc:
            _config_error(exc)

    if can_supervise():  # plugins and python modules are imported in a child: one that exits is named (SPEC §17)
        watch(watched)
    check()


PLUGIN_HELP = "also load this plugin (module or FILE.py; repeatable)"


def _load_plugins(refs: tuple[str, ...]) -> None:
    from evalspec.core.errors import PluginError
    from evalspec.core.plugins import load_plugin

    for ref in refs:
        try:
            load_plugin(ref)
        except PluginError as exc:
            raise click.BadParameter(str(exc), param_hint="--plugin") from None


@main.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write to FILE instead of stdout")
@click.option("--plugin", "plugins", multiple=True, help=PLUGIN_HELP)
def schema(output: str | None, plugins: tuple[str, ...]) -> None:
    """Print the suite JSON Schema."""
    from evalspec.config.schema import suite_schema

    _load_plugins(plugins)
    text = json.dumps(suite_schema(), ensure_ascii=False, indent=2) + "\n"
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


@main.command(name="list")
@click.argument("what", type=click.Choice(["assertions", "providers"]))
@click.option("--plugin", "plugins", multiple=True, help=PLUGIN_HELP)
def list_(what: str, plugins: tuple[str, ...]) -> None:
    """What is registered, with one-line docs."""
    _load_plugins(plugins)
    if what == "assertions":
        from evalspec.extend.registry import REGISTRY, load_installed_plugins

        load_installed_plugins()
        width = max(len(n) for n in REGISTRY)
        for name in sorted(REGISTRY):
            t = REGISTRY[name]
            needs = f" [needs {t.needs}]" if t.needs else ""
            click.echo(f"{name:<{width}}  {t.kind:<12}  {t.doc}{needs}")
    else:
        from evalspec.extend.kinds import provider_kinds

        kinds = provider_kinds()
        width = max(len(n) for n in kinds)
        for name, kind in kinds.items():
            click.echo(f"{name:<{width}}  {kind.doc}" + ("" if kind.builtin else "  [plugin]"))


@main.command()
@click.argument("run_jsons", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--html", "html_path", type=click.Path(dir_okay=False))
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False))
@click.option("--md", "md_path", type=click.Path(dir_okay=False))
@click.option("--html-all", "html_all", is_flag=True,
              help="embed every transcript in the HTML (a large run summarises passing ones beyond 1,000)")
@MAX_FAILURES_OPTION
@LANG_OPTION
def report(run_jsons: tuple[str, ...], html_path: str | None, junit_path: str | None, md_path: str | None,
           html_all: bool, max_failures: int, lang: str | None) -> None:
    """Re-render reports from run.json (no path: the latest run in .evalspec/runs/);
    several run.json files: a trend (--html), runs in time order."""
    from evalspec.reporters.console import make_console, print_summary

    if len(run_jsons) > 1:
        from evalspec.app.cli.trend import trend_command

        sys.exit(trend_command(list(run_jsons), html_path, junit_path, md_path))
    from evalspec.results.runjson import read_run

    run_json = run_jsons[0] if run_jsons else _latest_run(Path(".evalspec/runs"))
    data = read_run(run_json, stream=True)  # a large run's records stay on disk (docs/en/scale-and-ray.md#memory)
    written = _write_reports(data, html_path, junit_path, md_path, html_all, lang, max_failures)
    console = make_console()
    if not run_jsons:
        console.print(f"[dim]latest run: {escape(str(run_json))}[/]")
    print_summary(console, data, written, quiet=True, lang=lang, max_failures=max_failures)


def _latest_run(runs: Path) -> str:
    """The run.json of the run that finished last (SPEC §17): each .evalspec/runs/<run-id>/ holds its
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


@main.command(name="github-comment")
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


@main.command(name="diff")
@click.argument("base_json", type=click.Path(exists=True, dir_okay=False))
@click.argument("head_json", type=click.Path(exists=True, dir_okay=False))
@click.option("--md", "md_path", type=click.Path(dir_okay=False), help="write the diff as Markdown")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="write the diff as a self-contained HTML page")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the diff as JSON")
@LANG_OPTION
def diff_(base_json: str, head_json: str, md_path: str | None, html_path: str | None, output: str | None,
          lang: str | None) -> None:
    """Compare two runs verdict by verdict (SPEC §10).

    Exit 1 when anything regressed (regressed, new failing, an SLA newly missed), else 0."""
    from evalspec.app.cli.diff import run_diff_command

    sys.exit(run_diff_command(base_json, head_json, md_path, html_path, output, lang))


@main.command()
@click.argument("run_json", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here instead of replacing RUN.json")
@click.option("--no-cache", is_flag=True, help="do not use the cache for judge and embedder calls")
@judge_sample_options
@MAX_FAILURES_OPTION
def grade(run_json: str, output: str | None, no_cache: bool, judge_sample: float | None, seed: int,
          max_failures: int) -> None:
    """Re-run assertions on the recorded transcripts (no calls to the systems under test)."""
    import tempfile

    from evalspec.play.replay import instances_of, regrade
    from evalspec.reporters.console import print_summary
    from evalspec.results.runjson import read_run, write_json
    from evalspec.review.triage import keep_attributions

    data = read_run(run_json, stream=True)  # a large run's records stay on disk (docs/en/scale-and-ray.md#memory)
    cache_dir = None if no_cache else Path(".evalspec/cache")
    with tempfile.TemporaryDirectory(prefix="evalspec-grade-") as spool:
        regraded, warnings = asyncio.run(regrade(data, cache_dir, Path(spool) / "graded.jsonl"))
        for w in warnings:
            err_console.print(f"warning: {escape(w)}")
        keep_attributions(data, regraded)
        instances: dict[str, Any] = {}  # the plan again, only for a second opinion (a large run's is large)
        suites: list[Any] = []
        if judge_sample:
            from evalspec.review.second_opinion import needs_judges

            instances, _ = instances_of(regraded)
            suites = list({id(i.suite): i.suite for i in instances.values()}.values())
            needs_judges(suites)
        regraded.pop("judge_review", None)  # an earlier second opinion judged verdicts that may have changed
        regraded = after_grading(regraded, instances, suites, judge_sample, seed, cache_dir)
        out = Path(output or run_json)
        write_json(out, regraded)
        print_summary(Console(highlight=False, soft_wrap=True), regraded, {"run.json": str(out)},
                      max_failures=max_failures)
    sys.exit(regraded["gate"]["exit_code"])


@main.command()
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
    from evalspec.play.replay import rerun_failed
    from evalspec.results.runjson import read_run, write_json
    from evalspec.review.triage import attribute_reruns

    times = times or 2
    data = read_run(run_json)
    rows, warnings = asyncio.run(rerun_failed(data, times, concurrency))
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
    """`rerun --at-turn` (docs/en/statistics.md#replay-at-the-failing-turn): one line per conversation,
    `at_turn` written on its record in RUN.json; exit 0."""
    from evalspec.play.at_turn import named, rerun_at_turn
    from evalspec.reporters.catalogue import choose_lang, speaking
    from evalspec.reporters.vocabulary import at_turn_text
    from evalspec.results.runjson import read_run, write_json

    data = read_run(run_json)
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


@main.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--lang", type=click.Choice(["zh", "en"]),
              help="the language of the output (default: EVALSPEC_LANG, else the system locale)")
def init(directory: str, lang: str | None) -> None:
    """Scaffold a suite, a demo provider and a GitHub workflow."""
    from evalspec.authoring.scaffold import scaffold
    from evalspec.reporters.catalogue import choose_lang, use, words

    use(choose_lang(None, lang))
    created = scaffold(Path(directory))
    for path in created:
        click.echo(words("cli_created", path=path))
    click.echo(words("cli_init_next", directory=directory))


@main.command()
@click.argument("paths", nargs=-1, metavar="[DIR] [RUN.json]...", type=click.Path(exists=True))
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0: any free port")
@click.option("--host", default="127.0.0.1", show_default=True, help="the address to bind (only this machine by default)")
@click.option("--reviewer", help="who the review actions are recorded as (default: the OS user)")
@click.option("--lang", type=click.Choice(["zh", "en"]),
              help="the pages' language (default: each run's own; the other pages the newest run's)")
def view(paths: tuple[str, ...], port: int, host: str, reviewer: str | None, lang: str | None) -> None:
    """Review runs in the browser: the runs of DIR/.evalspec/runs (and any RUN.json given), each run's report,
    the diff of two runs; record attributions, judge labels and draft approvals into DIR."""
    from evalspec.app.view.server import serve
    from evalspec.review.triage import os_user

    dirs = [Path(p) for p in paths if Path(p).is_dir()]
    if len(dirs) > 1:
        raise click.UsageError(f"one project directory, got {len(dirs)}: {', '.join(map(str, dirs))}")
    root = (dirs[0] if dirs else Path(".")).resolve()
    extra = [Path(p).resolve() for p in paths if not Path(p).is_dir()]

    def announce(url: str) -> None:
        click.echo(url)
        click.echo(f"serving {root} as {reviewer or os_user()}; Ctrl-C to stop", err=True)

    try:
        asyncio.run(serve(root, extra, host, port, reviewer or os_user(), announce, lang))
    except OSError as exc:
        raise click.UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (try --port 0)") from None
    except KeyboardInterrupt:
        pass


from evalspec.app.cli.coverage import coverage_command  # noqa: E402
from evalspec.app.cli.plan import plan_command  # noqa: E402
from evalspec.authoring.importers.commands import export, import_  # noqa: E402

main.add_command(import_)
main.add_command(export)
main.add_command(judge_eval_command)
main.add_command(triage_command)
main.add_command(doctor_command)
main.add_command(coverage_command)
main.add_command(plan_command)

if __name__ == "__main__":  # pragma: no cover
    main()


@main.command()
@click.argument("suite_path", metavar="SUITE.yaml", type=click.Path(dir_okay=False))
@click.option("--strategy", "strategies", multiple=True,
              type=click.Choice(["crescendo", "persona", "goat", "mischievous"]),
              help="Attack strategy (repeatable; default: all four).")
@click.option("--attempts", type=click.IntRange(1, 100), default=3, show_default=True,
              help="Independent attacks per test.")
@click.option("--max-turns", type=click.IntRange(1, 50), default=6, show_default=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The attack suite to write.")
def redteam(suite_path: str, strategies: tuple[str, ...], attempts: int, max_turns: int, output: str) -> None:
    """Write an attack suite: one `attack:` test per critical assertion × strategy (SPEC §16)."""
    from evalspec.authoring.redteam import STRATEGIES, build_attack_suite, render

    source, out = Path(suite_path), Path(output)
    try:
        suite, notes = build_attack_suite(source, out, list(strategies) or list(STRATEGIES), attempts, max_turns)
    except ConfigError as exc:
        _config_error(exc)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(suite, source, out, notes), encoding="utf-8")
    for note in notes:
        err_console.print(f"[yellow]note[/] {escape(note)}")
    err_console.print(f"wrote {len(suite['tests'])} attack tests to {escape(str(out))}; "
                      f"review the goals, then: evalspec run {escape(str(out))}")
