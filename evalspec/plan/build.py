"""The plan: tests × providers × matrix values × repeat, in suite order, each instance rendered when reached."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, overload

import regex

from evalspec.assertions.grade import GradingInput
from evalspec.config.asserts import value_problems
from evalspec.config.dataset import DatasetProblem, Row, dataset_file, row_id, rows, scan, template_texts
from evalspec.config.interpolate import names_other_vars, render_text, render_value
from evalspec.config.meaning import hollow_texts
from evalspec.config.model import AssertionSpec, ProviderSpec, Suite, TestSpec
from evalspec.config.paths import PathKey
from evalspec.config.providers import model_ref
from evalspec.config.recorded import RECORDED, RecordedProblem, label_turns
from evalspec.config.recorded import conversations as recorded_conversations
from evalspec.config.recorded import test_of as recorded_test
from evalspec.config.turnrefs import ref_problem, turn_refs
from evalspec.config.world import WorldFileProblem, load_world
from evalspec.core.errors import ConfigError, ControlFlow, EvalspecError, Problem, TemplateProblem
from evalspec.core.suggest import did_you_mean
from evalspec.extend.patterns import regex_problem, written_patterns
from evalspec.extend.registry import resolve_type


@dataclass
class PlannedTurn:
    """A rendered conversation entry. `call` is False for history (`assistant:` and the user turn before it)."""

    role: str  # user | assistant
    text: str
    turn: int
    call: bool = True
    filler: bool = False
    label: str | None = None
    asserts: list[AssertionSpec] = field(default_factory=list)
    message: dict[str, Any] | None = None  # a recorded entry's other fields (tool_calls, tool_call_id)
    capture: str | None = None  # `capture: NAME`: this turn's reply becomes the var NAME (docs/en/recorded-conversations.md)
    # each capture's source (docs/en/state.md): NAME -> ("reply", "") | ("regex", R) | ("state", PATH)
    captures: dict[str, tuple[str, str]] = field(default_factory=dict)
    click: str | None = None  # `click: T` rendered: the turn presses the previous reply's button T (docs/en/state.md)
    metadata: dict[str, Any] | None = None  # `metadata:` sent with this user turn (`rasa:`, docs/en/state.md)
    no_reply_ok: bool = False  # `no_reply: ok`: the bot may stay silent on this turn (an empty reply, no error)
    no_reply: str | None = None  # a recorded assistant entry that holds no reply: why (an error of its turn)


@dataclass
class Instance:
    """One conversation to play: a test instance × provider × repeat."""

    suite: Suite
    test: TestSpec
    provider: ProviderSpec
    test_id: str  # instance id with #k
    base_id: str  # instance id without #k
    matrix: dict[str, object]
    repeat: int
    vars: dict[str, object]
    turns: list[PlannedTurn]
    asserts: list[AssertionSpec]
    labels: dict[str, int]
    world: dict[str, Any] | None = None  # the initial world, shared: each conversation plays on a deep copy
    row: Row | None = None  # a `dataset:` test's row: its fields are vars (docs/en/suite-format.md#dataset)
    # the model that plays its simulated user, when the suite compares several
    # (docs/en/agents.md#comparing-two-simulators); None: the test's or the suite's `simulator:`
    simulator: ProviderSpec | None = None

    @property
    def key(self) -> str:
        return instance_key(self.suite, self.test_id, self.provider)


def instance_assertions(instance: Instance) -> list[AssertionSpec]:
    """Turn-attached assertions in turn order, then the test's own."""
    return [a for t in instance.turns for a in t.asserts] + list(instance.asserts)


def grading_input(instance: Instance) -> GradingInput:
    """What grading reads of this conversation (grading does not read the plan)."""
    absent = frozenset(k for k in instance.suite.labels if k not in instance.labels) \
        if instance.test.recorded else frozenset()
    return GradingInput(instance.test_id, instance_assertions(instance), instance.labels, instance.vars,
                        instance.suite.path.parent, declared_tools(instance),
                        float(instance.suite.option("grade_timeout")), absent, instance.provider.id)


def declared_tools(instance: Instance) -> Any:
    """The tools a conversation's checks read (`tool-args-valid`, `said-vs-did`): its provider's own and the
    suite's `tools:` (docs/en/world.md#the-world-and-the-tools)."""
    own = instance.provider.config.get("tools")
    if not instance.suite.tools:
        return own
    from evalspec.core.errors import ProviderError
    from evalspec.providers.tool_rounds import load_tools

    try:
        loaded = load_tools(own, instance.suite.path.parent) or []
    except ProviderError:
        return own  # the check names the problem
    return [*loaded, *(t.definition() for t in instance.suite.tools)]


@dataclass
class Selection:
    filter: str | None = None
    tags: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    repeat: int | None = None
    transcripts: str | None = None  # `run --transcripts PATH`: replaces every suite's `transcripts.path`
    simulators: list[str] = field(default_factory=list)  # `run --simulator A,B`: replaces every suite's


def fmt_value(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def instance_id(test_id: str, matrix: Mapping[str, object], repeat: int, n: int) -> tuple[str, str]:
    base = test_id + ("[" + ",".join(f"{k}={fmt_value(v)}" for k, v in matrix.items()) + "]" if matrix else "")
    return base, (f"{base}#{repeat}" if n > 1 else base)


def spread_simulators(suite: Suite, test: TestSpec, selection: Selection) -> list[ProviderSpec | None]:
    """The simulators a test is played with (docs/en/agents.md#comparing-two-simulators): each of
    `run --simulator`'s, else of the suite's `simulators:`, for a simulated test whose user is the suite's
    model; [None] for any other test (played once, as written)."""
    sim = test.simulate
    if sim is None or sim.model is not None or sim.python is not None:
        return [None]
    if selection.simulators:
        return [named_simulator(suite, name) for name in selection.simulators]
    return list(suite.simulators) or [None]


def named_simulator(suite: Suite, name: str) -> ProviderSpec:
    """A simulator `run --simulator` names: the suite's `simulators:` entry with that id, else the model
    `name`, called with the settings of the suite's own `simulator:` model (its `api_base`, key, params)."""
    listed = next((spec for spec in suite.simulators if spec.id == name), None)
    if listed is not None:
        return listed
    own = suite.simulator
    if own is not None and own.kind == "model":
        return replace(own, id=name, config={**own.config, "model": name}, where=("--simulator",))
    return model_ref(name, name, ("--simulator",))


def with_simulator(base: str, simulator: ProviderSpec | None) -> str:
    """An instance id with its simulator (`buyer[simulator=A]`, `buyer[lang=zh,simulator=A]`): the
    instances of one test played by two simulators are two verdicts, journal entries and baseline rows."""
    if simulator is None:
        return base
    return f"{base[:-1]},simulator={simulator.id}]" if base.endswith("]") else f"{base}[simulator={simulator.id}]"


def identity_problems(suites: list[Suite]) -> list[Problem]:
    """Two instances of one suite with the same id would merge into one verdict (docs/en/rule-self-tests.md#verdicts-that-hold, "Identity is
    unique"): a hand-written `greet[lang=en]` beside a matrix instance, or `x: [1, "1"]`. Each is named
    where the second is written, with the line of the first; whatever the selection."""
    problems = []
    for suite in suites:
        first: dict[str, tuple[TestSpec, Mapping[str, object], PathKey]] = {}
        for test in suite.tests:
            if not test.matrix and regex.search(r"#\d+$", test.id):  # a repeat's record id (`#k`, docs/en/memory-and-curves.md)
                plain = test.id.rsplit("#", 1)[0]
                message = (f"test id '{test.id}' ends like a repeat's id: '#k' is added to each repeat, so a test "
                           f"'{plain}' run more than once has a record '{test.id}' too; rename it (e.g. "
                           f"'{plain}-{test.id.rsplit('#', 1)[1]}')")
                problems.append(suite.lines.problem((*test.where, "id"), message) if suite.lines
                                else Problem(str(suite.path), None, "", message))
            keys = list(test.matrix)
            for picks in itertools.product(*(range(len(test.matrix[k])) for k in keys)):
                matrix = {k: test.matrix[k][i] for k, i in zip(keys, picks, strict=True)}
                base, _ = instance_id(test.id, matrix, 1, 1)
                where: PathKey = (*test.where, "matrix", keys[-1], picks[-1]) if keys else (*test.where, "id")
                if base not in first:
                    first[base] = (test, matrix, where)
                    continue
                problems.append(_identity_problem(suite, base, test, matrix, where, first[base]))
    return problems


def _ids_under(suite: Suite, dataset: TestSpec) -> dict[str, PathKey]:
    """The instance ids of the suite's other tests that a row of the `dataset` test could also give
    (`ID[...]`), with where each is written: usually none."""
    ids: dict[str, PathKey] = {}
    for test in suite.tests:
        if test.dataset is not None or not test.id.startswith(dataset.id + "["):
            continue
        keys = list(test.matrix)
        for picks in itertools.product(*(range(len(test.matrix[k])) for k in keys)):
            base, _ = instance_id(test.id, {k: test.matrix[k][i] for k, i in zip(keys, picks, strict=True)}, 1, 1)
            if base.startswith(dataset.id + "["):
                ids.setdefault(base, (*test.where, "id"))
    return ids


def _identity_problem(suite: Suite, base: str, test: TestSpec, matrix: Mapping[str, object], where: PathKey,
                      seen: tuple[TestSpec, Mapping[str, object], PathKey]) -> Problem:
    other, other_matrix, other_where = seen
    values = ",".join(f"{k}={fmt_value(v)}" for k, v in other_matrix.items())
    if other is test:
        alike = " and ".join(f"{other_matrix[k]!r} and {v!r}" for k, v in matrix.items() if v is not other_matrix[k])
        whose, fix = f"that of {values} in the same matrix", f"make the matrix values distinct ({alike} read the same)"
    else:
        whose = f"that of test '{other.id}'" + (f" with {values}" if values else "")
        fix = "rename one of the tests"
    line = suite.lines.line(other_where) if suite.lines else None
    message = (f"instance id '{base}' is also {whose}" + (f" (line {line})" if line else "")
               + f": two instances with one id would merge into one verdict; {fix}")
    return suite.lines.problem(where, message) if suite.lines else Problem(str(suite.path), None, "", message)


class Slot(NamedTuple):
    """What one instance of the plan is, before it is rendered."""

    suite: Suite
    test: TestSpec
    provider: ProviderSpec
    matrix: dict[str, object]
    repeat: int
    base: str  # instance id without #k
    id: str  # instance id
    row: Row | None = None  # a `dataset:` test's row
    simulator: ProviderSpec | None = None  # one of the simulators compared (`spread_simulators`)


def plan_slots(suites: list[Suite], selection: Selection | None = None, first_rows: bool = False) -> Iterator[Slot]:
    """What each instance of the plan is, in plan order, without rendering anything. A `dataset:` test's
    rows are read as they are reached (`first_rows`: its first row only, what checking its templates needs)."""
    selection = selection or Selection()
    pattern = regex.compile(selection.filter) if selection.filter else None
    for suite in suites:
        for test in suite.tests:
            if selection.tags and not set(selection.tags) & (set(test.tags) | set(suite.tags)):
                continue
            if test.recorded:
                if (not selection.providers or RECORDED.id in selection.providers) and \
                        (not pattern or pattern.search(test.id) or pattern.search(test.name)):
                    yield Slot(suite, test, RECORDED, {}, 1, test.id, test.id)
                continue
            providers = [p for p in suite.providers if test.providers is None or p.id in test.providers]
            if selection.providers:
                providers = [p for p in providers if p.id in selection.providers]
            if not providers:
                continue
            n = selection.repeat or test.repeat.n
            for simulator in spread_simulators(suite, test, selection):
                if test.dataset is not None:
                    yield from _dataset_slots(suite, test, providers, n, pattern, first_rows, simulator)
                    continue
                yield from _matrix_slots(suite, test, providers, n, pattern, simulator)
        if suite.transcripts is not None:
            yield from _recorded_slots(suite, selection, pattern)


def _matrix_slots(suite: Suite, test: TestSpec, providers: list[ProviderSpec], n: int, pattern: Any,
                  simulator: ProviderSpec | None) -> Iterator[Slot]:
    """One slot per matrix value × repeat × provider."""
    keys = list(test.matrix)
    for values in itertools.product(*(test.matrix[k] for k in keys)):
        matrix = dict(zip(keys, values, strict=False))
        for k in range(1, n + 1):
            base, _ = instance_id(test.id, matrix, k, n)
            base = with_simulator(base, simulator)
            tid = f"{base}#{k}" if n > 1 else base
            if pattern and not (pattern.search(tid) or pattern.search(test.name)):
                continue
            for provider in providers:
                yield Slot(suite, test, provider, matrix, k, base, tid, None, simulator)


def _dataset_slots(suite: Suite, test: TestSpec, providers: list[ProviderSpec], n: int, pattern: Any,
                   first_rows: bool, simulator: ProviderSpec | None = None) -> Iterator[Slot]:
    """One slot per row × repeat × provider, each row read as it is reached."""
    assert test.dataset is not None
    try:
        for row in rows(dataset_file(suite.path, test.dataset)):
            base = with_simulator(row_id(test.id, row), simulator)
            reached = False
            for k in range(1, n + 1):
                tid = f"{base}#{k}" if n > 1 else base
                if pattern and not (pattern.search(tid) or pattern.search(test.name)):
                    continue
                reached = True
                for provider in providers:
                    yield Slot(suite, test, provider, {}, k, base, tid, row, simulator)
            if first_rows and reached:
                return
    except DatasetProblem as exc:
        raise ConfigError([_dataset_problem(suite, test, exc.problem)]) from None


def _dataset_problem(suite: Suite, test: TestSpec, problem: Problem) -> Problem:
    """A problem of the file as a whole (it does not exist, it is not text) is named at the suite's
    `dataset:` line; one of a row at the dataset's own line."""
    if problem.line is None and suite.lines:
        return suite.lines.problem((*test.where, "dataset"), problem.message)
    return problem


def _recorded_slots(suite: Suite, selection: Selection, pattern: Any) -> Iterator[Slot]:
    """One slot per recorded conversation of the suite's `transcripts:`, read as it is reached."""
    if selection.tags and not set(selection.tags) & (set(suite.transcripts.tags if suite.transcripts else [])
                                                     | set(suite.tags)):
        return
    if selection.providers and RECORDED.id not in selection.providers:
        return
    try:
        for index, conversation in enumerate(recorded_conversations(suite, selection.transcripts)):
            if pattern and not pattern.search(conversation.id):
                continue
            test = recorded_test(suite, conversation, index)
            yield Slot(suite, test, RECORDED, {}, 1, test.id, test.id)
    except RecordedProblem as exc:
        raise ConfigError([exc.problem]) from None


class Plan(Sequence[Instance]):
    """Every instance to run, rendered when it is reached: iterating holds one instance at a time, so a
    run of a million conversations keeps none of them in memory. Repeats of a test without fillers
    share one rendering (their turns and assertions are the same)."""

    def __init__(self, suites: list[Suite], selection: Selection | None = None, checked: bool = False) -> None:
        self.suites, self.selection = suites, selection or Selection()
        self.checked = checked  # its problems() were found empty (by `preflight.prepare`)
        self._length: int | None = None  # counted when first asked: a plan walked only for its problems never is
        self._memo: tuple[Any, Instance] | None = None

    def __len__(self) -> int:
        if self._length is None:
            self._length = sum(1 for _ in plan_slots(self.suites, self.selection))
        return self._length

    def __iter__(self) -> Iterator[Instance]:
        for slot in plan_slots(self.suites, self.selection):
            try:
                yield self._render(slot)
            except _RenderProblem as exc:
                raise ConfigError([_problem(slot.suite, _in_dataset(slot, exc))]) from None

    def renderable(self) -> Iterator[Instance]:
        """The instances that render (a broken one is left out: `problems()` reports it); a `dataset:` test by
        its first row (its rules and checks are the same for every row)."""
        for slot in plan_slots(self.suites, self.selection, first_rows=True):
            try:
                yield self._render(slot)
            except _RenderProblem:
                continue

    @overload
    def __getitem__(self, index: int) -> Instance: ...

    @overload
    def __getitem__(self, index: slice) -> list[Instance]: ...

    def __getitem__(self, index: int | slice) -> Instance | list[Instance]:
        if isinstance(index, slice):
            return list(self)[index]
        index = range(len(self))[index]
        return self._render(next(itertools.islice(plan_slots(self.suites, self.selection), index, None)))

    def positions(self, keep: Callable[[int, str], bool]) -> Iterator[tuple[int, Instance]]:
        """(position, instance) where `keep(position, key)` holds, rendering only those."""
        for position, slot in enumerate(plan_slots(self.suites, self.selection)):
            if keep(position, instance_key(slot.suite, slot.id, slot.provider)):
                try:
                    yield position, self._render(slot)
                except _RenderProblem as exc:
                    raise ConfigError([_problem(slot.suite, _in_dataset(slot, exc))]) from None

    def keys(self) -> Iterator[str]:
        """Each instance's key, in plan order, without rendering."""
        for slot in plan_slots(self.suites, self.selection):
            yield instance_key(slot.suite, slot.id, slot.provider)

    def representatives(self) -> Iterator[Instance]:
        """One instance per (suite, test, provider): what preflight checks (providers, judges, checks
        are per test, never per repeat)."""
        seen: set[tuple[int, int, int, str]] = set()
        for slot in plan_slots(self.suites, self.selection, first_rows=True):
            mark = (id(slot.suite), id(slot.test), id(slot.provider), slot.simulator.id if slot.simulator else "")
            if slot.test.recorded == "file":  # every conversation of `transcripts:` has the same checks
                mark = (id(slot.suite), -1, -1, "")
            if mark in seen:
                continue
            try:
                instance = self._render(slot)
            except _RenderProblem:
                continue  # `problems()` reports it; a later instance of the test may stand for it
            seen.add(mark)
            yield instance

    def problems(self) -> list[Problem]:
        """Every identity problem of its suites, and every template problem of every instance (rendering
        each once, keeping none)."""
        problems = identity_problems(self.suites)
        last = None
        scanned: set[int] = set()
        for slot in plan_slots(self.suites, self.selection, first_rows=True):
            if (key := _memo_key(slot)) == last:
                continue  # another repeat of the instance just rendered: the same rendering
            last = key
            try:
                self._render(slot)
            except _RenderProblem as exc:
                problems.append(_problem(slot.suite, _in_dataset(slot, exc)))
                continue
            if slot.row is not None and id(slot.test) not in scanned:
                scanned.add(id(slot.test))
                problems.extend(dataset_problems(slot.suite, slot.test, slot.row, self._row_check(slot)))
        return list(dict.fromkeys(problems))

    def _row_check(self, slot: Slot) -> Callable[[Row], Problem | None]:
        """The problem of one row of a dataset test, or None: its instance id is another test's (a test
        written `faq[x]` beside the row `x` of `faq`), or it does not render. Every row is checked before the
        run's first call, so that no row stops a run half played (docs/en/suite-format.md#dataset)."""
        taken = _ids_under(slot.suite, slot.test)

        def check(row: Row) -> Problem | None:
            if taken and (where := taken.get(row_id(slot.test.id, row))) is not None:
                assert slot.test.dataset is not None
                line = slot.suite.lines.line(where) if slot.suite.lines else None
                return Problem(str(dataset_file(slot.suite.path, slot.test.dataset)), row.line, "",
                               f"instance id '{row_id(slot.test.id, row)}' is also that of the test written at "
                               f"{slot.suite.path.name}" + (f":{line}" if line else "") + ": two instances with "
                               "one id would merge into one verdict; change the row's 'id' or rename the test")
            try:  # rendered apart from the plan's memo: one row is never another's rendering
                _instance(slot.suite, slot.test, slot.provider, {}, slot.repeat, slot.base, slot.id, row=row)
            except _RenderProblem as exc:
                return _problem(slot.suite, _in_dataset(slot._replace(row=row), exc))
            return None
        return check

    def _render(self, slot: Slot) -> Instance:
        suite, test, provider, matrix, k, base, tid, row, simulator = slot
        if test.recorded == "file":  # a test of its own, made as its line was read
            return _instance(suite, test, provider, matrix, k, base, tid)
        memo_key = _memo_key(slot)
        if self._memo is not None and self._memo[0] == memo_key:
            first = self._memo[1]
            return Instance(suite, test, provider, tid, base, matrix, k, first.vars, first.turns, first.asserts,
                            first.labels, first.world, row, simulator)
        instance = replace(_instance(suite, test, provider, matrix, k, base, tid, row=row), simulator=simulator)
        self._memo = (memo_key, instance)
        return instance


def _memo_key(slot: Slot) -> tuple[Any, ...]:
    """Slots with the same key render the same turns and assertions (repeats of a test without fillers)."""
    fillers = any(entry.kind == "filler" for entry in slot.test.conversation)
    return (id(slot.suite), id(slot.test), tuple(slot.matrix.items()), slot.row.line if slot.row else 0,
            slot.repeat if fillers else 0)


def dataset_problems(suite: Suite, test: TestSpec, first: Row,
                     check: Callable[[Row], Problem | None] | None = None) -> list[Problem]:
    """A dataset test's whole file, read once: lines that do not read, rows without a field the test's
    templates name (those of its first row), rows `check` finds a problem in (their rendering), rows that
    give one instance id (docs/en/suite-format.md#dataset)."""
    assert test.dataset is not None
    named = {name for text in template_texts(test) for name in names_other_vars(text, {})} & first.fields.keys()
    return scan(dataset_file(suite.path, test.dataset), test.id, named, check)


def _in_dataset(slot: Slot, exc: _RenderProblem) -> _RenderProblem:
    """A template problem of a dataset row, its message naming the row and the fields it has."""
    if slot.row is None or not slot.test.dataset:
        return exc
    fields = ", ".join(slot.row.fields) or "none"
    return _RenderProblem(exc.path, f"{exc.message} (dataset {slot.test.dataset} line {slot.row.line}; its "
                                    f"fields: {fields})")


def positions(plan: Sequence[Instance], keep: Callable[[int, str], bool]) -> Iterator[tuple[int, Instance]]:
    """`Plan.positions` for any sequence of instances (a list from `build_plan`, say)."""
    if isinstance(plan, Plan):
        return plan.positions(keep)
    return ((position, inst) for position, inst in enumerate(plan) if keep(position, inst.key))


def checked_plan(suites: list[Suite], selection: Selection | None = None) -> Plan:
    """The plan of `suites`, its template problems looked for first: a ConfigError names them all (nothing runs)."""
    from evalspec.config.gatekeys import min_pass_hat_k_problems

    plan = Plan(suites, selection)
    problems = [p for s in suites for p in min_pass_hat_k_problems(s, selection.repeat if selection else None)]
    problems += plan.problems()
    if problems:  # a template problem quotes the template, with its `${TOKEN}` values
        from evalspec.core.redact import redact_problems, run_secrets

        raise ConfigError(redact_problems(problems, run_secrets(suites)))
    plan.checked = True
    return plan


def build_plan(suites: list[Suite], selection: Selection | None = None) -> list[Instance]:
    """Every instance to run, in suite order, as a list; template problems are ConfigErrors (nothing runs)."""
    return list(checked_plan(suites, selection))


def instance_key(suite: Suite, test_id: str, provider: ProviderSpec) -> str:
    return f"{suite.path}::{test_id}::{provider.id}"


def _problem(suite: Suite, exc: _RenderProblem) -> Problem:
    return suite.lines.problem(exc.path, exc.message) if suite.lines else Problem(str(suite.path), None, "",
                                                                                  exc.message)


class _RenderProblem(ControlFlow):
    def __init__(self, path: PathKey, message: str) -> None:
        super().__init__(message)
        self.path, self.message = path, message


def _render(value: Any, variables: Mapping[str, object], path: PathKey) -> Any:
    try:
        return render_value(value, variables)
    except TemplateProblem as exc:
        raise _RenderProblem(path, _with_hint(str(exc), variables)) from None


def _with_hint(message: str, variables: Mapping[str, object]) -> str:
    found = regex.search(r"'([^\W\d]\w*)' is undefined", message)  # a Chinese header is a name too
    return message + did_you_mean(found.group(1), list(variables)) if found else message


def _render_asserts(specs: list[AssertionSpec], variables: Mapping[str, object], turn: int | None,
                    hollow: bool = True) -> list[AssertionSpec]:
    """The checks with their templates rendered; `hollow`: a text or pattern a template rendered into one
    that would match almost any reply (an empty CSV cell) is a problem, as it is written (docs/en/rule-self-tests.md)."""
    out = []
    for spec in specs:
        value = _render(spec.value, variables, spec.value_where)
        if hollow and next(template_texts(spec.value), None) is not None and \
                (resolved := resolve_type(spec.type)) is not None:
            for where, message in [*value_problems(resolved[0], value, spec.value_where),
                                    *hollow_texts(resolved[0], spec.negate, value, spec.value_where)]:
                raise _RenderProblem(where, f"{message} (after rendering)")
        scope = _render(spec.scope, variables, (*spec.where, "scope"))
        at = turn if spec.turn is not None else None
        if value == spec.value and scope == spec.scope and at == spec.turn:
            out.append(spec)  # nothing in it is templated: one spec, its parameters made once, for every instance
            continue
        out.append(replace(spec, value=value, scope=scope, turn=at))
    return out


def has_captures(instance: Instance) -> bool:
    return any(t.captures for t in instance.turns)


def with_captures(instance: Instance, captured: dict[str, str]) -> Instance:
    """The instance rendered again now that its captures' values are known (docs/en/recorded-conversations.md): a capture not in
    `captured` (its turn was not reached or errored) is undefined, and a template using it an error
    (`EvalspecError`, naming the file, line and key)."""
    try:
        return replace(_instance(instance.suite, instance.test, instance.provider, instance.matrix, instance.repeat,
                                 instance.base_id, instance.test_id, captured, instance.row),
                       simulator=instance.simulator)
    except _RenderProblem as exc:
        raise EvalspecError(str(_problem(instance.suite, exc))) from None


def _instance(suite: Suite, test: TestSpec, provider: ProviderSpec, matrix: dict[str, object], k: int,
              base: str, tid: str, captured: dict[str, str] | None = None, row: Row | None = None) -> Instance:
    """`captured`: the values of the captures so far (None when planning: a capture then renders as its
    own `{{ NAME }}`, so that a later turn using it checks and reads as written). `row`: a dataset row,
    whose fields are vars over the test's."""
    variables = {**suite.vars, **test.vars, **(row.fields if row else {}), **matrix}
    if test.recorded:
        return _recorded_instance(suite, test, provider, tid, variables)
    turns: list[PlannedTurn] = []
    labels: dict[str, int] = {}
    turn = 0
    until = _until_turn(test, variables)
    for position, entry in enumerate(test.conversation):
        if until is not None and (turn > until or (turn == until and entry.kind != "assistant")):
            break  # past the sent turn; its golden reply (and what follows) is left out
        if until is not None and turn == until:
            continue
        if entry.kind == "user":
            turn += 1
            local = {**variables, **entry.vars} if entry.vars else variables  # (read only while the turn renders)
            key = "click" if entry.click is not None else "user"
            text = _render(entry.text, local, (*entry.where, key))
            if not str(text).strip():
                raise _RenderProblem((*entry.where, key), "empty user message after rendering" if key == "user"
                                     else "'click:' names no button after rendering")
            if entry.label:
                labels[entry.label] = turn
            # under `until_turn` the turns before the sent one are golden history: nothing of theirs is graded
            graded = entry.asserts if until is None or turn == until else []
            turns.append(PlannedTurn("user", str(text), turn, label=entry.label,
                                     asserts=_render_asserts(graded, local, turn, captured is None),
                                     capture=entry.capture,
                                     captures=dict(entry.captures), click=str(text) if key == "click" else None,
                                     metadata=entry.metadata, no_reply_ok=entry.no_reply_ok))
            for name in entry.captures:  # defined for the later turns and the test's assertions
                if captured is None:
                    variables[name] = "{{ " + name + " }}"
                elif name in captured:
                    variables[name] = captured[name]
        elif entry.kind == "filler":
            count = _render(entry.count, variables, (*entry.where, "filler"))
            try:
                count = int(count)
            except (TypeError, ValueError):
                raise _RenderProblem((*entry.where, "filler"), f"filler count must be a whole number, got {count!r}") from None
            if count < 0:
                raise _RenderProblem((*entry.where, "filler"), f"filler count must be >= 0, got {count}")
            pool = [str(_render(p, variables, (*entry.where, "filler", "pool"))) for p in entry.pool or []]
            from evalspec.plan.fillers import pick_fillers  # (docs/en/scale-and-ray.md#start-up)

            for text in pick_fillers(count, pool or None, seed=int(suite.option("seed")), test_id=test.id,
                                     position=position, matrix=matrix, repeat=k,
                                     user_texts=[str(e.text) for e in test.conversation if e.kind == "user"]):
                turn += 1
                turns.append(PlannedTurn("user", text, turn, filler=True))
        else:
            text = render_text_at(entry.text, variables, (*entry.where, "assistant"))
            if turns and turns[-1].role == "user":
                turns[-1].call = False
            turns.append(PlannedTurn("assistant", text, turn, call=False))
    asserts = _render_asserts(test.asserts, variables, None, captured is None)
    for t in turns:
        _check_rendered(t.asserts, labels, turn)
    _check_rendered(asserts, labels, turn)
    stand_ins = {name for t in turns for name in t.captures} if captured is None else ()
    if stand_ins:  # a capture's stand-in is not a value: no provider or check sees it as one
        variables = {n: v for n, v in variables.items() if n not in stand_ins}
    return Instance(suite, test, provider, tid, base, matrix, k, variables, turns, asserts, labels,
                    _world(suite, test, variables), row)


def _world(suite: Suite, test: TestSpec, variables: Mapping[str, object]) -> dict[str, Any] | None:
    """The instance's initial world (docs/en/world.md): the test's, else the suite's, its file rendered with
    the instance's vars (a matrix key may name it)."""
    own = test.world is not None
    if not own and suite.world is None:
        return None  # (nearly every instance: no copy of its vars)
    try:
        return load_world(test.world if own else suite.world, dict(variables), suite.path.parent)
    except WorldFileProblem as exc:
        raise _RenderProblem((*test.where, "world") if own else ("world",), str(exc)) from None


def _until_turn(test: TestSpec, variables: Mapping[str, object]) -> int | None:
    """`until_turn:` rendered: the user turn the instance sends (docs/en/recorded-conversations.md, MT-Bench-101 per turn)."""
    if test.until_turn is None:
        return None
    where: PathKey = (*test.where, "until_turn")
    value = _render(test.until_turn, variables, where)
    try:
        until = int(value)
    except (TypeError, ValueError):
        raise _RenderProblem(where, f"until_turn must be a whole number, got {value!r}") from None
    if until < 1:
        raise _RenderProblem(where, f"until_turn must be >= 1, got {until}")
    return until


def _recorded_instance(suite: Suite, test: TestSpec, provider: ProviderSpec, tid: str,
                       variables: dict[str, object]) -> Instance:
    """A recorded conversation as it happened: user turns numbered, every other message in the turn of
    the user message before it; labels written on entries, then `labels:` by pattern. A recorded file's
    text is taken as it is; an inline `transcript:` is rendered like a suite's turns."""
    turns: list[PlannedTurn] = []
    labels: dict[str, int] = {}
    turn = 0
    inline = test.recorded == "inline"
    for entry in test.conversation:
        text = str(entry.text)
        if inline:
            text = str(_render(entry.text, variables, (*entry.where, entry.kind)))
        if entry.kind == "user":
            turn += 1
            if entry.label:
                labels[entry.label] = turn
            asserts = _render_asserts(entry.asserts, variables, turn) if entry.asserts else []
            turns.append(PlannedTurn("user", text, turn, call=False, label=entry.label, asserts=asserts,
                                     no_reply_ok=entry.no_reply_ok))
        else:
            turns.append(PlannedTurn(entry.kind, text, turn, call=False, message=entry.message,
                                     no_reply=entry.no_reply))
    texts = [(t.turn, t.text) for t in turns if t.role == "user"]
    for label, found in label_turns({k: v for k, v in suite.labels.items() if k not in labels}, texts).items():
        labels[label] = found
        next(t for t in turns if t.role == "user" and t.turn == found).label = label
    asserts = _render_asserts(test.asserts, variables, None) if inline else list(test.asserts)
    known = {**{k: 0 for k in suite.labels}, **labels}  # a label by pattern may match nothing: skipped then
    for t in turns:
        _check_rendered(t.asserts, known, turn)
    if inline:
        _check_rendered(asserts, known, turn)
    return Instance(suite, test, provider, tid, tid, {}, 1, variables, turns, asserts, labels,
                    _world(suite, test, variables))


def render_text_at(text: str, variables: Mapping[str, object], path: PathKey) -> str:
    try:
        return render_text(text, variables)
    except TemplateProblem as exc:
        raise _RenderProblem(path, _with_hint(str(exc), variables)) from None


def _check_rendered(specs: list[AssertionSpec], labels: dict[str, int], length: int) -> None:
    """Templated patterns and turn references, checked once their values are known."""
    for spec in specs:
        resolved = resolve_type(spec.type)
        if resolved is None:
            continue
        for pattern, where in written_patterns(resolved[0], spec.value, spec.value_where):
            if msg := regex_problem(pattern):
                raise _RenderProblem(where, msg)
        if length == 0:
            continue  # a simulated conversation: its length is not known in advance
        for ref, where in turn_refs(spec):
            if isinstance(ref, str) and ref.isdigit():
                ref = int(ref)  # a rendered template gives text
            if not isinstance(ref, bool) and (message := ref_problem(ref, labels, length)):
                raise _RenderProblem(where, message)
