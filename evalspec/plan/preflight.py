"""Everything checked before the first call, shared by `validate` and `run` (docs/en/reports-and-gate.md#errors-and-failures: `validate` ok ⇒
`run` does not exit 2).

Every problem of every file comes out in one round: a file whose schema or labels are wrong is still
planned and preflighted, so its template, provider and judge problems are reported with the others.
Only a file that cannot be read or parsed as YAML stops early, and only for itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalspec.config.gatekeys import min_pass_hat_k_problems
from evalspec.config.loader import chart_problems, check_suite
from evalspec.config.model import Suite
from evalspec.core.errors import ConfigError, LoadError, Problem
from evalspec.core.pyref import load_callable, step
from evalspec.core.redact import redact_problems, run_secrets
from evalspec.plan.build import Plan, Selection


def prepare(paths: list[Path], cli_vars: Mapping[str, Any] | None = None,
            selection: Selection | None = None, gate: bool = True) -> tuple[list[Suite], Plan]:
    """Load, plan and preflight; raise one ConfigError with every problem found, or return the suites
    and their plan (checked: `api.arun(..., plan=)` plays it without planning again). `gate`: also what the
    gate keys ask of the plan (a caller that only lists the plan's instances leaves it out)."""
    suites: list[Suite] = []
    problems: list[Problem] = []
    plannable: list[Suite] = []
    for path in paths:
        suite, found = check_suite(path, cli_vars)
        problems.extend(found)
        if suite is None:
            continue
        suites.append(suite)
        if gate:
            problems.extend(_new(min_pass_hat_k_problems(suite, selection.repeat if selection else None), problems))
        planned = _plan_problems(suite, selection, broken=bool(found))
        if planned is not None:
            plannable.append(suite)
            problems.extend(_new(planned, problems))
    problems.extend(chart_problems(suites))
    plan = Plan(plannable, selection, checked=True)
    problems.extend(_new(preflight_problems(plan, suites), problems))
    if problems:  # a secret of one suite may be quoted in another's problem, or by a preflight check
        raise ConfigError(redact_problems(dict.fromkeys(problems), run_secrets(suites)))
    return suites, plan


def _plan_problems(suite: Suite, selection: Selection | None, broken: bool) -> list[Problem] | None:
    """The template problems of `suite`'s plan; None when it cannot be planned (and has problems already)."""
    try:
        return Plan([suite], selection).problems()
    except ConfigError as exc:
        return exc.problems
    except Exception:  # a suite that already has problems may be too incomplete to plan
        if broken:
            return None
        raise


def _new(found: list[Problem], known: list[Problem]) -> list[Problem]:
    """Problems not already reported at the same place, nor with the same words in the same file (plan
    and preflight checks repeat some of the loader's: the loader names the key, the preflight its provider)."""
    seen = {(p.file, p.line, p.path) for p in known}
    said = {(p.file, p.message) for p in known}
    return [p for p in found if (p.file, p.line, p.path) not in seen and (p.file, p.message) not in said]


def preflight_problems(plan: Plan, suites: list[Suite]) -> list[Problem]:
    """Providers, judges, simulators and embedders that cannot work, and python checks that cannot
    be imported — found without calling anything. Every provider of `suites` is checked, planned or
    not (a test whose template is broken has no instance, but its provider is still checked)."""
    from evalspec.plan.build import instance_assertions
    from evalspec.plan.examples import offline_checks
    from evalspec.plan.needs import plan_problems
    from evalspec.providers.factory import provider_problems

    problems: list[Problem] = []
    for suite in suites:
        for spec in suite.providers:
            with step(str(_at(suite, spec.where, f"provider '{spec.id}'"))):
                found = provider_problems(spec, suite)
            for message in found:
                problems.append(_at(suite, spec.where, f"provider '{spec.id}': {message}"))
    representatives = list(plan.representatives())
    problems.extend(plan_problems(representatives))
    # each rule against its own examples (docs/en/rule-self-tests.md), as rendered for every matrix value (repeats render alike)
    problems.extend(offline_checks(suites, (i for i in plan.renderable() if i.repeat == 1)))
    checked: set[tuple[str, str]] = set()
    for inst in plan.renderable() if any(_has_python_check(t) for s in plan.suites for t in s.tests) else ():
        for check in instance_assertions(inst):
            if check.type != "python" or not isinstance(check.value, str):
                continue
            key = (str(inst.suite.path.parent), check.value)
            if key in checked:
                continue
            checked.add(key)
            try:
                with step(str(_at(inst.suite, check.value_where, "python check"))):
                    load_callable(check.value, inst.suite.path.parent)
            except LoadError as exc:
                problems.append(_at(inst.suite, check.value_where, f"python check: {exc}"))
    if any(_has_check(t, "javascript") for s in plan.suites for t in s.tests):
        problems.extend(_javascript_problems(plan))
    if any(_has_check(t, "is-sql") for s in plan.suites for t in [*s.tests, s.transcripts] if t is not None):
        problems.extend(_sql_problems(plan))
    return problems


def _sql_problems(plan: Plan) -> list[Problem]:
    """is-sql checks that cannot run: no sqlglot (named once per file, at its first is-sql check), a dialect
    sqlglot does not know (each once per file, as rendered)."""
    from evalspec.assertions.sql import INSTALL_HINT, dialect_problem, sqlglot_missing
    from evalspec.plan.build import instance_assertions

    problems: list[Problem] = []
    missing = sqlglot_missing()
    checked: set[tuple[str, str]] = set()
    for inst in plan.renderable():
        for check in instance_assertions(inst):
            if check.type != "is-sql":  # `not-is-sql` too: the type is the check's, negated or not
                continue
            dialect = str(check.params.dialect) if check.params is not None else ""
            key = (str(inst.suite.path), "" if missing else dialect)
            if key in checked:
                continue
            checked.add(key)
            found = INSTALL_HINT if missing else dialect_problem(dialect)
            if found:
                problems.append(_at(inst.suite, check.value_where, found))
    return problems


def _javascript_problems(plan: Plan) -> list[Problem]:
    """javascript checks that cannot run: no node (named once per file, at its first javascript check), a
    syntax error, a missing file or function — each distinct code once, as rendered."""
    from evalspec.assertions.javascript import check_problem
    from evalspec.core.node import NODE_MISSING, node_binary
    from evalspec.plan.build import instance_assertions

    problems: list[Problem] = []
    missing = node_binary() is None
    checked: set[tuple[str, str]] = set()
    for inst in plan.renderable():
        for check in instance_assertions(inst):
            if check.type != "javascript" or not isinstance(check.value, str):
                continue
            key = (str(inst.suite.path) if missing else str(inst.suite.path.parent), "" if missing else check.value)
            if key in checked:
                continue
            checked.add(key)
            found = NODE_MISSING if missing else check_problem(check.value, inst.suite.path.parent,
                                                                float(inst.suite.option("grade_timeout")))
            if found:
                problems.append(_at(inst.suite, check.value_where, f"javascript check: {found}"))
    return problems


def _has_check(test: Any, kind: str) -> bool:
    """`test` (or `transcripts:`, whose checks are `defaults.assert`) has a check of type `kind`."""
    turns = getattr(test, "conversation", [])
    return any(a.type == kind for a in [*test.asserts, *(a for e in turns for a in e.asserts)])


def _has_python_check(test: Any) -> bool:
    return _has_check(test, "python")


def _at(suite: Suite, path: Any, message: str) -> Problem:
    return suite.lines.problem(path, message) if suite.lines else Problem(str(suite.path), None, "", message)
