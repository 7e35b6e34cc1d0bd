"""Commands over suites: `validate`, `schema`, `list`, `init` (a new project) and `redteam` (an attack suite
from a suite's critical assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape

from evalspec.app.cli.common import config_error, count, err_console, file_and_line, parse_vars
from evalspec.core.errors import ConfigError


def files_lang(paths: list[str], override: str | None) -> str:
    """The language of a command over suite files that may not load (`validate`): `choose_lang` given
    the files' first `lang: zh|en` line and what their users say or are told (`user:`, a simulated user's
    `goal:`, `persona:`, `instructions:`, `opening:` lines), read as text."""
    import regex

    from evalspec.reporters.catalogue import choose_lang

    texts, declared = [], None
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        declared = declared or next(iter(regex.findall(r"(?m)\blang:\s*['\"]?(zh|en)\b", text)), None)
        said = regex.findall(r"(?m)^[\s-]*(?:user|goal|persona|instructions|opening):\s*(.+)$", text)
        texts += [regex.sub(r"\s+#.*$", "", t) for t in said]  # a comment after the text is not the user's
    return choose_lang(None, override, declared=declared, texts=texts)


@click.command()
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
    from evalspec.reporters.problems import problem_text

    cli_vars = parse_vars(var_pairs)
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
        for warning in sorted(warnings, key=file_and_line):
            err_console.print(f"[yellow]{words('cli_warning')}[/] {escape(problem_text(warning))}")
        tests = sum(len(s.tests) for s in suites)
        click.echo(words("cli_validate_ok", suites=count(len(suites), "suite"), tests=count(tests, "test"),
                         conversations=count(len(plan), "conversation")))

    def watched() -> None:
        try:
            check()
        except ConfigError as exc:
            config_error(exc)

    if can_supervise():  # plugins and python modules are imported in a child: one that exits is named (docs/en/rule-self-tests.md#verdicts-that-hold)
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


@click.command()
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


@click.command(name="list")
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


@click.command()
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


@click.command()
@click.argument("suite_path", metavar="SUITE.yaml", type=click.Path(dir_okay=False))
@click.option("--strategy", "strategies", multiple=True,
              type=click.Choice(["crescendo", "persona", "goat", "mischievous"]),
              help="Attack strategy (repeatable; default: all four).")
@click.option("--attempts", type=click.IntRange(1, 100), default=3, show_default=True,
              help="Independent attacks per test.")
@click.option("--max-turns", type=click.IntRange(1, 50), default=6, show_default=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The attack suite to write.")
def redteam(suite_path: str, strategies: tuple[str, ...], attempts: int, max_turns: int, output: str) -> None:
    """Write an attack suite: one `attack:` test per critical assertion × strategy (docs/en/attacks.md)."""
    from evalspec.authoring.redteam import STRATEGIES, build_attack_suite, render

    source, out = Path(suite_path), Path(output)
    try:
        suite, notes = build_attack_suite(source, out, list(strategies) or list(STRATEGIES), attempts, max_turns)
    except ConfigError as exc:
        config_error(exc)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(suite, source, out, notes), encoding="utf-8")
    for note in notes:
        err_console.print(f"[yellow]note[/] {escape(note)}")
    err_console.print(f"wrote {len(suite['tests'])} attack tests to {escape(str(out))}; "
                      f"review the goals, then: evalspec run {escape(str(out))}")
