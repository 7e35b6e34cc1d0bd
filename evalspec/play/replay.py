"""`evalspec grade` (re-run assertions on recorded transcripts) and `evalspec rerun --failed`
(re-play failed tests and label each failure reproduced / flaky / error)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from evalspec.config.loader import load_suites
from evalspec.core.redact import redact, run_secrets
from evalspec.plan.build import Instance, Selection, checked_plan, grading_input
from evalspec.plan.needs import check_plan
from evalspec.play.compare import GroupKey, compared, decide_group, group_key, replay_compared
from evalspec.play.runner import grade_with, recorded_inputs, run_instance, world_view
from evalspec.providers.factory import ProviderPool
from evalspec.results.aggregate import finalize
from evalspec.results.corrected import corrections
from evalspec.results.cut import cut_replies, name_rules, regraded_on_cut
from evalspec.results.record import Record, conversation_error, make_record
from evalspec.results.rundata import RunData
from evalspec.results.stream import Spool
from evalspec.results.transcript import Transcript


def instances_of(run: dict[str, Any]) -> tuple[dict[str, Instance], list[str]]:
    """The current plan of the run's suites, by record key; and warnings about changed suites. A run made
    with `--transcripts PATH` is planned on PATH again, never on the suites' own `transcripts.path`."""
    plan, secrets, warnings = _plan_of(run)
    return {redact(inst.key, secrets): inst for inst in plan}, warnings


class PlanWalk:
    """The instances of a plan by record key, rendered as they are asked for: records asked in plan order
    (as run.json holds them) keep one instance in memory at a time; an instance passed over is kept until
    it is asked for (docs/en/scale-and-ray.md#memory)."""

    def __init__(self, plan: Iterable[Instance], secrets: set[str]) -> None:
        self.rest, self.secrets = iter(plan), secrets
        self.passed: dict[str, Instance] = {}

    def get(self, key: str) -> Instance | None:
        if (inst := self.passed.pop(key, None)) is not None:
            return inst
        for inst in self.rest:
            found = redact(inst.key, self.secrets)
            if found == key:
                return inst
            self.passed[found] = inst
        return None


def _plan_of(run: dict[str, Any]) -> tuple[Iterable[Instance], set[str], list[str]]:
    """The run's suites planned again (rendered as walked), their secrets, and warnings (see `instances_of`)."""
    paths = [s["path"] for s in run["suites"]]
    suites = load_suites(paths)
    warnings = [f"{s.path}: changed since the run; using the suite as it is now"
                for s, meta in zip(suites, run["suites"]) if s.sha256 != meta["sha256"]]
    recorded = run.get("transcripts")
    graded: Mapping[str, object] = recorded if isinstance(recorded, dict) else {}
    override = path if isinstance(path := graded.get("path"), str) else None
    if override is not None:
        now = recorded_inputs(suites, override)
        if now is None or now["sha256"] != graded.get("sha256"):
            warnings.append(f"--transcripts {override}: changed since the run; its conversations are graded as "
                            "recorded in the run, by their ids in the file as it is now")
    # the simulators the run played with (`run --simulator`'s too): docs/en/agents.md#comparing-two-simulators
    simulators = list(dict.fromkeys(str(r["simulator"]) for r in run.get("results") or [] if r.get("simulator")))
    plan = checked_plan(suites, Selection(transcripts=override, simulators=simulators))
    secrets = run_secrets(suites)  # records hold keys redacted with the secrets of the whole run
    return plan, secrets, warnings


async def regrade(run: dict[str, Any], cache_dir: Path | None,
                  spool: Path | None = None) -> tuple[RunData, list[str]]:
    """Grade every recorded transcript again with the suites' current assertions; no call to a system
    under test is made (judges and embedders are called, through the cache). With `spool` (a file path),
    the graded records go there as they are made and the result's `results` reads them back
    (docs/en/scale-and-ray.md#memory)."""
    plan, secrets, warnings = _plan_of(run)
    instances = PlanWalk(plan, secrets)
    pool = ProviderPool([], cache_dir)
    out: list[dict[str, Any]] = []
    spooled = Spool(spool) if spool is not None else None

    def keep(record: dict[str, Any], held: bool = False) -> None:
        if spooled is None:
            out.append(record)
        else:
            spooled.add(record, held)

    groups: dict[GroupKey, list[tuple[Instance, Record]]] = {}
    try:
        for record in run["results"]:
            inst = instances.get(record["key"])
            if inst is None:
                warnings.append(f"{record['test_id']} @ {record['provider']}: no longer in the suite; kept as recorded")
                keep(record)
                continue
            transcript = Transcript(messages=record["transcript"], stop_reason=record["stop_reason"],
                                    error=conversation_error(record),
                                    calls=record.get("calls", 0), cached_calls=record.get("cached_calls", 0),
                                    world=record.get("world"))
            world = world_view(inst, record.get("world"), record.get("world_initial"))
            results = await grade_with(pool, inst, transcript.messages, ended_in_error=bool(transcript.error),
                                       world=world)
            cut = cut_replies(record["transcript"])
            specs = grading_input(inst).specs if cut else []
            if results and cut:  # verdicts reached on a whole reply stand; new rules cannot read it
                results = regraded_on_cut(record, specs, results)
            graded = make_record(inst, transcript, results, record.get("duration_ms", 0.0))
            if cut:
                name_rules(graded, specs)
            graded = redact(graded, run_secrets([inst.suite]))
            keep(graded, held=compared(inst.test))
            if compared(inst.test):
                groups.setdefault(group_key(inst.suite, inst.test, inst.repeat), []).append((inst, graded))
        for members in groups.values():  # `select-best`: each test's candidates of one repeat, compared again
            await decide_group(members[0][0], [record for _, record in members], pool)
    finally:
        await pool.aclose()
    # an earlier second opinion judged verdicts that may have changed: neither it nor its calls carry over
    records: Sequence[Mapping[str, Any]] = out if spooled is None else spooled.close()
    regraded = {**{k: v for k, v in run.items() if k != "judge_review"}, "results": records}
    gate = run.get("gate", {})
    # the labels file as it is now corrects the regraded pass rates (docs/en/judges.md#labels-flow-back)
    finalize(regraded, gate.get("fail_under"), bool(gate.get("include_drafts")), corrections(records, regraded["suites"]))
    return cast(RunData, regraded), warnings  # `finalize` filled every key RunData requires


def label(statuses: Sequence[str]) -> str:
    """reproduced: every replay failed; flaky: some passed; error: no replay reached a verdict."""
    verdicts = [s for s in statuses if s != "error"]
    if not verdicts:
        return "error"
    if all(s in ("failed", "xfailed") for s in verdicts):
        return "reproduced"
    return "flaky"


async def rerun_failed(run: dict[str, Any], times: int, concurrency: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Replay each failed or errored record `times` times, live (no cache), and label it: an error that
    repeats is `error` (infrastructure), one that now passes `flaky` (model fluctuation), docs/en/rule-self-tests.md#verdicts-that-hold."""
    instances, warnings = instances_of(run)
    # measured curve points are measurements, not failures: they are never replayed
    failed = [r for r in run["results"] if r["status"] in ("failed", "error") and not r.get("curve")]
    plan = list(instances.values())
    suites = list({id(i.suite): i.suite for i in instances.values()}.values())
    pool = ProviderPool(suites, cache_dir=None)
    slots = asyncio.Semaphore(max(1, concurrency))

    async def play(inst: Instance) -> Record:
        async with slots:
            return await run_instance(inst, pool)

    async def replay(inst: Instance) -> Record:  # a `select-best` is compared with its test's candidates
        return cast(Record, redact(await replay_compared(inst, plan, play, pool), run_secrets(suites)))

    rows = []
    try:
        targets = [(r, instances.get(r["key"])) for r in failed]
        for r, inst in targets:
            if inst is None:
                warnings.append(f"{r['test_id']} @ {r['provider']}: no longer in the suite; skipped")
        check_plan([inst for _, inst in targets if inst is not None])
        for r, inst in targets:
            if inst is None:
                continue
            records = await asyncio.gather(*(replay(inst) for _ in range(times)))
            statuses = [x["status"] for x in records]
            rows.append({"test_id": r["test_id"], "provider": r["provider"], "suite": r["suite"],
                         "label": label(statuses), "statuses": statuses,
                         "errors": [x["error"] for x in records if x.get("error")],
                         "attributions": [x.get("attribution") for x in records]})
    finally:
        await pool.aclose()
    return rows, warnings
