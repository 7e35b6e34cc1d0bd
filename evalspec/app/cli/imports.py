"""`evalspec import promptfoo|mtbench101|deepeval|csv|rasa|botium|transcripts|traces` and `evalspec export csv`:
the command lines over the importers (evalspec.authoring.importers)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalspec.core.exitcodes import ExitCode

if TYPE_CHECKING:  # the importers load yaml: `evalspec --help` and every other command do without them
    from evalspec.authoring.importers import ImportedSuite

PROVIDER_HELP = ("the system under test for suites without one: model:NAME, http:URL, python:FILE.py:function "
                 "or a YAML mapping (default: a python stub written next to the suite)")


ALLOW_EMPTY_HELP = "write the suite even with tests that check nothing, no test or an empty user turn"


def allow_empty_option(f: Any) -> Any:
    """`--allow-empty`, and `--lang` (the language of the command's own lines), on every import."""
    f = click.option("--lang", type=click.Choice(["zh", "en"]), expose_value=False,
                     callback=lambda ctx, _, value: ctx.meta.__setitem__("evalspec_lang", value),
                     help="the language of the output (default: EVALSPEC_LANG, else the imported conversations')")(f)
    return click.option("--allow-empty", is_flag=True, help=ALLOW_EMPTY_HELP)(f)


def _user_texts(data: Any) -> list[str]:
    """The user turns written in an imported suite's data (to choose the language of the summary)."""
    if isinstance(data, dict):
        own = [data["user"]] if isinstance(data.get("user"), str) else []
        return own + [t for v in data.values() for t in _user_texts(v)]
    return [t for v in data for t in _user_texts(v)] if isinstance(data, list) else []


def _said_by_users(path: Path) -> list[str]:
    """The user messages of a recorded (JSONL) or played (run.json) source, read as loosely as a refusal
    needs: to speak their language when nothing was written (docs/en/reports-and-gate.md#language)."""
    import json

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found: list[str] = []

    def walk(data: Any) -> None:
        if isinstance(data, dict):
            if data.get("role") == "user" and isinstance(data.get("content"), str):
                found.append(data["content"])
            for v in data.values():
                walk(v)
        elif isinstance(data, list):
            for v in data:
                walk(v)

    for text in (["\n".join(lines)] if path.suffix == ".json" else lines):
        try:
            walk(json.loads(text))
        except ValueError:
            continue
    return found


def _speak(texts: list[str]) -> None:
    """Speak the language of this import (`--lang`, else EVALSPEC_LANG, else the conversations' turns)."""
    from evalspec.reporters.catalogue import choose_lang, use

    use(choose_lang(None, click.get_current_context().meta.get("evalspec_lang"), texts=texts))


def judge_option(f: Any) -> Any:
    return click.option("--judge", default="openai/gpt-4o-mini", show_default=True,
                        help="the judge: a litellm model string or a YAML mapping")(f)


def judge_ref(judge: str) -> Any:
    """`--judge` as the suite will hold it: a model string, or the mapping a `{...}` value spells."""
    import yaml

    return yaml.safe_load(judge) if judge.strip().startswith("{") else judge


def _finish(suites: list[ImportedSuite], out_dir: str, provider: str | None, allow_empty: bool = False) -> None:
    from evalspec.authoring.importers import (
        ImportRefused,
        WouldOverwrite,
        check_counts,
        leave_out_unchecked,
        write_suites,
    )
    from evalspec.reporters.catalogue import words

    _speak([t for suite in suites for t in _user_texts(suite.data)])
    for suite in suites:
        if not allow_empty:
            leave_out_unchecked(suite)  # before the notes are shown: it adds one
        for note in suite.not_converted:
            click.echo(words("cli_not_converted", file=suite.filename, note=note), err=True)
    try:
        written = write_suites(suites, Path(out_dir), provider, allow_empty)
    except ImportRefused as exc:
        for problem in exc.problems:
            click.echo(f"{words('cli_error')} {problem}", err=True)
        if isinstance(exc, WouldOverwrite):
            click.echo(words("cli_refused"), err=True)
        else:
            click.echo(words("cli_refused_hollow", n=len(exc.problems)), err=True)
        sys.exit(ExitCode.CONFIG_ERROR)
    for path in written:
        click.echo(words("cli_wrote", path=path))
    kept = lost = 0
    for suite in suites:
        k, n = check_counts(suite)
        kept, lost = kept + k, lost + n
    click.echo(words("cli_checks_kept", kept=kept, lost=lost), err=True)


class _ImportGroup(click.Group):
    """`evalspec import`: `traces` is loaded when it is asked for (its module loads the importers and yaml,
    which `evalspec --help` and the other commands do without)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), "traces"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "traces" and cmd_name not in self.commands:
            from evalspec.authoring.importers.traces import traces

            self.add_command(traces)
        return super().get_command(ctx, cmd_name)


@click.group(name="import", cls=_ImportGroup)
def import_() -> None:
    """Write suites from promptfoo configs, DeepEval goldens, MT-Bench-101 data, a spreadsheet (CSV), Rasa e2e tests, BotiumScript or conversations."""


@import_.command()
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False), help="folder for the suite")
@click.option("--provider", help=PROVIDER_HELP)
@allow_empty_option
def promptfoo(config: str, out_dir: str, provider: str | None, allow_empty: bool) -> None:
    """A promptfoo config (providers, prompts, tests, defaultTest, _conversation) -> one suite."""
    from evalspec.authoring.importers.promptfoo import import_promptfoo

    _finish([import_promptfoo(Path(config), Path(out_dir))], out_dir, provider, allow_empty)


@import_.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False), help="folder for the suites")
@click.option("--provider", help=PROVIDER_HELP)
@judge_option
@allow_empty_option
def mtbench101(file: str, out_dir: str, provider: str | None, judge: str, allow_empty: bool) -> None:
    """MT-Bench-101 JSONL -> one golden-history suite per task, judged against the golden last reply."""
    from evalspec.authoring.importers.mtbench101 import import_mtbench101

    _finish(import_mtbench101(Path(file), judge_ref(judge)), out_dir, provider, allow_empty)


@import_.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False), help="folder for the suite")
@click.option("--provider", help=PROVIDER_HELP)
@judge_option
@allow_empty_option
def deepeval(file: str, out_dir: str, provider: str | None, judge: str, allow_empty: bool) -> None:
    """DeepEval goldens (JSON) -> one suite: recorded turns as transcript: tests, the others played or simulated."""
    from evalspec.authoring.importers.deepeval import import_deepeval

    _finish([import_deepeval(Path(file), judge_ref(judge))], out_dir, provider, allow_empty)


@import_.command(name="csv")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False), help="folder for the suite")
@click.option("--provider", help=PROVIDER_HELP)
@allow_empty_option
def csv_(file: str, out_dir: str, provider: str | None, allow_empty: bool) -> None:
    """A CSV (test_id, user, label, contains, not_contains, regex, not_regex, name, tags) -> one suite."""
    from evalspec.authoring.importers.csvfile import import_csv

    _finish([import_csv(Path(file))], out_dir, provider, allow_empty)


def _finish_platform(suites: list[ImportedSuite], refused: list[tuple[str, str]], out_dir: str,
                     allow_empty: bool) -> None:
    """A platform import (a file or a folder): refused sources on stderr; nothing to write is an error."""
    from evalspec.reporters.catalogue import words

    _speak([t for suite in suites for t in _user_texts(suite.data)])
    for source, reason in refused:
        click.echo(words("cli_refused_source", source=source, reason=reason), err=True)
    if not suites and not allow_empty:
        click.echo(words("cli_refused_none"), err=True)
        sys.exit(ExitCode.CONFIG_ERROR)
    _finish(suites, out_dir, None, allow_empty)


@import_.command()
@click.argument("source", type=click.Path(exists=True))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="folder for the suites (a folder's sub-folders are kept)")
@click.option("--provider", help="the bot to test instead of rasa: {url: http://localhost:5005}: a YAML mapping "
              "such as '{rasa: {url: ..., token: ...}}', model:NAME, http:URL or python:FILE.py:function")
@judge_option
@allow_empty_option
def rasa(source: str, out_dir: str, provider: str | None, judge: str, allow_empty: bool) -> None:
    """Rasa end-to-end tests (test_cases:, a file or a folder) -> suites of scripted tests with a rasa: provider."""
    from evalspec.authoring.importers.rasa import import_rasa

    suites, refused = import_rasa(Path(source), provider, judge_ref(judge))
    _finish_platform(suites, refused, out_dir, allow_empty)


@import_.command()
@click.argument("source", type=click.Path(exists=True))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="folder for the suites (a folder's sub-folders are kept)")
@click.option("--provider", help="the bot to test instead of an http: provider to edit: http:URL, a YAML mapping, "
              "model:NAME or python:FILE.py:function")
@allow_empty_option
def botium(source: str, out_dir: str, provider: str | None, allow_empty: bool) -> None:
    """BotiumScript (.convo.txt, .pconvo.txt, .utterances.txt, .scriptingmemory.txt, YAML, JSON, CSV, XLSX; a file
    or a folder) -> one suite per convo file; a convo that cannot be converted or checks nothing is left out and named."""
    from evalspec.authoring.importers.botium import import_botium

    suites, refused = import_botium(Path(source), provider, allow_empty)
    _finish_platform(suites, refused, out_dir, allow_empty)


@import_.command()
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False),
              help="the suite to write, or to append the tests to when it exists")
@click.option("--ids", help="only these conversations (test or conversation ids, comma-separated)")
@click.option("--expect-state", "expect_state",
              help="JMESPath(s), comma-separated: a state check per turn holding the value that turn had")
@allow_empty_option
def transcripts(source: str, out: str, ids: str | None, expect_state: str | None, allow_empty: bool) -> None:
    """Recorded (JSONL) or played (run.json) conversations -> draft scripted tests in SUITE.yaml, replaying
    the played test's vars, state seed, tool stubs and provider."""
    from evalspec.authoring.importers import ImportRefused
    from evalspec.authoring.importers.transcripts import import_transcripts
    from evalspec.core.errors import ConfigError

    wanted = [i.strip() for i in ids.split(",") if i.strip()] if ids else None
    paths = [p.strip() for p in expect_state.split(",") if p.strip()] if expect_state else None
    from evalspec.reporters.catalogue import words
    from evalspec.reporters.problems import message_text, problem_text

    try:
        written, notes = import_transcripts(Path(source), Path(out), wanted, paths, allow_empty)
    except ConfigError as exc:
        _speak(_said_by_users(Path(source)))
        for problem in exc.problems:
            click.echo(f"{words('cli_error')} {problem_text(problem)}", err=True)
        if isinstance(exc, ImportRefused):
            click.echo(words("cli_refused_tests", n=len(exc.problems)), err=True)
        sys.exit(ExitCode.CONFIG_ERROR)
    import yaml

    _speak([t for path in written if path.suffix in (".yaml", ".yml")
            for t in _user_texts(yaml.safe_load(path.read_text(encoding="utf-8")))])
    for note in notes:
        click.echo(f"{words('cli_note')}: {message_text(note)}", err=True)
    for path in written:
        click.echo(words("cli_wrote", path=path))


@click.group()
def export() -> None:
    """Write a suite in another format."""


@export.command(name="csv")
@click.argument("suite", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write to FILE instead of stdout")
def export_csv_(suite: str, output: str | None) -> None:
    """A suite's scripted user turns and their contains/regex checks as CSV (UTF-8 with BOM)."""
    from evalspec.authoring.importers.csvfile import export_csv

    text, skipped = export_csv(Path(suite))
    for note in skipped:
        click.echo(f"not exported: {note}", err=True)
    if output:
        Path(output).write_text(text, encoding="utf-8", newline="")
        click.echo(f"wrote {output}", err=True)
    else:
        sys.stdout.write(text)

