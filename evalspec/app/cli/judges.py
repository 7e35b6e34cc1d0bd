"""The judge commands of the command line: `judge-eval` and `triage` (docs/en/judges.md#how-a-verdict-is-reached)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalspec.core.errors import ConfigError, Problem
from evalspec.results.attribution import CLASSES

if TYPE_CHECKING:
    from evalspec.config.model import Suite
    from evalspec.results.rundata import RunData
    from evalspec.review.judge_eval import JudgeEvalReport, LabelledItem


class FiniteRange(click.FloatRange):
    """A FloatRange that refuses NaN, which passes every bound (docs/en/rule-self-tests.md#verdicts-that-hold: numbers are numbers)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from evalspec.config.numbers import finite_problem

        number = super().convert(value, param, ctx)
        if (problem := finite_problem(number, str(value))) is not None:
            self.fail(problem, param, ctx)
        return number


def judge_suite(judge: str | None, suite: str | None, labels: Path) -> Any:
    """The suite whose `judge` is judged: `--suite FILE`, or one made for the judge of `--judge MODEL`
    (a model string or a YAML mapping like `{model: ..., api_base: ...}`, its `${ENV}` expanded), which
    holds that mapping's secrets."""
    import yaml

    from evalspec.config.loader import expand_cli_mapping, load_suites
    from evalspec.config.model import Suite
    from evalspec.config.numbers import non_finite
    from evalspec.config.providers import model_ref

    if (judge is None) == (suite is None):
        raise click.UsageError("give the judge: --judge MODEL or --suite FILE (one of them)")
    if suite is not None:
        loaded = load_suites([suite])[0]
        if loaded.judge is None:
            raise ConfigError([Problem(suite, None, "", "the suite has no `judge:` block")])
        return loaded
    try:
        raw = yaml.safe_load(str(judge))
    except yaml.YAMLError as exc:
        if str(judge).lstrip().startswith("{"):  # meant as a mapping: say so, never quoting it (it may hold a key)
            mark = getattr(exc, "problem_mark", None)
            at = f" (column {mark.column + 1})" if mark is not None else ""
            raise click.BadParameter(f"the value is not a YAML mapping{at}: quote values holding `${{`, `{{` or "
                                     f"`,` — e.g. {{model: openai/gpt-4o-mini, api_key: '${{KEY}}'}}",
                                     param_hint="--judge") from None
        raw = judge
    if not isinstance(raw, (str, dict)) or (isinstance(raw, dict) and "model" not in raw):
        raise click.BadParameter("a model string or a mapping with `model:`", param_hint="--judge")
    for where, problem in non_finite(raw):
        raise click.BadParameter(f"{'.'.join(map(str, where))}: {problem}", param_hint="--judge")
    raw, secrets = expand_cli_mapping(raw, "--judge")
    return Suite(path=labels.resolve(), sha256="", judge=model_ref(raw), secrets=secrets)


@click.command(name="judge-eval")
@click.argument("labels", type=click.Path(exists=True, dir_okay=False), required=False)
@click.option("--examples", "examples_suite", type=click.Path(exists=True, dir_okay=False),
              help="grade the `examples:` of this suite's model-graded assertions (its judge unless --judge); "
                   "exit 1 when the judge gets one wrong")
@click.option("--judge", help="the judge model: a litellm model string or a YAML mapping {model: ..., api_base: ...}")
@click.option("--suite", type=click.Path(exists=True, dir_okay=False), help="use this suite's `judge:` block")
@click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True,
              help="answers per item; with more than one, self-consistency is measured")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the figures and every answer as JSON")
@click.option("--min-agreement", type=FiniteRange(0, 1), help="exit 1 when agreement is below this")
@click.option("--no-cache", is_flag=True, help="do not read or write the response cache")
@click.option("-j", "--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
def judge_eval_command(labels: str | None, examples_suite: str | None, judge: str | None, suite: str | None,
                       samples: int, output: str | None, min_agreement: float | None, no_cache: bool,
                       concurrency: int) -> None:
    """Measure a judge against labelled transcripts: agreement, Cohen's kappa, confusion matrix, per-type
    agreement and (with --samples K) self-consistency. Exit 1 when --min-agreement is not reached.
    With --examples SUITE, the labelled items are the suite's `examples:` of model-graded assertions."""
    from evalspec.core.redact import redact, run_secrets
    from evalspec.providers.factory import prepare_provider, provider_problems
    from evalspec.review.judge_eval import example_items, load_labels, render

    if (labels is None) == (examples_suite is None):
        raise click.UsageError("give LABELS.jsonl or --examples SUITE (one of them)")
    if examples_suite is not None:
        from evalspec.config.loader import load_suites

        items = example_items(load_suites([examples_suite])[0])
        if not items:
            click.echo(f"{examples_suite}: no model-graded assertion has `examples:`")
            return
        if judge is None and suite is None:
            suite = examples_suite
    else:
        assert labels is not None
        items = load_labels(Path(labels))
    owner = judge_suite(judge, suite, Path(labels or str(examples_suite)))
    spec = owner.judge
    secrets = run_secrets([owner])  # with the keys the judge model takes from the environment
    problems = provider_problems(spec, owner)
    if problems:
        raise ConfigError([Problem("--judge" if suite is None else suite, None, "", f"judge: {redact(p, secrets)}")
                           for p in problems])
    prepare_provider(spec)
    report = redact(_judged(owner, items, samples, concurrency, no_cache), secrets)  # the answers may quote them
    report["judge"] = spec.redacted(secrets)
    click.echo(render(report))
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    _judge_eval_exit(report, min_agreement)


def _judged(owner: Suite, items: list[LabelledItem], samples: int, concurrency: int, no_cache: bool) -> JudgeEvalReport:
    """`judge_eval` of the items by the suite's judge, through a provider pool closed afterwards."""
    import asyncio

    from evalspec.providers.factory import ProviderPool
    from evalspec.review.judge_eval import judge_eval

    async def go() -> JudgeEvalReport:
        pool = ProviderPool([owner], None if no_cache else Path(".evalspec/cache"))
        try:
            fn = pool.judge_fn(owner)
            assert fn is not None
            return await judge_eval(items, fn, samples, concurrency)
        finally:
            await pool.aclose()

    return asyncio.run(go())


def _judge_eval_exit(report: dict[str, Any], min_agreement: float | None) -> None:
    """Exit 1 when the judge got an example wrong (each named) or agrees less than --min-agreement."""
    wrong = [r for r in report["results"] if r.get("example") and not r["agree"]]
    for r in wrong:
        verdict = "no answer: " + str(r["error"]) if r["answer"] is None else \
            ("the judge passed it — the rule does not catch this" if r["label"] is False
             else "the judge failed it — the rule would reject a reply it must accept")
        click.echo(f"wrong: {r['example']}: {verdict}")
    if wrong:
        sys.exit(1)
    agreement = report["agreement"]
    if min_agreement is not None and (agreement is None or agreement < min_agreement):
        click.echo(f"agreement below --min-agreement {min_agreement:.1%}")
        sys.exit(1)


@click.command(name="triage")
@click.argument("run_json", type=click.Path(exists=True, dir_okay=False))
@click.argument("test_id")
@click.option("--provider", help="only this provider's records (default: every provider's)")
@click.option("--as", "cls", required=True,
              type=click.Choice(CLASSES),
              help="the failure's attribution")
@click.option("--note", help="why (kept with the call)")
def triage_command(run_json: str, test_id: str, provider: str | None, cls: str, note: str | None) -> None:
    """Record a person's attribution of a failure in RUN.json and .evalspec/triage.jsonl; later runs copy it
    for the same suite, test and provider while the test's status stays the same."""
    from evalspec.results.runjson import read_run, write_json
    from evalspec.review.triage import TRIAGE_FILE, TriageError, os_user, triage

    data = read_run(run_json)
    try:
        records = triage(data, test_id, provider, cls, note, who=os_user())
    except TriageError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    write_json(Path(run_json), data)
    for r in records:
        click.echo(f"{cls:<18} {r['test_id']} @ {r['provider']} (repeat {r['repeat']}, {r['status']})")
    click.echo(f"recorded in {run_json} and {TRIAGE_FILE}")


def judge_sample_options(fn: Any) -> Any:
    """`--judge-sample RATE` and `--seed N` (for `run` and `grade`)."""
    fn = click.option("--seed", type=int, default=0, show_default=True, help="which verdicts --judge-sample picks")(fn)
    return click.option("--judge-sample", type=FiniteRange(0, 1, min_open=True),
                        help="ask the judge for a second opinion on this share of the rule verdicts "
                             "(never changes one; run.json judge_review)")(fn)


def after_grading(data: RunData, instances: dict[str, Any], suites: list[Any], rate: float | None, seed: int,
                  cache_dir: Path | None) -> RunData:
    """`second_opinion.after_grading` for the synchronous `grade` command."""
    import asyncio

    from evalspec.review.second_opinion import after_grading as run_after_grading

    return asyncio.run(run_after_grading(data, instances, suites, rate, seed, cache_dir))


@click.command(name="doctor")
@click.argument("paths", nargs=-1)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write every role's findings as JSON")
@click.option("--no-calibration", is_flag=True, help="skip the judge's calibration set (12 labelled items)")
@click.option("--no-cache", is_flag=True, help="do not read or write the cache directory (nor remember the forms)")
@click.option("--rules", is_flag=True, help="instead: grade the `examples:` of every judged rule with its judge, "
              "twice, uncached; report each rule's leniency; exit 1 when one is misgraded or inconsistent")
def doctor_command(paths: tuple[str, ...], output: str | None, no_calibration: bool, no_cache: bool,
                   rules: bool) -> None:
    """Check the models of suites (default: suites/*.yaml) before a run: per provider, judge, simulator,
    attacker, history model and embedder, the key, one call's latency and tokens, the structured-output
    form the model accepts, a sample answer, and the judge's agreement and kappa on a shipped calibration
    set. Exit 1 when a role gives no usable answer in any form; 2 on a configuration error."""
    import asyncio

    from evalspec.app.api import expand_paths
    from evalspec.config.loader import load_suites
    from evalspec.core.redact import redact, run_secrets
    from evalspec.reporters.catalogue import choose_lang, use
    from evalspec.review.doctor import doctor, render

    suites = load_suites(list(expand_paths(paths)))
    use(choose_lang(suites=suites))  # the table speaks the suites' language (docs/en/reports-and-gate.md#language)
    secrets = run_secrets(suites)
    if rules:  # docs/en/judges.md#examples-of-judged-rules
        from evalspec.review import judged_examples

        checked = asyncio.run(judged_examples.check_judges(suites, None if no_cache else Path(".evalspec/cache")))
        click.echo(redact(judged_examples.render(checked), secrets))
        if output:
            Path(output).parent.mkdir(parents=True, exist_ok=True)
            Path(output).write_text(json.dumps(redact({"rules": [r.to_json() for r in checked]}, secrets),
                                               ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        if any(r.problems for r in checked):
            sys.exit(1)
        return
    roles = asyncio.run(doctor(suites, None if no_cache else Path(".evalspec/cache"), not no_calibration))
    click.echo(redact(render(roles), secrets))
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        data = {"roles": [r.to_json() for r in roles]}
        Path(output).write_text(json.dumps(redact(data, secrets), ensure_ascii=False, indent=2) + "\n",
                                encoding="utf-8")
    if any(not r.usable for r in roles):
        sys.exit(1)
