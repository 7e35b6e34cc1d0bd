"""Run a plan: conversations concurrently, turns in order, each result journaled as it finishes."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import datetime as dt
import hashlib
import itertools
import os
import random
import secrets as pysecrets
import time
from array import array
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypedDict, cast

from evalspec.assertions.evaluate import AssertionResult
from evalspec.assertions.grade import broken_for_good, grade, received_only
from evalspec.assertions.offloop import runs_user_code
from evalspec.config.model import AssertionSpec, Suite
from evalspec.core.errors import EvalspecError
from evalspec.core.redact import redact, run_secrets
from evalspec.core.usercode import describe
from evalspec.core.version import __version__
from evalspec.extend.check import WorldView
from evalspec.extend.provider import CallContext, ProviderResponse
from evalspec.extend.transcript import ChatMessage, Message
from evalspec.plan.build import Instance, Plan, grading_input, has_captures, positions, with_captures
from evalspec.plan.needs import check_plan
from evalspec.play.compare import Comparisons
from evalspec.play.processes import Children, Claims, Play, process_count
from evalspec.play.scripted import captured_values, run_scripted
from evalspec.play.supervise import PlayGuard, cause_of
from evalspec.play.teardown import run_setup, run_teardown
from evalspec.play.turns import TurnError, user_message
from evalspec.play.watch import GradingWatch
from evalspec.providers.calls import CacheMiss, CallStats, ProviderCaller
from evalspec.providers.factory import ProviderPool
from evalspec.providers.limits import LIMITED, RATE_LIMITED
from evalspec.providers.tool_rounds import SendTurn, ToolKit
from evalspec.results.aggregate import finalize
from evalspec.results.cut import cut_replies, name_rules
from evalspec.results.journal import Journal, check_unchanged, lock_run_dir, scan_journal, write_manifest
from evalspec.results.record import Record, make_record
from evalspec.results.rundata import RunData
from evalspec.results.stream import DiskRows, JournalRecords, RowFile, light
from evalspec.results.transcript import Transcript

if TYPE_CHECKING:
    from evalspec.play.ray_executor import RayConfig, RayExecutor

ResultCallback = Callable[[dict[str, Any]], None]
STREAM_ABOVE = 5000  # records: with stream_results, a larger run's results are read from the journal on demand


@dataclass
class RunOptions:
    concurrency: int = 8
    run_dir: Path | None = None
    resume: bool = False
    use_cache: bool = True
    cache_dir: Path = Path(".evalspec/cache")
    fail_under: float | None = None
    include_drafts: bool = False
    on_start: Callable[[int, int], None] | None = None
    on_result: ResultCallback | None = None
    ray: RayConfig | None = None  # set to run the conversations on a Ray cluster
    stream_results: bool = False  # True: run["results"] reads the journal on demand (the CLI: flat memory)
    processes: int | None = None  # None: several on a multi-core machine for a large run (see evalspec.play.processes)
    invocation: dict[str, Any] | None = None  # the command line a --resume must repeat (journal.invocation_of)
    guard: PlayGuard | None = None  # a supervised run (see evalspec.play.supervise): what a child plays and reports


def new_run_id() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + pysecrets.token_hex(3)


def suite_meta(suite: Suite) -> dict[str, Any]:
    return {"path": str(suite.path), "sha256": suite.sha256, "description": suite.description,
            "min_pass_rate": suite.min_pass_rate, "max_errors": suite.max_errors, "gate_mode": suite.gate_mode,
            "regressions": suite.regressions, "alpha": suite.alpha,
            **({"min_pass_hat_k": suite.min_pass_hat_k} if suite.min_pass_hat_k else {}),
            **({"use_corrected": True} if suite.use_corrected else {}),
            **({"report": {"lang": suite.report_lang}} if suite.report_lang else {}),
            **({"coverage": suite.coverage} if suite.coverage else {}),
            "providers": [p.redacted(suite.secrets) for p in suite.providers],
            **{role: spec.redacted(suite.secrets) for role in ("judge", "simulator", "embedder")
               if (spec := getattr(suite, role)) is not None}}


class RecordedInputs(TypedDict):
    """run.json's `transcripts`: the recorded conversations a run graded (`recorded_inputs`)."""

    path: str | None
    files: int
    sha256: str


def recorded_inputs(suites: Sequence[Suite], override: str | None) -> RecordedInputs | None:
    """The recorded conversations a run grades (docs/en/recorded-conversations.md#resume-and-grade):
    `--transcripts PATH` (absolute) or None for each suite's own `transcripts.path`, and one sha256 over
    every file's path and bytes; None when no suite has `transcripts:`."""
    from evalspec.config.dataset import digest as file_sha256
    from evalspec.config.recorded import files_of

    files = sorted({str(f.resolve()) for s in suites if s.transcripts is not None for f in files_of(s, override)})
    if not files:
        return None
    digest = hashlib.sha256()
    for name in files:
        own = file_sha256(Path(name))  # read in blocks: a million recorded conversations are a 400 MB file
        if own is None:
            raise OSError(f"cannot read {name}")
        digest.update(name.encode() + b"\0" + bytes.fromhex(own))
    return {"path": str(Path(override).absolute()) if override is not None else None, "files": len(files),
            "sha256": digest.hexdigest()}


def provider_code(suites: Sequence[Suite]) -> dict[str, str] | None:
    """The code of each `python: FILE.py:fn` provider (its file and the `.py` files of its folder tree, as
    its cache identity covers them), by suite and provider id: a `--resume` after the bot's code changed
    would mix replies of two bots (docs/en/reports-and-gate.md#exit-codes-and-the-gate). None: no such provider."""
    from evalspec.providers.python_provider import source_digest

    code: dict[str, str] = {}
    for suite in suites:
        for spec in suite.providers:
            ref = spec.config.get("python")
            target = ref.rpartition(":")[0] if isinstance(ref, str) else ""
            if target.endswith(".py"):
                path = (suite.path.parent / target).resolve()
                code[f"{suite.path.resolve()}::{spec.id}"] = source_digest(path) if path.is_file() else "missing"
    return code or None


class Kept:
    """What a run keeps of each finished conversation, by plan position: its journal offset and the byte
    offset of its light record in `lights` (a file on disk), two 8-byte ints a conversation
    (docs/en/scale-and-ray.md#memory)."""

    def __init__(self, size: int) -> None:
        self.offsets = array("q", [-1]) * size
        self.light_at = array("q", [-1]) * size
        self.lights: RowFile | None = RowFile()

    def done(self, position: int) -> bool:
        return self.offsets[position] >= 0

    def add(self, position: int, offset: int, lite: Mapping[str, Any]) -> None:
        assert self.lights is not None, "the run's records were already put in plan order"
        self.offsets[position], self.light_at[position] = offset, self.lights.append(lite)

    def count(self) -> int:
        return sum(1 for offset in self.offsets if offset >= 0)

    def in_plan_order(self) -> tuple[array[int], DiskRows]:
        """The finished conversations' offsets and light records, in plan order; the light records' file
        in finish order goes. The offsets are its own, the unfinished ones taken out in place: never a
        second array of them (8 MB at a million). Nothing is kept after."""
        assert self.lights is not None, "the run's records were already put in plan order"
        lights = DiskRows()
        for at in self.light_at:
            if at >= 0:
                lights.append_line(self.lights.read_line(at))  # copied as written
        self.lights.close()
        offsets, self.offsets, self.lights, self.light_at = self.offsets, array("q"), None, array("q")
        finished = 0
        for offset in offsets:  # the finished ones to the front, in order: no list of a million ints
            if offset >= 0:
                offsets[finished] = offset
                finished += 1
        del offsets[finished:]
        return offsets, lights


async def run_plan(suites: list[Suite], plan: Sequence[Instance], options: RunOptions,
                   baseline: Mapping[str, Any] | None = None) -> RunData:
    """Play every instance of `plan` and return the run (the content of run.json).

    The plan is walked once, lazily (a `Plan` renders each instance when a worker reaches it); what stays
    in memory per conversation is its journal offset and where its light record is on disk (`Kept`)."""
    run_dir = options.run_dir or Path(".evalspec/runs") / new_run_id()
    secrets = run_secrets(suites)
    graded = recorded_inputs(suites, plan.selection.transcripts if isinstance(plan, Plan) else None)
    lock, kept = open_run_dir(suites, plan, options, run_dir, graded, secrets)
    resumed = kept.count()
    LIMITED.clear()  # the providers this run finds rate limited (the progress line names them)
    if options.on_start:
        options.on_start(len(plan), resumed)
    cache_dir = options.cache_dir if options.use_cache else None
    pool = ProviderPool(suites, cache_dir=cache_dir, concurrency=options.concurrency)
    if pool.cache is not None and not pool.cache.usable:
        cache_dir = None  # skipped with its warning: forked players and Ray workers do not try it again
    try:
        check_plan(list(plan.representatives()) if isinstance(plan, Plan) else list(plan))
    except BaseException:
        await pool.aclose()
        if lock is not None:
            lock.close()
        raise
    started = time.time()
    await play_plan(suites, plan, options, run_dir, kept, pool, cache_dir, resumed, secrets, lock, baseline)
    return assembled(suites, options, run_dir, kept, started, graded, secrets)


def open_run_dir(suites: list[Suite], plan: Sequence[Instance], options: RunOptions, run_dir: Path,
                 graded: RecordedInputs | None, secrets: set[str]) -> tuple[IO[str] | None, Kept]:
    """Lock the run folder, check a `--resume` repeats its run and write the manifest: (the lock, what
    the journal already holds by plan position)."""
    invocation = {**(options.invocation or {}), "transcripts": graded} if graded is not None else options.invocation
    if (code := provider_code(suites)) is not None:
        invocation = {**(invocation or {}), "code": code}
    lock = lock_run_dir(run_dir, options.guard.parent if options.guard is not None else os.getpid())
    kept = Kept(len(plan))
    before: dict[str, tuple[int, int]] = {}  # stored key -> (journal offset, its light record's place)
    if options.resume:
        try:
            check_unchanged(suites, run_dir, invocation)
        except BaseException:
            if lock is not None:
                lock.close()
            raise
        found = DiskRows()
        for offset, r in scan_journal(run_dir / "journal.jsonl"):
            before[r["key"]] = (offset, len(found))
            found.append(light(r))
    write_manifest(suites, run_dir, invocation)
    if before:  # journal keys are redacted
        keys = plan.keys() if isinstance(plan, Plan) else (inst.key for inst in plan)
        for position, key in enumerate(keys):
            if (entry := before.get(redact(key, secrets))) is not None:
                kept.add(position, entry[0], found[entry[1]])
    return lock, kept


async def play_plan(suites: list[Suite], plan: Sequence[Instance], options: RunOptions, run_dir: Path, kept: Kept,
                    pool: ProviderPool, cache_dir: Path | None, resumed: int, secrets: set[str],
                    lock: IO[str] | None, baseline: Mapping[str, Any] | None = None) -> None:
    """Play what `kept` does not hold yet, in forked players, on Ray or here, journaling each record as it
    finishes; the pool, the journal and the lock are closed at the end."""
    executor: RayExecutor | None = None
    if options.ray is not None:  # only `--executor ray` loads Ray's side of the run (docs/en/scale-and-ray.md#start-up)
        from evalspec.play.ray_executor import RayExecutor

        executor = RayExecutor(options.ray, options.concurrency, cache_dir, play_watched)
    journal = Journal(run_dir / "journal.jsonl")

    def open_(position: int) -> bool:  # not played yet: neither kept nor held for its `select-best` group
        return not kept.done(position) and position not in comparisons.received

    def pending() -> Iterator[tuple[int, Instance]]:
        return positions(plan, lambda position, _key: open_(position))

    def keep(position: int, record: dict[str, Any], line: bytes | bytearray | None = None) -> None:
        if not comparisons.hold(position, record):  # else journaled once its `select-best` group is decided
            write(position, record, line)

    def write(position: int, record: dict[str, Any], line: bytes | bytearray | None = None) -> None:
        offset = journal.write_line(line) if line is not None else journal.write(record)
        kept.add(position, offset, light(record))  # the transcript stays on disk
        if options.on_result:
            options.on_result(record)

    guard = options.guard
    watched = run_dir / "grading"  # a watched run: the conversation being graded, should user code end it
    comparisons = Comparisons(suites, plan, kept.done, pool, write, baseline)

    async def play_one(position: int, inst: Instance) -> None:
        if guard is not None and inst.key in guard.crashed:  # it ended an earlier child: not played again
            guard.started(inst.key)  # graded again, another check of it may end this child too
            record = await regrade_ended(inst, pool, GradingWatch.of(watched, inst.key), guard.crashed[inst.key]) \
                or make_record(inst, Transcript(stop_reason="error", error=guard.crashed[inst.key]), [], 0.0)
        elif executor is not None:
            from evalspec.play.ray_executor import ConversationLost

            try:
                record = await executor.run(inst, position)
            except ConversationLost as exc:  # it ended every worker it was played on (docs/en/rule-self-tests.md#verdicts-that-hold)
                record = make_record(inst, Transcript(stop_reason="error", error=str(exc)), [], 0.0)
        else:
            if guard is not None:
                guard.started(inst.key)
            ended = lost.get(owner) if claims is not None and (owner := claims.owner(position)) is not None \
                else None  # its forked player ended under it
            record = await play_watched(inst, pool, watched if guard is not None or ended is not None else None,
                                        ended)
        keep(position, redact(record, secrets))  # every field, with the secrets of every suite of the run
        if guard is not None:
            guard.finished(inst.key)

    async def worker(queue: Iterator[tuple[int, Instance]]) -> None:  # `concurrency` of them: memory stays flat
        for position, inst in queue:
            await play_one(position, inst)

    children = Children()
    share = 1
    claims: Claims | None = None  # which forked player took which positions
    lost: dict[int, str] = {}  # forked player -> the error of a check of its that ended it (`play_watched`)
    try:
        if guard is not None and (guard.crashed or guard.suspects):  # what ended an earlier child, first:
            again = guard.crashed.keys() | guard.suspects  # recorded as errors, or played one at a time
            await worker(positions(plan, lambda position, key: key in again and open_(position)))
        share = 1 if executor is not None else \
            process_count(suites, len(plan) - resumed, options.concurrency, options.processes)
        if share > 1:
            def player() -> tuple[Play, Callable[[], Awaitable[None]]]:
                own = ProviderPool(suites, cache_dir=cache_dir, concurrency=-(-options.concurrency // share))

                async def play(inst: Instance) -> Record:  # graded under watch: the parent takes over an end
                    return redact(await run_instance(inst, own, watched), secrets)  # type: ignore[no-any-return]
                return play, own.aclose

            claims = Claims(len(plan))
            fds = children.start(share, lambda index: positions(plan, claims.keep(index, open_)), player,
                                 -(-options.concurrency // share))
            await children.collect(fds, lambda position, line, record: keep(position, record, line))
            lost = {index: f"user code ended a player process of evalspec: it {cause_of(status)} while this check "
                           "ran" for index, status in children.reap().items()}
        queue = pending()  # what no child delivered (all of it in a one-process run)
        await asyncio.gather(*(worker(queue) for _ in range(max(1, min(options.concurrency, len(plan) - resumed)))))
        await comparisons.wait()
    finally:
        children.stop()
        with contextlib.suppress(OSError):
            watched.rmdir()  # once no conversation graded under watch is left in it
        if lock is not None:
            lock.close()
        journal.close()
        await pool.aclose()
        if executor is not None:
            await executor.aclose()


def assembled(suites: list[Suite], options: RunOptions, run_dir: Path, kept: Kept, started: float,
              graded: RecordedInputs | None, secrets: set[str]) -> RunData:
    """The run: its records in plan order (read back from the journal), and the aggregates of their light
    forms (`aggregate.finalize`)."""
    offsets, lights = kept.in_plan_order()  # the file of light records in finish order goes
    run = {
        "evalspec_version": __version__,
        "run_id": run_dir.name,
        "started_at": dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(),
        "duration_s": round(time.time() - started, 3),
        "suites": redact([suite_meta(s) for s in suites], secrets),
        "results": lights,
        **({"transcripts": graded} if graded is not None and graded["path"] is not None else {}),
    }
    records = JournalRecords(run_dir / "journal.jsonl", offsets, lights)
    from evalspec.results.corrected import corrections

    # aggregates from the light records; the labels' corrections from the whole ones (docs/en/judges.md#labels-flow-back)
    streamed = options.stream_results and len(records) > STREAM_ABOVE
    # a streamed run's verdicts go to disk as they are made (docs/en/scale-and-ray.md#memory)
    run = finalize(run, options.fail_under, options.include_drafts, corrections(records, run["suites"]), streamed)
    # reporters still scan the results once per verdict: a small run keeps them in memory
    run["results"] = records if streamed else list(records)
    return cast(RunData, run)  # `finalize` filled every key RunData requires


async def play_watched(inst: Instance, pool: ProviderPool, folder: Path | None, ended: str | None = None,
                       name: str | None = None) -> Record:
    """One conversation, graded under watch in `folder` (`watch.GradingWatch`; its files named by `name`,
    else by its key). `ended`: the process that last had it ended (the error its check gets): when a check
    of it, and no other conversation's, was running there, its kept replies are graded again
    (`regrade_ended`); otherwise it is played again."""
    if ended is not None and folder is not None:
        record = await regrade_ended(inst, pool, GradingWatch.of(folder, name or inst.key), ended)
        if record is not None:
            return record
    return await run_instance(inst, pool, folder, name)


async def regrade_ended(inst: Instance, pool: ProviderPool, watch: GradingWatch, error: str) -> Record | None:
    """The record of a conversation whose user-code check ended the process while it was graded: its kept
    replies graded again, every check that ended a process an error (that one with `error`, naming the
    cause); None when no check of it alone was running there (it ended while being played)."""
    taken = watch.take_over(error)
    if taken is None:
        return None
    transcript, watch.ended = taken
    try:
        results = await grade_with(pool, inst, transcript.messages, ended_in_error=bool(transcript.error),
                                   watch=watch, world=world_view(inst, transcript.world))
    except EvalspecError as exc:
        transcript, results = Transcript(stop_reason="error", error=f"{error}; grading again: {exc}"), []
    watch.done()
    transcript.messages = cap_replies(transcript.messages, int(inst.suite.option("max_reply_chars")))
    record = make_record(inst, transcript, results, 0.0)
    if cut_replies(record["transcript"]):  # as `run_instance` stores a conversation
        name_rules(record, grading_input(inst).specs)
    return record


def world_view(inst: Instance, final: Mapping[str, object] | None,
               initial: Mapping[str, object] | None = None) -> WorldView | None:
    """The world a conversation of `inst` played on, for its checks; None when the test has none."""
    start = initial if initial is not None else inst.world
    if start is None:
        return None
    return WorldView(start, final if final is not None else start)


def cap_replies(messages: list[Message], limit: int) -> list[Message]:
    """Replies longer than `limit` characters are stored cut, with a marker (they were graded whole)."""
    out = []
    for m in messages:
        text = m.get("content")
        if m.get("role") == "assistant" and isinstance(text, str) and len(text) > limit:
            m = {**m, "content": text[:limit] + f"\n…[cut by evalspec: {len(text):,} characters, the first "
                                                 f"{limit:,} kept (options.max_reply_chars)]",
                 "original_chars": len(text), "cut_at": limit}
        out.append(m)
    return out


async def grade_with(pool: ProviderPool, inst: Instance, messages: list[Message],
                     ended_in_error: bool = False, watch: GradingWatch | None = None,
                     world: WorldView | None = None) -> list[AssertionResult]:
    """Grade a conversation; one that ended in an error is graded on the replies it received. `watch`: a
    watched run notes the user-code check in progress (and names the one that ended the process).
    `world`: the world it played on, at the start and at the end (docs/en/world.md)."""
    if has_captures(inst):  # the checks see the replies the conversation captured (docs/en/recorded-conversations.md)
        try:
            inst = with_captures(inst, captured_values(messages, inst)[0])
        except EvalspecError:
            if ended_in_error:  # a capture its error left undefined: the error is the verdict
                return []
            raise
    given = grading_input(inst)
    if world is not None:
        given = dataclasses.replace(given, world=world)
    if watch is not None:
        given = dataclasses.replace(given, note=watch.note, ended=watch.ended)
    waiting: list[AssertionSpec] = []
    if ended_in_error:  # graded on the replies received; a rule broken for good on them is failed too
        kept = received_only(given, messages).specs
        waiting = [s for s in given.specs if all(s is not k for k in kept) and broken_for_good(s)]
        given = dataclasses.replace(given, specs=kept + waiting)
        if not given.specs:
            return []
    results = await grade(given, messages, judge=pool.judge_fn(inst.suite), embed=pool.embed_fn(inst.suite),
                          judge_for=lambda raw: pool.judge_for(inst.suite, raw))
    if waiting:  # only their failures count: a pass on part of the conversation decides nothing
        results = results[:len(results) - len(waiting)] + [r for r in results[len(results) - len(waiting):]
                                                           if r.passed is False]
    return results


async def play(inst: Instance, pool: ProviderPool, provider: ProviderCaller,
               send_turn: Callable[..., SendTurn]) -> Transcript:
    """The conversation, played on its own deep copy of the test's world (docs/en/world.md): the world
    as the tools left it is the transcript's `world`."""
    kit = pool.toolkit(inst.provider, inst.suite)
    if inst.test.tool_results:  # this test's stubs over its provider's (docs/en/state.md)
        kit = dataclasses.replace(kit, results={**kit.results, **inst.test.tool_results})
    if kit.suite_tools:
        kit = dataclasses.replace(kit, world=copy.deepcopy(inst.world) if inst.world is not None else {})
    transcript = await play_with(inst, pool, provider, send_turn, kit)
    if inst.world is not None:
        transcript.world = kit.world if kit.world is not None else copy.deepcopy(inst.world)
    return transcript


async def play_with(inst: Instance, pool: ProviderPool, provider: ProviderCaller,
                    send_turn: Callable[..., SendTurn], kit: ToolKit) -> Transcript:
    """A stateful server's conversation is replayed from the cache only when every turn is cached;
    otherwise it runs live from the start with a new thread id. So does one whose cached answers came
    within a session the bot keeps for it (its cookies) and whose next turn is not cached
    (`calls.SESSION`, docs/en/providers.md#cookies)."""
    whole = provider.stateful and provider.cache is not None
    if inst.test.attack is not None:
        from evalspec.play.attack import run_attack

        try:
            return await run_attack(inst, send_turn(cache_only=whole), pool, kit=kit)
        except CacheMiss:
            return await run_attack(inst, send_turn(read=False), pool, replay=False, kit=kit)
    if inst.test.simulate is not None:
        from evalspec.play.simulated import run_simulated

        try:
            return await run_simulated(inst, send_turn(cache_only=whole), pool, kit=kit)
        except CacheMiss:
            return await run_simulated(inst, send_turn(read=False), pool, replay=False, kit=kit)
    try:
        return await run_scripted(inst, send_turn(cache_only=whole), kit)
    except CacheMiss:
        return await run_scripted(inst, send_turn(read=False), kit)


class TurnCaller:
    """The system under test as one conversation calls it: one thread id for all of its turns. Before its
    first live call (never before cached answers) the provider's `setup:` runs and the test's `state:` is
    seeded into a provider that can take it (docs/en/state.md)."""

    def __init__(self, inst: Instance, provider: ProviderCaller, mode: dict[str, bool], stats: CallStats) -> None:
        self.inst, self.provider, self.mode, self.stats = inst, provider, mode, stats
        self.thread_id = f"{random.getrandbits(128):032x}"  # uuid4().hex without a system call per conversation
        test, config = inst.test, inst.provider.config
        self.extra = conversation_extra(inst)
        self._seed = getattr(provider.provider, "seed", None) if test.state is not None else None
        self._prepared = not (config.get("setup") or self._seed is not None)
        self._metadata = {t.turn: t.metadata for t in inst.turns if t.role == "user" and t.metadata}
        self._kept: dict[str, Any] = {}  # what the provider keeps for this conversation (`CallContext.conversation`)

    def __call__(self, messages: list[ChatMessage], turn: int) -> Awaitable[ProviderResponse]:
        inst = self.inst
        ctx = CallContext(thread_id=self.thread_id, test_id=inst.test_id, turn=turn, vars=inst.vars,
                          repeat=inst.repeat, state=inst.test.state, metadata=self._metadata.get(turn),
                          conversation=self._kept)
        return self.provider.call(messages, ctx, self.extra, stats=self.stats,
                                  prepare=None if self._prepared else self._prepare, **self.mode)

    async def _prepare(self) -> None:
        if self._prepared:
            return
        self._prepared = True
        inst = self.inst
        if inst.provider.config.get("setup") and (problem := await run_setup(inst, self.thread_id)):
            raise TurnError(f"{problem} (nothing was sent)")
        if self._seed is not None:
            ctx = CallContext(thread_id=self.thread_id, test_id=inst.test_id, turn=0, vars=inst.vars,
                              repeat=inst.repeat, state=inst.test.state, conversation=self._kept)
            try:
                await asyncio.wait_for(self._seed(ctx), self.provider.timeout)
            except (TimeoutError, asyncio.TimeoutError):
                raise TurnError(f"seeding the test's state timed out after {self.provider.timeout:g}s") from None
            except EvalspecError as exc:
                raise TurnError(f"seeding the test's state failed: {exc}") from exc


def conversation_extra(inst: Instance) -> dict[str, object] | None:
    """What besides the messages decides a conversation's answers (the cache key's extra part, docs/en/state.md):
    the test's `state:` and `tool_results:`, the provider's `setup:`, the world it starts from and the suite's
    `tools:` (docs/en/world.md); None when it has none of them (the key of every conversation without them
    is what it always was)."""
    extra = {"state": inst.test.state, "tool_results": inst.test.tool_results,
             "setup": inst.provider.config.get("setup"), "world": inst.world,
             "tools": [dataclasses.asdict(t) | {"where": None} for t in inst.suite.tools] or None}
    extra = {k: v for k, v in extra.items() if v is not None}
    return extra or None


async def recorded_world(inst: Instance, transcript: Transcript) -> dict[str, object]:
    """The world a recorded conversation's calls of the suite's tools leave behind, replayed on a copy of
    the test's world (docs/en/world.md#cache-repeats-and-recorded-conversations)."""
    from evalspec.providers.tool_rounds import normalize_calls
    from evalspec.providers.world import answer_tool

    world: dict[str, object] = copy.deepcopy(inst.world or {})
    handlers = {t.name: t for t in inst.suite.tools if t.python is not None}
    for message in transcript.messages:  # calls of other tools are left alone
        for call in normalize_calls(message.get("tool_calls"), message.get("turn")) if message["role"] == "assistant" else []:
            if call["name"] in handlers:
                await answer_tool(handlers[call["name"]], call["arguments"], world, inst.suite.path.parent,
                                  dict(inst.vars), float(inst.suite.option("timeout")))
    return world


def recorded_transcript(inst: Instance) -> Transcript:
    """A recorded conversation's messages as a played one's (docs/en/recorded-conversations.md): an assistant message followed by
    another in the same turn is a tool round (`intermediate`), the turn's last one its reply. An assistant
    message that holds no reply is an error of its turn, left out of the messages (an empty reply
    flagged `no_reply` where its user turn says `no_reply: ok`; docs/en/recorded-conversations.md)."""
    messages: list[Message] = []
    silent_ok: set[int] = {t.turn for t in inst.turns if t.role == "user" and t.no_reply_ok}
    errors: list[str] = []
    for i, planned in enumerate(inst.turns):
        if planned.role == "user":
            messages.append(user_message(planned.text, planned.turn, label=planned.label))
            continue
        message = cast(Message, {"role": planned.role, "content": planned.text, "turn": planned.turn,
                                 "latency_ms": None, "tokens": None, "cost": None, **(planned.message or {})})
        if planned.no_reply is not None:
            if planned.turn not in silent_ok:
                errors.append(f"turn {planned.turn}: no reply: {planned.no_reply}")
                continue
            message["no_reply"] = True
        later = inst.turns[i + 1:]
        if planned.role == "assistant" and later and later[0].role != "user" and \
                any(t.role == "assistant" for t in itertools.takewhile(lambda t: t.role != "user", later)):
            message["intermediate"] = True
        messages.append(message)
    if errors:
        return Transcript(messages=messages, stop_reason="error", error="; ".join(errors))
    return Transcript(messages=messages)


async def run_instance(inst: Instance, pool: ProviderPool, watched: Path | None = None,
                       name: str | None = None) -> Record:
    """One conversation, graded; every failure is captured into the record, never raised. `watched` (the
    folder of a process whose end another notices): a conversation with user-code checks is kept there
    while it is graded (`watch.GradingWatch`), under `name` (default: its key)."""
    start = time.perf_counter()
    stats = CallStats()
    callers: list[TurnCaller] = []

    def send_turn(**mode: bool) -> SendTurn:
        callers.append(TurnCaller(inst, provider, mode, stats))
        return callers[-1]

    results: list[AssertionResult] = []
    limited: dict[str, int] = {}
    RATE_LIMITED.set(limited)  # this conversation's 429/503 answers, by provider (its judge's too)
    try:
        if inst.test.recorded:  # graded as it happened: no call
            transcript = recorded_transcript(inst)
            if inst.world is not None:
                transcript.world = await recorded_world(inst, transcript)
        else:
            provider = pool.get(inst.provider, inst.suite)
            transcript = await play(inst, pool, provider, send_turn)
        watch = GradingWatch.of(watched, name or inst.key) if watched is not None and \
            any(runs_user_code(s) for s in grading_input(inst).specs) else None
        if watch is not None and not watch.keep(transcript):
            watch = None  # should its code end the process, the conversation is an error
        try:
            results = await grade_with(pool, inst, transcript.messages, ended_in_error=bool(transcript.error),
                                       watch=watch, world=world_view(inst, transcript.world))
        finally:
            if watch is not None:
                watch.done()
    except EvalspecError as exc:
        transcript = Transcript(stop_reason="error", error=str(exc))
    except (Exception, SystemExit) as exc:  # a bug must cost one test, not the run: it is that test's error
        transcript = Transcript(stop_reason="error", error=f"internal error: {describe(exc)}")
    transcript.failed_calls, transcript.retries = stats.failed, stats.retries
    transcript.messages = cap_replies(transcript.messages, int(inst.suite.option("max_reply_chars")))
    record = make_record(inst, transcript, results, (time.perf_counter() - start) * 1000)
    if limited:
        record["rate_limited"] = limited
    if cut_replies(record["transcript"]):  # `grade` keeps these verdicts: they were reached on the whole reply
        name_rules(record, grading_input(inst).specs)
    if inst.provider.config.get("teardown"):
        thread_id = callers[-1].thread_id if callers else None
        record["teardown"] = redact(await run_teardown(inst, thread_id, record["transcript"]), inst.suite.secrets)
    return record
