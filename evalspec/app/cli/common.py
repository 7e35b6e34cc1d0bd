"""What the commands share: the error console and how a configuration error ends a command, the options
several commands take (`--lang`, `--max-failures`, one per report format), `--var` values, counts in the
screen's language, and `kept_cwd`."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.markup import escape

from evalspec.core.errors import ConfigError, Problem
from evalspec.core.exitcodes import ExitCode
from evalspec.reporters.formats import FORMATS

err_console = Console(stderr=True, highlight=False, soft_wrap=True)

Command = Callable[..., Any]

MAX_FAILURES_OPTION = click.option(
    "--max-failures", "max_failures", type=click.IntRange(min=0), default=50, show_default=True,
    help="failing tests the console and Markdown list (then how many more; the HTML lists every one)")
LANG_OPTION = click.option(
    "--lang", type=click.Choice(["zh", "en"]),
    help="the language of the reports (default: the suite's report.lang, else Chinese when most user turns are Chinese)")
#: the options that name a file a command writes (a write that fails names the file it was given)
OUTPUT_FLAGS = ("-o", "--output", *(report.flag for report in FORMATS))


def report_options(helped: bool = True) -> Callable[[Command], Command]:
    """One option per report format (`evalspec.reporters.formats.FORMATS`: `--html`, `--junit`, `--md`), listed
    by flag; the command receives them as `reports`, {format name: path} of those given. `helped` False:
    without help text (as `report` lists them)."""

    def add(command: Command) -> Command:
        @functools.wraps(command)
        def with_reports(*args: Any, **kwargs: Any) -> Any:
            paths = {report.name: kwargs.pop(f"{report.name}_path") for report in FORMATS}
            return command(*args, reports={name: path for name, path in paths.items() if path}, **kwargs)

        for report in sorted(FORMATS, key=lambda r: r.flag, reverse=True):  # the last added is listed first
            with_reports = click.option(report.flag, f"{report.name}_path", type=click.Path(dir_okay=False),
                                        help=report.help if helped else None)(with_reports)
        return with_reports

    return add


@contextlib.contextmanager
def kept_cwd() -> Iterator[None]:
    """The working directory as it was before, whatever the code inside did (a plugin or a python provider
    that changed directory): evalspec's own files are written where the command was started."""
    cwd = os.getcwd()
    try:
        yield
    finally:
        os.chdir(cwd)


def config_error(exc: ConfigError) -> NoReturn:
    """Every problem in file and line order under its lead word, then the count, in the screen's language
    (docs/en/reports-and-gate.md#language); exit 2."""
    from evalspec.reporters.catalogue import words
    from evalspec.reporters.problems import problem_text

    for problem in sorted(exc.problems, key=file_and_line):
        err_console.print(f"[red]{words('cli_error')}[/] {escape(problem_text(problem))}")
    count = len(exc.problems)
    err_console.print(words("cli_problems_one" if count == 1 else "cli_problems_many", n=count))
    sys.exit(ExitCode.CONFIG_ERROR)


def file_and_line(problem: Problem) -> tuple[str, int]:
    return str(problem.file), problem.line or 0


def parse_vars(pairs: tuple[str, ...]) -> dict[str, str | int | float]:
    """`--var KEY=VALUE`: the value is the text typed (`yes` stays yes, not YAML's true), except a
    number written as Python writes it (`3`, `-2`, `0.5`), which is that number so templates can count
    with it; `007`, `1.50`, `1e3`, `nan` stay text (they would not read back as typed)."""
    out: dict[str, str | int | float] = {}
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


def count(n: int, noun: str) -> str:
    """`1 suite`, `2 tests`; in Chinese `1 个套件`, `2 个测试` (the catalogue's `cli_count_<noun>`)."""
    from evalspec.reporters.catalogue import current, words

    if current() == "zh":
        return words(f"cli_count_{noun}", n=n)
    return f"{n} {noun}{'s' if n != 1 else ''}"
