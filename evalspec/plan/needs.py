"""What each planned conversation needs before its first call — its provider, its history model, the
judges and embedder its assertions use, its simulator or scripted user — checked without calling
anything. It reads the plan and the assertions, so it stands after both (providers only build and
check one provider each).
"""

from __future__ import annotations

from evalspec.assertions.grade import needs_model
from evalspec.config.model import ProviderSpec, Suite
from evalspec.config.providers import model_ref
from evalspec.core.errors import Problem, ProviderError
from evalspec.extend.registry import resolve_type
from evalspec.plan.build import Instance, instance_assertions
from evalspec.providers.factory import PreflightError, jury_members, prepare_provider, provider_problems
from evalspec.providers.history import strategy_model


def check_plan(instances: list[Instance]) -> None:
    """Raise PreflightError naming every provider, judge, simulator or embedder that cannot work;
    else load what their first calls need (an HTTP transport), so that no call loads it mid-run."""
    problems = plan_problems(instances, prepare=True)
    if problems:
        raise PreflightError(problems)


def prepare_plan(instances: list[Instance]) -> None:
    """Load what the first calls of a plan checked elsewhere need (a Ray worker's: the driver checked it)."""
    plan_problems(instances, prepare=True)


def plan_problems(instances: list[Instance], prepare: bool = False) -> list[Problem]:
    """The problems of every model and system the plan's conversations use; with `prepare`, each one
    without problems also loads what its first call needs (see `ProviderKind.prepare`)."""
    problems: list[Problem] = []
    checked: set[tuple[str, str]] = set()

    def check(spec: ProviderSpec | None, suite: Suite, role: str, needed_by: str) -> None:
        where = suite.lines.problem(spec.where, "") if spec is not None and suite.lines else None
        if spec is None:
            problems.append(Problem(str(suite.path), None, "", f"{needed_by} needs a {role}: set `{role}:` in the suite"))
            return
        key = (str(suite.path), role + ":" + spec.id)
        if key in checked:
            return
        checked.add(key)
        found = provider_problems(spec, suite)
        for message in found:
            problems.append(Problem(str(suite.path), where.line if where else None, where.path if where else "",
                                    f"{role} '{spec.id}': {message}"))
        if prepare and not found:
            prepare_provider(spec)

    for inst in instances:
        suite = inst.suite
        if not inst.test.recorded:  # a recorded conversation calls nothing
            check(inst.provider, suite, "provider", inst.test_id)
        if (strategy := strategy_model(inst.provider)) is not None:
            check(strategy, suite, "history model", f"provider '{inst.provider.id}'")
        for spec in instance_assertions(inst):
            if needs_model(spec):
                atype = resolve_type(spec.type)
                role = atype[0].needs if atype else "judge"
                if role == "judge" and spec.provider is not None:
                    own = jury_members(spec.provider["jury"]) if isinstance(spec.provider, dict) and \
                        isinstance(spec.provider.get("jury"), list) else [model_ref(spec.provider)]
                    for member in own:  # its own judge, or each member of its own jury
                        check(member, suite, "judge", f"assertion '{spec.name}'")
                    continue
                for needed in suite.jury.members if role == "judge" and suite.jury is not None else \
                        [suite.judge if role == "judge" else suite.embedder]:  # a jury: each member
                    check(needed, suite, str(role), f"assertion '{spec.name}' in {inst.test_id}")
        if inst.test.attack is not None and inst.test.attack.python is None:
            check(inst.test.attack.model or suite.simulator, suite, "simulator", f"attack test {inst.test_id}")
        if inst.test.simulate is not None and inst.test.simulate.python:
            problems.extend(scripted_user_problems(inst))
        elif inst.test.simulate is not None:
            check(inst.test.simulate.model or inst.simulator or suite.simulator, suite, "simulator", f"simulated test {inst.test_id}")
            if any(c.get("goal_met") for c in inst.test.simulate.stop_when):
                check(suite.judge, suite, "judge", f"stop_when goal_met in {inst.test_id}")
    return list(dict.fromkeys(problems))


def scripted_user_problems(inst: Instance) -> list[Problem]:
    """A python simulated user that cannot be loaded, found before any call."""
    from evalspec.providers.python_user import load_scripted_user

    try:
        load_scripted_user(inst)
    except ProviderError as exc:
        where = inst.suite.lines.problem((*inst.test.where, "simulate", "python"), "") if inst.suite.lines else None
        return [Problem(str(inst.suite.path), where.line if where else None, where.path if where else "",
                        f"{inst.test_id}: {exc}")]
    return []
