"""Judged rules prove themselves before a run (docs/en/judges.md#examples-of-judged-rules): the `examples:` of
every model-graded assertion are graded by its own judge (or jury), each example twice, both bypassing the
cache. An example graded against its label, or graded differently the two times, is a config error naming
the rule and the example; each rule's leniency (its yes-rate on its fail examples) is reported, and for a
`pairwise` rule (its examples compared with its `reference`, each grading asked in both orders) its
position consistency: the share of gradings whose two orders agreed
(docs/en/judges.md#comparing-two-bot-versions-pairwise).

`run --check-judges` raises the errors before any call to a system under test (exit 2); `doctor --rules`
prints the report (exit 1 on an error)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

from evalspec.assertions.jury import wrapped
from evalspec.config.model import Suite
from evalspec.core.errors import ConfigError, Problem
from evalspec.extend.check import JudgeFn, JudgeRequest, JudgeVerdict
from evalspec.review.judge_eval import GradedItem, LabelledItem, category, example_items, grade_item

TIMES = 2  # each example is graded twice


@dataclass
class RuleCheck:
    """One judged rule's examples as its judge graded them."""

    suite: str
    rule: str
    examples: int = 0
    fail_examples: int = 0
    lenient: int = 0  # fail-example answers that passed
    fail_answers: int = 0  # fail-example answers given
    problems: list[Problem] = field(default_factory=list)
    members: dict[str, MemberCheck] = field(default_factory=dict)  # a jury's members, in its order
    compared: int = 0  # a pairwise rule: gradings that reached an outcome
    consistent: int = 0  # ... whose two orders agreed

    @property
    def position_consistency(self) -> float | None:
        """A pairwise rule's share of gradings whose two orders agreed (None for other rules)."""
        return self.consistent / self.compared if self.compared else None

    @property
    def leniency(self) -> float | None:
        """The yes-rate on the rule's fail examples (None without an answered one)."""
        return self.lenient / self.fail_answers if self.fail_answers else None

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite, "rule": self.rule, "examples": self.examples, "fail_examples": self.fail_examples,
                "leniency": None if self.leniency is None else round(self.leniency, 4),
                "problems": [str(p) for p in self.problems],
                **({"members": [m.to_json() for m in self.members.values()]} if self.members else {}),
                **({"position_consistency": round(self.consistent / self.compared, 4)} if self.compared else {})}


class MemberJson(TypedDict):
    """A member's line under its rule in `doctor --rules -o FILE` (`members`)."""

    judge: str
    answers: int
    wrong: int
    abstained: int
    leniency: float | None


@dataclass
class MemberCheck:
    """One jury member on a rule's examples: its answers, the ones against the example's label, its
    abstentions (a call or answer that failed) and its yes-rate on the fail examples (docs/en/judges.md#juries)."""

    judge: str
    answers: int = 0
    wrong: int = 0
    abstained: int = 0
    lenient: int = 0
    fail_answers: int = 0

    def to_json(self) -> MemberJson:
        return {"judge": self.judge, "answers": self.answers, "wrong": self.wrong, "abstained": self.abstained,
                "leniency": round(self.lenient / self.fail_answers, 4) if self.fail_answers else None}

    def count(self, vote: Mapping[str, object], label: object) -> None:
        """Tally one of its votes on an example labelled `label` (pass/fail or a level)."""
        if "error" in vote:
            self.abstained += 1
            return
        said = vote["level"] if vote.get("level") is not None else vote.get("pass")
        self.answers += 1
        self.wrong += category(said) != category(label)
        if label is False:
            self.fail_answers += 1
            self.lenient += vote.get("pass") is True


def fresh(judge: JudgeFn) -> JudgeFn:
    """The same judge (each member of a jury), its answers never read from the cache (an example is graded as
    the judge is now)."""

    def uncached(one: JudgeFn) -> JudgeFn:
        async def asked(request: JudgeRequest) -> JudgeVerdict:
            return await one(replace(request, read=False))

        return asked

    return wrapped(judge, uncached)


def _said(answer: Any) -> str:
    return {"true": "passed", "false": "failed", "error": "gave no answer"}.get(category(answer), f"chose '{answer}'")


def verdict_problem(item: LabelledItem, row: GradedItem) -> Problem | None:
    """What is wrong with an example's two gradings: no answer, two different answers, or the wrong one."""
    at = item.at or Problem("", None, "", item.example)
    answers = row["answers"] or [row["answer"]]
    if any(a is None for a in answers):
        why = f"the judge gave no answer ({row['error']})"
    elif len({category(a) for a in answers}) > 1:
        why = f"the judge is inconsistent on it: it {_said(answers[0])} once and {_said(answers[1])} once"
    elif category(answers[0]) != category(item.label):
        why = "the judge passed it — the rule does not catch this" if item.label is False else \
            "the judge failed it — the rule would reject a reply it must accept" if item.label is True else \
            f"the judge chose '{answers[0]}', not '{item.label}'"
        why += f" ({TIMES} times)"
    else:
        return None
    return Problem(at.file, at.line, at.path, f"{at.message} of '{item.rule}': {why}")


async def check_suite(suite: Suite, judge: JudgeFn) -> list[RuleCheck]:
    """Grade every judged example of `suite` twice with `judge` (uncached): one RuleCheck per rule."""
    rules: dict[str, RuleCheck] = {}
    for item in example_items(suite):
        row = await grade_item(item, fresh(judge), TIMES)
        rule = rules.setdefault(f"{item.rule}\0{item.spec.where}",
                                RuleCheck(str(suite.path), item.rule))
        rule.examples += 1
        outcomes = row.get("pairwise") or []
        rule.compared += len(outcomes)
        rule.consistent += sum(1 for o in outcomes if o != "inconsistent")
        for votes in row.get("jury") or []:
            for vote in votes:
                name = str(vote["judge"])
                rule.members.setdefault(name, MemberCheck(name)).count(vote, item.label)
        if item.label is False:
            rule.fail_examples += 1
            given = [a for a in row["answers"] or [] if a is not None]
            rule.fail_answers += len(given)
            rule.lenient += sum(1 for a in given if a is True)
        if problem := verdict_problem(item, row):
            rule.problems.append(problem)
    return list(rules.values())


async def check_judges(suites: Iterable[Suite], cache_dir: Path | None) -> list[RuleCheck]:
    """Every judged rule of `suites` with `examples:`, graded by its suite's judge."""
    from evalspec.providers.factory import ProviderPool, prepare_provider

    suites = [s for s in suites if example_items(s)]
    if not suites:
        return []
    for suite in suites:
        for spec in suite.jury.members if suite.jury is not None else [suite.judge] if suite.judge else []:
            prepare_provider(spec)
    pool = ProviderPool(suites, cache_dir)
    try:
        out: list[RuleCheck] = []
        for suite in suites:
            judge = pool.judge_fn(suite)
            if judge is None:
                raise ConfigError([Problem(str(suite.path), None, "judge", "judged rules have `examples:` to grade, "
                                           "and the suite has no `judge:`")])
            out += await check_suite(suite, judge)
        return out
    finally:
        await pool.aclose()


def render(rules: list[RuleCheck]) -> str:
    """`doctor --rules`: each rule's examples, leniency and problems."""
    if not rules:
        return "no judged rule has `examples:`"
    lines = []
    for r in rules:
        leniency = "—" if r.leniency is None else f"{r.leniency:.0%}"
        mark = "ok" if not r.problems else "WRONG"
        consistency = "" if r.position_consistency is None else \
            f"; position consistency {r.position_consistency:.0%} of {r.compared} gradings asked in both orders"
        lines.append(f"{mark:<5} {r.rule}  ({r.examples} examples; leniency {leniency} yes on "
                     f"{r.fail_examples} fail examples{consistency})  {r.suite}")
        lines += [f"      {m.judge}: {m.answers} answers, {m.wrong} wrong, {m.abstained} abstained; leniency "
                  f"{'—' if m.fail_answers == 0 else format(m.lenient / m.fail_answers, '.0%')}"
                  for m in r.members.values()]
        lines += [f"      {p}" for p in r.problems]
    return "\n".join(lines)
