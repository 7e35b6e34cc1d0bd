"""A second opinion on rules (docs/en/judges.md#how-a-verdict-is-reached): the judge re-reads a random share of the verdicts no model made.

`--judge-sample RATE [--seed N]` asks the suite's judge whether ceil(RATE × N) of the N rule results of
gated records (text, session, memory and python checks; passed and failed alike) are right, given the
rule, its `description:`, its evidence and the transcript. It never changes a verdict: it writes
run.json `judge_review`, and a disagreement with a failed rule suggests `rule_misjudgment`.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from evalspec.assertions.grade import needs_model
from evalspec.config.model import AssertionSpec, Suite
from evalspec.core.errors import ConfigError, EvalspecError, GradingError, Problem
from evalspec.core.redact import redact, run_secrets
from evalspec.extend.check import JudgeFn, JudgeRequest
from evalspec.extend.transcript import ChatMessage
from evalspec.plan.build import Instance, instance_assertions
from evalspec.providers.factory import ProviderPool
from evalspec.providers.structured import verdict_schema
from evalspec.results.aggregate import judge_totals
from evalspec.results.record import judge_figures
from evalspec.results.rundata import Record, ReviewItem, ReviewType, RunData
from evalspec.results.stream import update_record
from evalspec.results.verdict import is_gated

FLAG_MIN_SAMPLES = 5
FLAG_DISAGREEMENT = 0.10
AGREE_SCHEMA = verdict_schema("agree", {"type": "boolean"})
SYSTEM = ("You review the verdicts of automatic rules that check conversations between a user and an AI "
          "assistant. Decide whether the rule's verdict is right for this conversation, judging by what the rule "
          'is meant to catch. Answer with a single JSON object with two keys: "reason" (one sentence of your own) '
          'and "agree" (true or false).')


def needs_judges(suites: list[Suite]) -> None:
    """`--judge-sample` needs every suite to have a judge: say so before anything runs."""
    missing = [Problem(str(s.path), None, "", "--judge-sample needs a judge: set `judge:` in the suite")
               for s in suites if s.judge is None]
    if missing:
        raise ConfigError(missing)


def candidates(run: RunData, instances: dict[str, Instance]) -> list[tuple[int, int, AssertionSpec]]:
    """(record position, assertion index, spec) of every rule verdict in a gated record: positions, not
    records, so a large run's records (read back from its journal) are not all held at once."""
    out = []
    for position, record in enumerate(run["results"]):
        inst = instances.get(record["key"])
        if inst is None or not is_gated(record):
            continue
        specs = instance_assertions(inst)
        for i, result in enumerate(record["assertions"]):
            if i < len(specs) and result.get("pass") is not None and not needs_model(specs[i]):
                out.append((position, i, specs[i]))
    return out


def review_prompt(record: Record, result: Mapping[str, Any], spec: AssertionSpec) -> str:
    from evalspec.assertions.graded import format_transcript  # the judged checks: loaded when one is judged

    turn = result.get("turn")
    messages = [m for m in record["transcript"] if turn is None or (m.get("turn") or 0) <= turn]
    # the conversation first (docs/en/rate-limits.md): a provider's prompt cache serves it to the reviews of its other rules
    lines = ["Conversation:", format_transcript(messages), "",
             f"Rule: {spec.name}: {json.dumps(spec.value, ensure_ascii=False)}", f"Scope: {result.get('scope')}"]
    if spec.description:
        lines.append(f"What the rule is meant to catch: {spec.description}")
    lines.append(f"The rule's verdict: {'PASS' if result['pass'] else 'FAIL'} — {result.get('reason', '')}")
    for e in result.get("evidence") or []:
        lines.append(f"Evidence (turn {e.get('turn')}): {e.get('text', '')}")
    lines += ["", "Is the rule's verdict right for this conversation?"]
    return "\n".join(lines)


class ReviewFigures(TypedDict):
    """The second opinion's agreement overall and per assertion type (run.json `judge_review`)."""

    sampled: int
    agreement: float | None
    errors: int
    by_type: dict[str, ReviewType]
    flagged: list[str]


async def _ask(judge: JudgeFn, record: Record, index: int, spec: AssertionSpec) -> ReviewItem:
    result = record["assertions"][index]
    item: ReviewItem = {"suite": record["suite"], "test_id": record["test_id"], "provider": record["provider"],
                            "key": record["key"], "assertion": index, "type": result["type"],
                            "rule_pass": result["pass"], "agree": None, "reason": "", "error": None}
    messages: list[ChatMessage] = [{"role": "system", "content": SYSTEM},
                                   {"role": "user", "content": review_prompt(record, result, spec)}]
    usage: list[dict[str, Any]] = []
    try:
        verdict = await judge(JudgeRequest(messages, schema=AGREE_SCHEMA, name="second_opinion"))
        usage.append(verdict.usage)
        answer = verdict.answer
        if not isinstance(answer.get("agree"), bool):
            raise GradingError(f"judge answer has no boolean 'agree': {answer!r:.200}")
        item["agree"], item["reason"] = answer["agree"], str(answer.get("reason", ""))
    except GradingError as exc:
        item["error"] = str(exc)
        usage += exc.usage  # an unusable answer was a call made: it counts (docs/en/rule-self-tests.md#verdicts-that-hold)
    except EvalspecError as exc:
        item["error"] = str(exc)
    figures = judge_figures(usage)
    item["judge_calls"], item["judge_tokens"], item["judge_cost"] = \
        figures["judge_calls"], figures["judge_tokens"], figures["judge_cost"]
    return item


def summarize(items: list[ReviewItem]) -> ReviewFigures:
    """Agreement overall and per type; a type with ≥ 5 answers and > 10% disagreement is flagged."""
    def agreement(group: list[ReviewItem]) -> float | None:
        answered = [i for i in group if i["agree"] is not None]
        return round(sum(1 for i in answered if i["agree"]) / len(answered), 6) if answered else None

    types: dict[str, list[ReviewItem]] = defaultdict(list)
    for item in items:
        types[item["type"]].append(item)
    by_type: dict[str, ReviewType] = {}
    for name, group in sorted(types.items()):
        rate = agreement(group)
        answered = sum(1 for i in group if i["agree"] is not None)
        flagged = rate is not None and answered >= FLAG_MIN_SAMPLES and 1 - rate > FLAG_DISAGREEMENT + 1e-9
        by_type[name] = {"sampled": len(group), "agreement": rate, "flagged": flagged,
                         "errors": sum(1 for i in group if i["error"])}
    return {"sampled": len(items), "agreement": agreement(items), "errors": sum(1 for i in items if i["error"]),
            "by_type": by_type, "flagged": [t for t, v in by_type.items() if v["flagged"]]}


async def review(run: RunData, instances: dict[str, Instance], pool: ProviderPool, rate: float,
                 seed: int = 0, concurrency: int = 8) -> RunData:
    """Sample, ask, and write `judge_review` (and `attribution_suggested`) into `run`."""
    pool_of = candidates(run, instances)
    k = min(len(pool_of), math.ceil(rate * len(pool_of)))
    chosen = sorted(random.Random(seed).sample(range(len(pool_of)), k))
    slots = asyncio.Semaphore(max(1, concurrency))

    records = run["results"]
    secrets = run_secrets(list({id(i.suite): i.suite for i in instances.values()}.values()))

    async def one(n: int) -> ReviewItem:
        position, index, spec = pool_of[n]
        async with slots:
            record = records[position]  # read back only while its question is asked
            judge = pool.judge_fn(instances[record["key"]].suite)
            if judge is None:
                raise ConfigError([Problem(record["suite"], None, "", "--judge-sample needs a judge: set `judge:`")])
            item: ReviewItem = redact(await _ask(judge, record, index, spec), secrets)  # it may quote one (§17)
            if item["agree"] is False and item["rule_pass"] is False and record["status"] in ("failed", "error"):
                update_record(records, position, {"attribution_suggested": "rule_misjudgment"})
            return item

    items = list(await asyncio.gather(*(one(n) for n in chosen)))
    run["judge_review"] = {"rate": rate, "seed": seed, "candidates": len(pool_of), **summarize(items), "items": items}
    if "summary" in run:  # asked after the summary was made: its calls are added to the run's judge figures
        summary, totals = run["summary"], judge_totals(items, run["summary"])
        summary["judge_calls"], summary["judge_tokens"], summary["judge_cost"] = \
            totals["judge_calls"], totals["judge_tokens"], totals["judge_cost"]
    return run


async def second_opinion(run: RunData, instances: dict[str, Instance], suites: list[Suite], rate: float,
                         seed: int, cache_dir: Path | None) -> RunData:
    """`review` with a pool of its own (judge calls go through the cache like any judge call)."""
    pool = ProviderPool(suites, cache_dir)
    try:
        return await review(run, instances, pool, rate, seed)
    finally:
        await pool.aclose()


async def after_grading(run: RunData, instances: dict[str, Instance], suites: list[Suite], rate: float | None,
                        seed: int, cache_dir: Path | None) -> RunData:
    """What a run (and `grade`) does once verdicts exist: the second opinion when asked for, then the
    carry-over of earlier triages (docs/en/judges.md#how-a-verdict-is-reached)."""
    from evalspec.review.triage import carry_over

    if rate:
        run = await second_opinion(run, instances, suites, rate, seed, cache_dir)
    carry_over(run)
    return run
