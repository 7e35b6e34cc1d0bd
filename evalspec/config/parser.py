"""Schema-checked suite data -> dataclasses, with the checks a JSON Schema cannot make
(labels, turn references, provider kinds, duplicate ids, regexes)."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import jmespath
import jsonschema

from evalspec.config.asserts import parse_assertion
from evalspec.config.dataset import SUFFIXES, dataset_file, digest
from evalspec.config.interpolate import interpolate_env, is_template
from evalspec.config.meaning import stop_when_problem
from evalspec.config.messages import schema_problems
from evalspec.config.model import (
    JURY_RULES,
    PAIRWISE,
    SELECT_BEST,
    AssertionSpec,
    AttackSpec,
    JurySpec,
    MilestoneStep,
    ProviderSpec,
    RepeatSpec,
    SimulateSpec,
    StopWhen,
    Suite,
    TestSpec,
    TranscriptsSpec,
    TurnSpec,
    milestone_goals,
)
from evalspec.config.nodes import (
    AttackNode,
    GateNode,
    OptionsNode,
    ReportNode,
    SimulateNode,
    SuiteNode,
    TestNode,
)
from evalspec.config.paths import LineMap, PathKey
from evalspec.config.personas import PRESET_NAMES, PresetName, persona_text, suite_language
from evalspec.config.providers import mapping_problems, model_ref, provider_spec
from evalspec.config.recorded import BadToolCalls, tool_calls_of
from evalspec.config.schema import fragment_schema
from evalspec.config.turnrefs import ref_problem, turn_refs
from evalspec.config.world import parse_tools, parse_world, test_world_problems, tools_problems
from evalspec.config.yamlfile import load_yaml
from evalspec.core.errors import ConfigError, Problem
from evalspec.core.redact import config_secrets
from evalspec.core.suggest import did_you_mean, slugify
from evalspec.extend.kinds import provider_kinds
from evalspec.extend.patterns import regex_problem
from evalspec.extend.provider import normalize_finish_reason
from evalspec.extend.registry import resolve_type
from evalspec.extend.replies import holds_reply

TurnKind = Literal["user", "filler", "assistant", "tool"]
N = TypeVar("N")


def _simulator_name(item: object, index: int) -> str:
    """A simulator of `simulators:` as verdicts and reports name it: its `id`, else its model."""
    if isinstance(item, dict):
        return str(item.get("id") or item.get("model") or f"simulator-{index + 1}")
    return str(item)


def _persona(raw: object) -> tuple[str | None, str | None]:
    """(persona text, preset) of `persona:` written as text or as `{preset, text}` (None: neither; the schema
    names the problem). The preset's own text is added once the suite's language is known."""
    if isinstance(raw, str):
        return raw, None
    if isinstance(raw, dict) and raw.get("preset") in PRESET_NAMES and isinstance(raw.get("text", ""), str):
        return str(raw.get("text", "")), str(raw["preset"])
    return ("", None) if isinstance(raw, dict) else (None, None)


def _dict(value: object) -> dict[str, object]:
    return dict(value) if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _node(value: N | None, empty: N) -> N:
    """A mapping of the suite as its node type (`config.nodes`), or `empty` where the YAML holds something
    else: the schema reports that, and a suite with problems is never played."""
    return value if isinstance(value, dict) else empty


def _items(value: list[N] | None) -> list[N]:
    return value if isinstance(value, list) else []


_FRAGMENT_VALIDATORS: dict[tuple[str, ...], jsonschema.Draft202012Validator] = {}


def _fragment_validator() -> jsonschema.Draft202012Validator:
    """The schema of an `include:` fragment, rebuilt when a plugin registers a provider kind."""
    key = tuple(f"{name}#{id(kind)}" for name, kind in provider_kinds().items())
    if key not in _FRAGMENT_VALIDATORS:
        _FRAGMENT_VALIDATORS[key] = jsonschema.Draft202012Validator(fragment_schema())
    return _FRAGMENT_VALIDATORS[key]



class SuiteParser:
    """Turns the schema-checked data into dataclasses, checking what a schema cannot."""

    def __init__(self, suite: Suite, data: SuiteNode, lines: LineMap, problems: list[Problem],
                 cli_vars: Mapping[str, object], environ: Mapping[str, str] | None = None) -> None:
        self.suite, self.data, self.lines, self.problems = suite, data, lines, problems
        self.cli_vars = cli_vars
        self.environ = environ if environ is not None else os.environ  # for `${ENV}` in included fragments
        self.fragment_schema: list[Problem] = []  # the schema's words on `include:` fragments (docs/en/state.md)
        # each file read beside the suite (an `include:` fragment, a `dataset:`): its resolved path -> sha256
        self.fragment_digests: dict[str, str] = {}

    def bad(self, path: PathKey, message: str) -> None:
        self.problems.append(self.lines.problem(path, message))

    def parse(self) -> None:
        s, d = self.suite, self.data
        s.description = str(d.get("description") or "")
        s.tags = [str(t) for t in _list(d.get("tags")) if isinstance(t, str)]
        s.vars = {**_dict(d.get("vars")), **self.cli_vars}
        s.options = dict(_node(d.get("options"), OptionsNode()))
        gate = _node(d.get("gate"), GateNode())
        s.min_pass_rate = float(gate.get("min_pass_rate", 1.0)) if isinstance(gate.get("min_pass_rate", 1.0), (int, float)) else 1.0
        s.max_errors = int(gate.get("max_errors", 0)) if isinstance(gate.get("max_errors", 0), int) else 0
        s.gate_mode = str(gate.get("mode") or "pass_rate")
        self._statistics_gate(gate)
        self._recorded_sources()
        self._coverage()
        lang = _node(d.get("report"), ReportNode()).get("lang")
        s.report_lang = lang if lang in ("zh", "en") else None
        self._providers()
        s.tools = parse_tools(d.get("tools"), ("tools",), self.bad, s.path.parent)
        tools_problems(s, self.bad)
        s.world = parse_world(d.get("world"), ("world",), self.bad, s.path.parent)
        for role in ("judge", "simulator", "embedder"):
            if role in d and not (role == "judge" and isinstance(d[role], list)):
                setattr(s, role, self._model_ref(d[role], (role,), role))
        s.jury = self._jury(d.get("judge"), d.get("jury"), ("jury",))
        s.simulators = self._simulators(d.get("simulators"), "simulator" in d)
        if s.simulators:
            s.simulator = s.simulators[0]
        if s.jury is not None:
            s.judge = s.jury.members[0]
        defaults = _node(d.get("defaults"), TestNode())
        tests = _items(d.get("tests"))
        if "tests" not in d and "transcripts" not in d:
            self.bad((), "missing 'tests': the conversations to play (or 'transcripts': recorded ones to grade)")
        if "tests" in d and not tests and "transcripts" not in d:
            self.bad(("tests",), "a suite needs at least one test")
        if s.transcripts is not None:
            self._transcripts_defaults(defaults)
        seen: dict[str, PathKey] = {}
        for i, raw in enumerate(tests):
            if not isinstance(raw, dict):
                continue
            test = self._test(raw, defaults, i)
            if test is None:
                continue
            if test.id in seen:
                hint = "" if "id" in raw else "; give one an 'id'"
                self.bad(("tests", i, "id" if "id" in raw else "name"),
                         f"duplicate test id '{test.id}' (first at line {self.lines.line(seen[test.id])}){hint}")
            else:
                seen[test.id] = ("tests", i)
            s.tests.append(test)
        self._persona_presets()
        self._default_normalize()
        for secret_source in s.providers:
            config_secrets(secret_source.config, s.secrets)
        named = {(p.file, p.line, p.path) for p in self.problems}
        self.problems.extend(p for p in self.fragment_schema if (p.file, p.line, p.path) not in named)
        if self.fragment_digests:  # a changed fragment or dataset is a changed suite (resume, grade): its sha256 says so
            parts = [s.sha256, *(f"{k}\0{v}" for k, v in sorted(self.fragment_digests.items()))]
            s.sha256 = hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def _default_normalize(self) -> None:
        """`options.normalize` is the `normalize:` of every text check that gives none
        (docs/en/suite-format.md#normalize)."""
        default = self.suite.options.get("normalize")
        if default is None:
            return
        source = self.suite.transcripts
        written = [*(a for t in self.suite.tests for a in t.asserts),
                   *(a for t in self.suite.tests for turn in t.conversation for a in turn.asserts)]
        for spec in [*(source.asserts if source else []), *written]:
            resolved = resolve_type(spec.type)
            if resolved and "normalize" in resolved[0].options and "normalize" not in spec.options:
                spec.options["normalize"] = default
                spec.parsed = None  # made again with it

    def _statistics_gate(self, gate: GateNode) -> None:
        """`gate: {regressions: paired, alpha, min_pass_hat_k: {k, min}, use_corrected}` (docs/en/statistics.md,
        docs/en/reports-and-gate.md#corrected-pass-rate); the schema checked the forms. `regressions: paired`
        gates on regressions when a baseline is given."""
        s = self.suite
        s.use_corrected = gate.get("use_corrected") is True
        if gate.get("regressions") in ("each", "paired"):
            s.regressions = str(gate["regressions"])
            if s.regressions == "paired" and "mode" not in gate:
                s.gate_mode = "regressions"
        if isinstance(alpha := gate.get("alpha"), (int, float)) and not isinstance(alpha, bool):
            s.alpha = float(alpha)
        hat = gate.get("min_pass_hat_k")
        if isinstance(hat, dict) and isinstance(hat.get("k"), int) and isinstance(hat.get("min"), (int, float)):
            s.min_pass_hat_k = {"k": int(hat["k"]), "min": float(hat["min"])}

    # -- providers ---------------------------------------------------------------------------
    def _providers(self) -> None:
        d = self.data
        if "providers" in d and "targets" in d:
            self.bad(("targets",), "give 'providers' or 'targets', not both")
        key = "providers" if "providers" in d else "targets"
        items = d.get(key)
        if items is None:
            if not self._all_recorded():
                self.bad((), "missing 'providers': the systems under test")
            return
        if not isinstance(items, list):
            return
        seen: set[str] = set()
        for i, raw in enumerate(items):
            spec = self._provider(raw, (key, i))
            if spec is None:
                continue
            if spec.id in seen:
                self.bad((key, i, "id"), f"duplicate provider id '{spec.id}'")
            seen.add(spec.id)
            self.suite.providers.append(spec)

    def _all_recorded(self) -> bool:
        """Every conversation of the suite was recorded (`transcripts:`, `transcript:` tests): no system
        under test is called, so none is needed."""
        tests = [t for t in _list(self.data.get("tests")) if isinstance(t, dict)]
        return ("transcripts" in self.data or bool(tests)) and all("transcript" in t for t in tests)

    # -- recorded conversations (docs/en/recorded-conversations.md) ---------------------------------------------------
    def _recorded_sources(self) -> None:
        d = self.data
        labels = d.get("labels")
        if isinstance(labels, dict):
            from evalspec.extend.patterns import regex_problem

            for name, pattern in labels.items():
                if isinstance(pattern, str) and (message := regex_problem(pattern)):
                    self.bad(("labels", name), message)
                elif isinstance(pattern, str) and isinstance(name, str):
                    self.suite.labels[name] = pattern
        raw = d.get("transcripts")
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            return
        sample = raw.get("sample")
        seed = raw.get("seed", self.suite.options.get("seed", 0) if isinstance(d.get("options"), dict) else 0)
        self.suite.transcripts = TranscriptsSpec(
            path=raw["path"], sample=sample if isinstance(sample, int) and not isinstance(sample, bool) else None,
            seed=seed if isinstance(seed, int) else 0, where=_dict(raw.get("where")))

    # -- the coverage matrix (docs/en/coverage.md) --------------------------------------------------------
    def _coverage(self) -> None:
        raw = self.data.get("coverage")
        for dim, values in (raw.items() if isinstance(raw, dict) else ()):
            if isinstance(values, list):
                self.suite.coverage[str(dim)] = [str(v) for v in values if isinstance(v, (str, int, float))]

    def _covers(self, test: TestSpec, raw: Any, path: PathKey) -> None:
        """`covers: {dimension: value or [values]}`: each a dimension and value `coverage:` declares."""
        if not isinstance(raw, dict):
            return
        declared = self.suite.coverage
        for dim, given in raw.items():
            dim = str(dim)
            if dim not in declared:
                self.bad((*path, dim), f"'covers' names dimension '{dim}', which 'coverage:' does not declare"
                         + (did_you_mean(dim, declared) if declared else "; declare it in the suite's 'coverage:'"))
                continue
            values = given if isinstance(given, list) else [given]
            for k, value in enumerate(values):
                where = (*path, dim, k) if isinstance(given, list) else (*path, dim)
                if str(value) not in declared[dim]:
                    self.bad(where, f"'covers' gives {dim} value '{value}', which 'coverage:' does not declare "
                                    f"(its values: {', '.join(declared[dim])}){did_you_mean(str(value), declared[dim])}")
                    continue
                test.covers.setdefault(dim, []).append(str(value))

    def _transcripts_defaults(self, defaults: TestNode) -> None:
        """`defaults` grade every conversation of `transcripts:`: parsed once, for all of them."""
        source = self.suite.transcripts
        assert source is not None
        items = defaults.get("assert")
        for j, item in enumerate(items if isinstance(items, list) else []):
            spec = parse_assertion(item, ("defaults", "assert", j), self.lines, self.problems, None)
            if spec:
                source.asserts.append(spec)
        threshold = defaults.get("threshold")
        source.threshold = float(threshold) if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) else None
        source.tags = [str(t) for t in _list(defaults.get("tags")) if isinstance(t, str)]
        labels = set(self.suite.labels)
        for spec in source.asserts:
            for ref, where in turn_refs(spec):
                if isinstance(ref, str) and not is_template(ref) and ref not in labels and not ref.isdigit():
                    self.bad(where, f"label '{ref}' is not in 'labels:'{did_you_mean(ref, sorted(labels))}; "
                                    "recorded conversations are labelled by pattern there")
                elif isinstance(ref, int) and (message := ref_problem(ref, labels, None)):
                    self.bad(where, message)

    def _entry_kind(self, raw: Any, path: PathKey, noun: str, kinds: tuple[str, ...], forms: str) -> str | None:
        """The one key of `kinds` that entry `raw` holds, or None with the problem reported."""
        if not isinstance(raw, dict):
            self.bad(path, f"{noun} is a mapping: {forms}")
            return None
        found = [k for k in kinds if k in raw]
        if len(found) != 1:
            self.bad(path, f"{noun} needs exactly one of {', '.join(repr(k) for k in kinds)}"
                     + (f" (found {', '.join(found)})" if found else ""))
            return None
        return found[0]

    def _transcript(self, test: TestSpec, entries: list[Any], path: PathKey) -> None:
        """An inline recorded conversation: user / assistant / tool entries, `label:` and `assert:` on
        user entries (the checks grade the assistant message that answers it)."""
        test.recorded = "inline"
        turn = 0
        labels: dict[str, PathKey] = {}
        called: dict[str, str] = {}  # call id -> tool name
        for j, raw in enumerate(entries):
            tpath = (*path, j)
            kind = self._entry_kind(raw, tpath, "a transcript entry", ("user", "assistant", "tool"),
                                    "'- user: ...', '- assistant: ...' or '- tool: ...'")
            if kind is None:
                continue
            for extra in ("label", "assert", "no_reply"):
                if extra in raw and kind != "user":
                    self.bad((*tpath, extra), f"'{extra}' goes with a 'user' entry, not '{kind}'")
            text = raw[kind]
            spec = TurnSpec(kind=cast(TurnKind, kind), text="" if text is None else str(text), where=tpath,
                            no_reply_ok=kind == "user" and raw.get("no_reply") == "ok")
            extras = {k: raw[k] for k in ("tool_calls", "tool_call_id", "name", "state", "parts") if k in raw}
            if extras.get("tool_calls") is not None:  # recorded calls in either shape, read by their one reader
                try:
                    extras["tool_calls"] = tool_calls_of(extras["tool_calls"], j + 1)
                    called.update((c["id"], c["name"]) for c in extras["tool_calls"])
                except BadToolCalls as exc:
                    self.bad((*tpath, "tool_calls"), str(exc))
            if kind == "tool" and "name" not in extras and str(raw.get("tool_call_id")) in called:
                extras["name"] = called[str(raw["tool_call_id"])]  # the result names its tool, as played ones do
            if kind == "assistant" and not holds_reply(None if text is None else "", raw.get("tool_calls"),
                                                       raw.get("parts")):
                spec.no_reply = "the assistant entry is empty (null) and has no tool_calls or parts"
            if "finish_reason" in raw and kind != "assistant":
                self.bad((*tpath, "finish_reason"), f"'finish_reason' goes with an 'assistant' entry, not '{kind}'")
            elif (finish := normalize_finish_reason(raw.get("finish_reason"))) is not None:  # why the model stopped
                extras["finish_reason"] = finish
            spec.message = extras or None
            if kind == "user":
                turn += 1
                if not spec.text.strip():
                    self.bad((*tpath, "user"), "empty user message")
                label = raw.get("label")
                if isinstance(label, str):
                    if label in labels:
                        self.bad((*tpath, "label"), f"duplicate label '{label}'")
                    labels[label] = tpath
                    spec.label = label
                for k, item in enumerate(raw.get("assert") or [] if isinstance(raw.get("assert"), list) else []):
                    a = parse_assertion(item, (*tpath, "assert", k), self.lines, self.problems, turn)
                    if a:
                        spec.asserts.append(a)
            test.conversation.append(spec)
        if not turn:
            self.bad(path, "a transcript needs at least one 'user' entry")

    def _provider(self, raw: Any, path: PathKey, default_id: str | None = None) -> ProviderSpec | None:
        if not isinstance(raw, dict):
            return None
        pid = raw.get("id", default_id)
        kind, found = mapping_problems(raw, pid)
        if kind is None:
            for sub, message in found:
                self.bad((*path, *sub), message)
            return None
        if not isinstance(pid, str) or not pid:
            return None
        for sub, message in found:
            self.bad((*path, *sub), message)
        return provider_spec(raw, kind, pid, path)

    def _model_ref(self, raw: Any, path: PathKey, role: str) -> ProviderSpec | None:
        if isinstance(raw, str):
            return model_ref(raw, role, path)
        spec = self._provider(raw, path, default_id=role)
        if spec is not None:
            config_secrets(spec.config, self.suite.secrets)
            for key in ("tools", "tool_results", "max_tool_rounds", "answer_tool_calls"):
                if key in spec.config:  # evalspec's own calls answer in text or JSON: a tool call is no verdict
                    self.bad((*path, key), f"a {role} takes no '{key}' (tools are for the systems under test)")
        return spec

    def _jury(self, raw: Any, rule: Any, path: PathKey) -> JurySpec | None:
        """`judge:` as a list and its `jury: {rule, quorum}` (docs/en/judges.md#juries)."""
        if not isinstance(raw, list):
            if rule is not None:
                self.bad(path, "'jury' needs 'judge' to be a list of models (the jury's members)")
            return None
        members: list[ProviderSpec] = []
        for i, item in enumerate(raw):
            spec = self._model_ref(item, ("judge", i), "judge")
            if spec is None:
                continue
            spec.id = str(item.get("id") or item.get("model") or f"judge-{i + 1}") if isinstance(item, dict) \
                else str(item)
            if spec.id in {m.id for m in members}:
                self.bad(("judge", i), f"judge '{spec.id}' is twice in the jury: give one an 'id'")
            members.append(spec)
        if len(raw) < 2:
            self.bad(("judge",), "a jury needs at least two judges (or write `judge:` as one model)")
        settings = _dict(rule)
        name = settings.get("rule", "majority")
        if name not in JURY_RULES:
            self.bad((*path, "rule"), f"jury rule '{name}' is not one of: {', '.join(JURY_RULES)}")
            name = "majority"
        quorum = settings.get("quorum", len(members) // 2 + 1)
        if not isinstance(quorum, int) or isinstance(quorum, bool) or not 1 <= quorum <= max(1, len(members)):
            self.bad((*path, "quorum"), f"jury quorum must be a whole number from 1 to {len(members)} (the members)")
            quorum = len(members) // 2 + 1
        return JurySpec(members, str(name), quorum) if members else None

    def _simulators(self, raw: Any, single: bool) -> list[ProviderSpec]:
        """`simulators:` (docs/en/agents.md#comparing-two-simulators): each named by its `id`, else its model."""
        if raw is None:
            return []
        if single:
            self.bad(("simulators",), "give 'simulator:' or 'simulators:', not both ('simulators:' replaces it)")
        found: list[ProviderSpec] = []
        for i, item in enumerate(_list(raw)):
            spec = self._model_ref(item, ("simulators", i), "simulator")
            if spec is None:
                continue
            spec.id = _simulator_name(item, i)
            if spec.id in {m.id for m in found}:
                self.bad(("simulators", i), f"simulator '{spec.id}' is listed twice: give one an 'id'")
                continue
            found.append(spec)
        return found

    def _persona_presets(self) -> None:
        """`persona: {preset, text}` read into one persona, in the suite's language
        (docs/en/agents.md#persona-presets)."""
        sims = [t.simulate for t in self.suite.tests if t.simulate is not None]
        if not any(sim.preset for sim in sims):
            return
        written = [str(e.text) for t in self.suite.tests for e in t.conversation if e.kind == "user"]
        written += [x for sim in sims for x in (sim.persona, sim.goal, sim.instructions or "") if x]
        lang = suite_language(self.suite.report_lang, written)
        for sim in sims:
            if sim.preset:
                sim.persona = persona_text(cast(PresetName, sim.preset), sim.persona, lang)

    # -- tests -------------------------------------------------------------------------------
    def _field(self, raw: Mapping[str, object], defaults: Mapping[str, object], key: str,
               i: int) -> tuple[Any, PathKey]:
        if key in raw:
            return raw[key], ("tests", i, key)
        return defaults.get(key), ("defaults", key)

    def _test(self, raw: TestNode, defaults: TestNode, i: int) -> TestSpec | None:
        path: PathKey = ("tests", i)
        name = raw.get("name")
        tid = raw.get("id") or (slugify(name) if isinstance(name, str) and name.strip() else f"test-{i + 1}")
        test = TestSpec(id=str(tid), name=str(name or tid), index=i, where=path)
        test.description = str(raw.get("description") or "")

        def f(key: str) -> tuple[Any, PathKey]:
            return self._field(raw, defaults, key, i)

        tags, _ = f("tags")
        test.tags = [str(t) for t in (tags or []) if isinstance(t, str)]
        test.draft = bool(f("draft")[0])
        xfail = f("xfail")[0]
        test.xfail = (xfail if isinstance(xfail, str) else "expected to fail") if xfail else None
        test.vars = dict(f("vars")[0] or {}) if isinstance(f("vars")[0], dict) else {}
        providers, ppath = f("providers")
        if isinstance(providers, list):
            known = [p.id for p in self.suite.providers]
            for j, pid in enumerate(providers):
                if pid not in known:
                    self.bad((*ppath, j), f"unknown provider '{pid}'{did_you_mean(str(pid), known)}")
            test.providers = [str(p) for p in providers]
        threshold = f("threshold")[0]
        test.threshold = float(threshold) if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) else None
        self._matrix_repeat_curve(test, f)
        self._covers(test, *f("covers"))
        self._state_and_stubs(test, f)
        world, world_where = f("world")
        test.world = parse_world(world, world_where, self.bad, self.suite.path.parent)
        conversation, cpath = f("conversation")
        simulate, spath = f("simulate")
        attack, apath = f("attack")
        transcript, tpath = raw.get("transcript"), (*path, "transcript")
        if transcript is not None:  # a recorded test: the defaults' way to play a test do not apply
            conversation = simulate = attack = None
        given = [k for k, v in (("conversation", conversation), ("simulate", simulate), ("attack", attack),
                                ("transcript", transcript)) if v is not None]
        if len(given) > 1:
            self.bad(path, f"a test has one of 'conversation', 'simulate', 'attack', 'transcript', "
                           f"not {' and '.join(given)}")
        elif not given:
            self.bad(path, "a test needs 'conversation' (scripted turns), 'simulate' (a simulated user), "
                     "'attack' (an adversarial user) or 'transcript' (a recorded conversation)")
        if isinstance(transcript, list):
            self._transcript(test, transcript, tpath)
        elif isinstance(conversation, list):
            if not conversation:
                self.bad(cpath, "the conversation is empty")
            self._conversation(test, conversation, cpath)
        elif isinstance(simulate, dict):
            test.simulate = self._simulate(cast(SimulateNode, simulate), spath)
        elif isinstance(attack, dict):
            test.attack = self._attack(cast(AttackNode, attack), apath)
            if test.attack is not None:
                if "repeat" in raw:
                    self.bad((*path, "repeat"), "an attack test repeats through 'attack.attempts', not 'repeat'")
                test.repeat = RepeatSpec(test.attack.attempts, "all")
        for j, item in enumerate(defaults.get("assert") or [] if isinstance(defaults.get("assert"), list) else []):
            spec = parse_assertion(item, ("defaults", "assert", j), self.lines, self.problems, None)
            if spec:
                test.asserts.append(spec)
                if test.attack is not None and "scope" not in item and spec.scope == "last_response":
                    spec.scope = "each_turn"
        own = raw.get("assert")
        for j, item in enumerate(own if isinstance(own, list) else []):
            spec = parse_assertion(item, (*path, "assert", j), self.lines, self.problems, None)
            if spec:
                test.asserts.append(spec)
                if test.attack is not None and "scope" not in item and spec.scope == "last_response":
                    spec.scope = "each_turn"  # the red lines under attack hold on every reply
        if test.simulate is not None and test.simulate.milestones:
            implied_milestones(test, spath)
        for spec in journey_checks_without_journey(test):  # docs/en/agents.md#milestones
            self.bad(spec.where, f"'{spec.type}' checks a simulated journey's {spec.type.split(':')[1]}: test "
                                 f"'{test.id}' has no `simulate.{spec.type.split(':')[1]}`, so it would pass on nothing")
        if test.simulate is not None and test.simulate.checkpoints and \
                not any(a.type == "trajectory:checkpoints" for a in test.asserts):  # docs/en/agents.md#checkpoints
            test.asserts.append(AssertionSpec(type="trajectory:checkpoints", negate=False, value=True,
                                              where=(*spath, "checkpoints"), scope="conversation"))
        self._dataset(test, raw.get("dataset"), (*path, "dataset"))
        self._check_references(test)
        self._check_comparisons(test)
        self._check_pairwise(test)
        test_world_problems(self.suite, test, world_where, self.bad)
        return test

    def _dataset(self, test: TestSpec, dataset: Any, path: PathKey) -> None:
        """`dataset: FILE.jsonl|FILE.csv`: one instance per row (docs/en/suite-format.md#dataset). Its rows
        are its instances, so it has no `matrix` (a column varies what a matrix would) and plays its turns."""
        if not isinstance(dataset, str) or not dataset.strip():
            return
        if not dataset.lower().endswith(SUFFIXES):
            self.bad(path, f"dataset {dataset!r}: give a .jsonl file (one JSON object a line) or a .csv file "
                           "(a header row, then one row an instance)")
            return
        test.dataset = dataset
        file = dataset_file(self.suite.path, dataset)
        if (found := digest(file)) is not None:  # edited rows are an edited suite (resume, grade)
            self.fragment_digests[str(file.resolve())] = found
        if test.matrix:
            self.bad((*test.where, "matrix"), "a dataset test has one instance per row: it takes no 'matrix' (put "
                                              "the values to vary in a column of the dataset)")
        if test.recorded:
            self.bad(path, "a 'transcript' test is one recorded conversation: it takes no 'dataset' (grade many "
                           "recorded conversations with the suite's 'transcripts:')")
        for spec in test.asserts:
            if spec.type == SELECT_BEST:
                self.bad(spec.where, "'select-best' compares a test's candidates, and a dataset test's rows are "
                                     "different conversations: not in a dataset test")

    def _check_pairwise(self, test: TestSpec) -> None:
        """`pairwise` compares with exactly one other side: `against: baseline | PROVIDER_ID` or a `reference`
        (docs/en/judges.md#comparing-two-bot-versions-pairwise)."""
        providers = [p.id for p in self.suite.providers]
        for spec in [*test.asserts, *(s for turn in test.conversation for s in turn.asserts)]:
            if spec.type != PAIRWISE:
                continue
            against, reference = getattr(spec.params, "against", None), getattr(spec.params, "reference", None)
            if (against is None) == (reference is None):
                self.bad(spec.where, "'pairwise' compares with one other side: give either 'against' (baseline or a "
                                     "provider id) or 'reference' (a reply to compare with), not both, not neither")
            elif spec.negate:
                self.bad(spec.where, "'pairwise' cannot be negated: use pass_if: better or not_worse")
            elif spec.scope not in ("last_response", "conversation"):
                self.bad((*spec.where, "scope"), f"'pairwise' compares final replies (scope last_response) or "
                                                 f"conversations (scope conversation), not {spec.scope!r}")
            elif against is not None and spec.examples is not None:
                self.bad((*spec.where, "examples"), "'pairwise' examples are compared with the rule's 'reference': "
                                                    "with 'against' the other side exists only during a run")
            elif against is not None and spec not in test.asserts:
                self.bad(spec.where, "'pairwise' with 'against' compares whole records: put it under the test's "
                                     "'assert:', not under a turn")
            elif against is not None and (test.recorded or test.attack is not None or test.dataset):
                self.bad(spec.where, "'pairwise' with 'against' compares played conversations: not in a recorded "
                                     "transcript, an attack or a dataset test")
            elif against not in (None, "baseline", *providers):
                self.bad((*spec.where, "against"), f"'against: {against}' is neither 'baseline' nor a provider of this "
                                                   f"suite ({', '.join(providers) or 'none'})")
            elif against not in (None, "baseline") and test.providers is not None and against not in test.providers:
                self.bad((*spec.where, "against"), f"'against: {against}': test '{test.id}' is not played against "
                                                   f"that provider (its providers: {', '.join(test.providers)})")
            elif against not in (None, "baseline") and set(test.providers or providers) == {against}:
                self.bad((*spec.where, "against"), f"'against: {against}': test '{test.id}' is played against "
                                                   f"'{against}' alone, so there is no other reply to compare with "
                                                   "(add the provider to compare, or use against: baseline)")

    def _check_comparisons(self, test: TestSpec) -> None:
        """`select-best` compares the test's candidates (providers × matrix instances): it needs two or more,
        reads their final replies or conversations, and stands at test level."""
        for turn in test.conversation:
            for spec in turn.asserts:
                if spec.type == SELECT_BEST:
                    self.bad(spec.where, "'select-best' compares the test's replies across its providers and "
                                         "matrix instances: put it under the test's 'assert:', not under a turn")
        for spec in test.asserts:
            if spec.type != SELECT_BEST:
                continue
            providers = len(test.providers if test.providers is not None else self.suite.providers)
            candidates = providers * math.prod(len(v) for v in test.matrix.values())
            if spec.negate:
                self.bad(spec.where, "'select-best' cannot be negated: it passes one candidate and fails the others")
            elif spec.scope not in ("last_response", "conversation"):
                self.bad((*spec.where, "scope"), f"'select-best' compares final replies (scope last_response) or "
                                                 f"conversations (scope conversation), not {spec.scope!r}")
            elif spec.examples is not None:
                self.bad((*spec.where, "examples"), "'select-best' has no examples: it compares the test's "
                                                    "candidates, not one reply against its rule")
            elif test.recorded or test.attack is not None:
                self.bad(spec.where, "'select-best' compares the replies of played conversations: not in a "
                                     "recorded transcript or an attack")
            elif candidates < 2:
                self.bad(spec.where, f"'select-best' needs two or more candidates to compare, and test '{test.id}' "
                                     f"has {'one' if candidates == 1 else 'none'}: give it several providers or a "
                                     "'matrix' (its instances are compared too)")

    def _state_and_stubs(self, test: TestSpec, f: Callable[[str], tuple[Any, PathKey]]) -> None:
        """`state:` (seeded before turn 1) and `tool_results:` (over the provider's), docs/en/state.md; a `rasa:`
        provider takes only `slots` (sent as slot events)."""
        state, spath = f("state")
        if isinstance(state, dict):
            test.state = dict(state)
            rasa = [p.id for p in self.suite.providers
                    if p.kind == "rasa" and (test.providers is None or p.id in test.providers)]
            other = [k for k in state if k != "slots"]
            if rasa and other:
                self.bad((*spath, other[0]), f"'{other[0]}' cannot be seeded into rasa provider '{rasa[0]}': "
                                             "a rasa provider takes `state: {slots: {...}}` (sent as slot events)")
            elif rasa and not isinstance(state.get("slots"), dict):
                self.bad((*spath, "slots"), "`state.slots` is a mapping of slot name to value")
        results, rpath = f("tool_results")
        if isinstance(results, dict):
            test.tool_results = dict(results)
            runs_on = [p for p in self.suite.providers if test.providers is None or p.id in test.providers]
            if runs_on and not any(p.kind == "model" and p.config.get("answer_tool_calls") is not False
                                   for p in runs_on):
                self.bad(rpath, "'tool_results' is for model providers that answer tool calls: this test's "
                                "providers report their tool calls (they are recorded, not answered)")
            for p in runs_on:
                tools = p.config.get("tools")
                if p.kind != "model" or not isinstance(tools, list):
                    continue
                names = [str(t.get("function", t).get("name")) for t in tools if isinstance(t, dict)]
                for name in results:
                    if name not in names:
                        self.bad((*rpath, name), f"tool_results for '{name}', which is not in provider "
                                                 f"'{p.id}' `tools`" + (did_you_mean(str(name), names)
                                                                       or f" (tools: {', '.join(names)})"))
                break

    def _matrix_repeat_curve(self, test: TestSpec, f: Callable[[str], tuple[Any, PathKey]]) -> None:
        matrix, mpath = f("matrix")
        if isinstance(matrix, dict):
            test.matrix = {str(k): list(v) for k, v in matrix.items() if isinstance(v, list)}
        reduce, redpath = f("reduce")
        if reduce in ("min", "mean"):
            test.reduce = str(reduce)
            if not test.matrix:
                self.bad(redpath, f"'reduce: {reduce}' combines the instances of a matrix test: this test has no "
                                  "'matrix'")
        until, _ = f("until_turn")
        if isinstance(until, (int, str)) and not isinstance(until, bool):
            test.until_turn = until
        repeat, rpath = f("repeat")
        if isinstance(repeat, int) and not isinstance(repeat, bool):
            test.repeat = RepeatSpec(max(1, repeat))
        elif isinstance(repeat, dict) and isinstance(repeat.get("n"), int):
            test.repeat = RepeatSpec(max(1, repeat["n"]), repeat.get("pass", "all"))
        curve, cvpath = f("curve")
        if isinstance(curve, dict):
            test.chart = str(curve["chart"]) if curve.get("chart") is not None else None
            test.curve_summary = curve.get("summary")
            curve, cvpath = curve.get("x"), (*cvpath, "x")
        if isinstance(curve, str):
            if curve not in test.matrix:
                self.bad(cvpath, f"curve variable '{curve}' is not a matrix key"
                         + did_you_mean(curve, list(test.matrix)) if test.matrix else
                         f"curve variable '{curve}' needs a 'matrix' with that key")
            test.curve = curve
            if test.reduce:
                self.bad(cvpath, f"a curve test reports each point: it cannot also 'reduce: {test.reduce}' its instances")
        sla, slpath = f("sla")
        if isinstance(sla, list):
            if not test.curve:
                self.bad(slpath, "'sla' needs a 'curve'")
            test.sla = [dict(x) for x in sla if isinstance(x, dict)]

    def _conversation(self, test: TestSpec, entries: list[Any], path: PathKey) -> None:
        # `turn` is the user-turn number when it is known here; after a templated filler count it is
        # only known at plan time, which sets the real number on turn-attached assertions
        turn: int | None = 0
        user_entries = 0
        labels: dict[str, PathKey] = {}
        captures: dict[str, PathKey] = {}
        for raw, tpath in self._spliced(test, entries, path, self.suite.path, (self.suite.path.resolve(),)):
            kind = self._entry_kind(raw, tpath, "a turn", ("user", "filler", "assistant", "click"),
                                    "'- user: ...', '- click: ...', '- filler: N', '- assistant: ...' or "
                                    "'- include: FILE.yaml'")
            if kind is None:
                continue
            spec = TurnSpec(kind="user" if kind == "click" else cast(TurnKind, kind), where=tpath)
            for extra in ("label", "assert", "vars", "capture", "metadata", "no_reply"):
                if extra in raw and kind not in ("user", "click"):
                    self.bad((*tpath, extra), f"'{extra}' goes with a 'user' turn, not '{kind}'")
            spec.no_reply_ok = kind in ("user", "click") and raw.get("no_reply") == "ok"
            if kind in ("user", "click"):
                if kind == "click":
                    if not user_entries:
                        self.bad((*tpath, "click"), "'click:' presses a button of the previous reply: the first "
                                                    "turn has none before it; write '- user: ...'")
                    spec.click = raw["click"]
                turn = turn + 1 if turn is not None else None
                user_entries += 1
                text = raw[kind]
                if text is None or (isinstance(text, str) and not text.strip()):
                    self.bad((*tpath, kind), "empty user message" if kind == "user" else "'click:' needs a button title")
                spec.text = "" if text is None else str(text)
                spec.vars = dict(raw.get("vars") or {}) if isinstance(raw.get("vars"), dict) else {}
                spec.metadata = dict(raw["metadata"]) if isinstance(raw.get("metadata"), dict) else None
                label = raw.get("label")
                if isinstance(label, str):
                    if label in labels:
                        self.bad((*tpath, "label"), f"duplicate label '{label}'")
                    labels[label] = tpath
                    spec.label = label
                if "capture" in raw:
                    self._captures(spec, raw["capture"], (*tpath, "capture"), captures)
            elif kind == "filler":
                value = raw["filler"]
                if isinstance(value, dict):
                    spec.count, spec.pool = value.get("count"), value.get("pool")
                else:
                    spec.count = value
                turn = turn + spec.count if isinstance(spec.count, int) and turn is not None else None
            else:
                spec.text = str(raw["assistant"] or "")
                for p in self.suite.providers:
                    if p.stateful and (test.providers is None or p.id in test.providers):
                        self.bad((*tpath, "assistant"), f"'assistant:' history cannot be sent to stateful "
                                 f"{'HTTP' if p.kind == 'http' else p.kind} provider '{p.id}'")
                        break
            test.conversation.append(spec)
            under = (turn if turn is not None else user_entries) if kind in ("user", "click") else None
            for k, item in enumerate(raw.get("assert") or [] if isinstance(raw.get("assert"), list) else []):
                a = parse_assertion(item, (*tpath, "assert", k), self.lines, self.problems, under)
                if a:
                    spec.asserts.append(a)

    def _captures(self, spec: TurnSpec, capture: Any, where: PathKey, seen: dict[str, PathKey]) -> None:
        """`capture: NAME` (the reply) or `{NAME: reply | {regex: R} | {state: PATH}}` (docs/en/recorded-conversations.md, §24)."""
        given: dict[str, tuple[tuple[str, str], PathKey]] = {}
        if isinstance(capture, str) and capture.isascii() and capture.isidentifier():
            given[capture] = (("reply", ""), where)
        elif isinstance(capture, dict) and capture:
            for name, how in capture.items():
                at = (*where, name)
                if not (name.isascii() and name.isidentifier()):
                    self.bad(at, f"capture {name!r} is not a variable name (letters, digits, _), used later "
                                 f"as {{{{ NAME }}}}")
                elif how == "reply":
                    given[name] = (("reply", ""), at)
                elif isinstance(how, dict) and len(how) == 1 and isinstance(how.get("regex"), str):
                    if message := regex_problem(how["regex"]):
                        self.bad((*at, "regex"), message)
                    given[name] = (("regex", how["regex"]), at)
                elif isinstance(how, dict) and len(how) == 1 and isinstance(how.get("state"), str):
                    try:
                        jmespath.compile(how["state"])
                    except jmespath.exceptions.JMESPathError as exc:
                        self.bad((*at, "state"), f"'{how['state']}' is not a JMESPath expression: {exc}")
                    given[name] = (("state", how["state"]), at)
                else:
                    self.bad(at, f"capture '{name}' takes 'reply', {{regex: R}} or {{state: PATH}}, got {how!r}")
        else:
            self.bad(where, f"capture {capture!r} is not a variable name: write 'capture: NAME' (letters, "
                            f"digits, _), used later as {{{{ NAME }}}}, or {{NAME: reply | {{regex: R}} | "
                            f"{{state: PATH}}}}")
        for name, (how, at) in given.items():
            if name in seen:
                self.bad(at, f"capture '{name}' is already set at line {self.lines.line(seen[name])}; "
                             f"give it another name")
                continue
            seen[name] = at
            spec.captures[name] = how
        if spec.captures:
            spec.capture = ", ".join(spec.captures)

    def _spliced(self, test: TestSpec, entries: list[Any], path: PathKey, file: Path,
                 stack: tuple[Path, ...]) -> Iterator[tuple[Any, PathKey]]:
        """The turns of a conversation with each `include: FILE.yaml` replaced by that file's turns
        (docs/en/state.md#buttons-captures-fragments): a spliced turn's path is under its include entry, and the suite's line map sends problems
        there to the fragment's file and line, naming the including test."""
        for j, raw in enumerate(entries):
            tpath = (*path, j)
            if not (isinstance(raw, dict) and "include" in raw):
                yield raw, tpath
                continue
            for extra in raw:
                if extra != "include":
                    self.bad((*tpath, extra), f"'{extra}' does not go with 'include': the fragment's turns "
                                              f"carry their own labels, checks and captures")
            ref = raw["include"]
            if not isinstance(ref, str) or not ref.strip():
                self.bad((*tpath, "include"), "'include:' names a FILE.yaml whose 'conversation:' is spliced here")
                continue
            fragment = (file.parent / ref).resolve()
            shown = os.path.normpath(str(Path(self.lines.problem(tpath, "").file).parent / ref))
            if fragment in stack:
                including = self.lines.problem(tpath, "").file
                self.bad((*tpath, "include"), f"include cycle: {including} includes {shown}, which includes "
                                              f"{including} again (directly or through other fragments)")
                continue
            loaded = self._fragment(fragment, shown, (*tpath, "include"), test)
            if loaded is None:
                continue
            turns, fragment_vars = loaded
            for name, value in fragment_vars.items():  # defaults: the test's (and the command line's) win
                if name not in test.vars and name not in self.cli_vars:
                    test.vars[name] = value
            yield from self._spliced(test, turns, (*tpath, "include"), fragment, (*stack, fragment))

    def _fragment(self, fragment: Path, shown: str, where: PathKey,
                  test: TestSpec) -> tuple[list[object], dict[str, object]] | None:
        """A fragment's turns and vars, its problems reported in its own file and lines; None when it
        cannot be read."""
        try:
            raw = fragment.read_bytes()
            text = raw.decode("utf-8")
        except FileNotFoundError:
            self.bad(where, f"include: {shown} not found")
            return None
        except (OSError, UnicodeDecodeError) as exc:
            self.bad(where, f"include: cannot read {shown}: {exc}")
            return None
        self.fragment_digests[str(fragment)] = hashlib.sha256(raw).hexdigest()
        at = self.lines.problem(where, "")
        note = f"a fragment included by test '{test.id}' at {at.file}:{at.line}"
        found: list[Problem] = []
        try:
            data, lines = load_yaml(text, shown, found)
        except ConfigError as exc:
            self.problems.extend(Problem(p.file, p.line, p.path, f"{p.message} ({note})") for p in exc.problems)
            return None
        data = interpolate_env(data, (), self.environ, lines, found, self.suite.secrets)
        self.problems.extend(Problem(p.file, p.line, p.path, f"{p.message} ({note})") for p in found)
        if not isinstance(data, dict) or not isinstance(data.get("conversation"), list):
            self.bad(where, f"include: {shown} has no 'conversation:' list of turns to splice")
            return None
        for err in _fragment_validator().iter_errors(data):  # added after parsing, where it names nothing
            self.fragment_schema.extend(lines.problem(spot, f"{message} ({note})")
                                        for spot, message in schema_problems(err))
        self.lines.fragments[where] = (lines, ("conversation",), note)
        return data["conversation"], _dict(data.get("vars"))

    def _simulate(self, raw: SimulateNode, path: PathKey) -> SimulateSpec | None:
        for k, step in enumerate(raw.get("milestones") or []):
            when = step.get("done_when") if isinstance(step, dict) else None
            where = (*path, "milestones", k, "done_when", "assistant_matches")
            if isinstance(when, dict) and isinstance(when.get("assistant_matches"), str) and \
                    (msg := stop_when_problem("assistant_matches", when["assistant_matches"], where, self.lines)):
                self.bad(where, msg)
            if isinstance(when, dict) and "state" in when:
                try:  # the state check's own parameters (docs/en/state.md)
                    AssertionSpec(type="state", negate=False, value=when["state"]).params  # noqa: B018
                except (TypeError, ValueError) as exc:
                    self.bad((*path, "milestones", k, "done_when", "state"), f"'state': {exc}")
        stop_when = _items(raw.get("stop_when"))
        conditions: list[Mapping[str, object]] = list(stop_when)
        for k, cond in enumerate(conditions):
            for key in ("assistant_matches", "user_says"):
                where = (*path, "stop_when", k, key)
                if isinstance(cond, dict) and isinstance(text := cond.get(key), str) and \
                        (msg := stop_when_problem(key, text, where, self.lines)):
                    self.bad(where, msg)
        python = raw.get("python")
        if isinstance(python, str) and ":" not in python:
            self.bad((*path, "python"), f"'{python}' is not FILE.py:function or module:function")
        if python is None and "instructions" not in raw:
            for key in ("persona", "goal"):
                if key not in raw and not (key == "goal" and raw.get("milestones")):
                    self.bad(path, f"a simulated user needs '{key}' (or 'instructions:', or 'python: FILE.py:function', "
                                   "a scripted user)")
        persona, preset = _persona(raw.get("persona", ""))
        if not isinstance(raw.get("max_turns"), int) or persona is None or \
                not all(isinstance(raw.get(k, ""), str) for k in ("goal", "instructions")):
            return None
        model = raw.get("model")
        return SimulateSpec(persona=persona, preset=preset, goal=raw.get("goal", ""), max_turns=raw["max_turns"],
                            instructions=raw.get("instructions"), max_chars=int(raw.get("max_chars", 600)),
                            min_turns=int(raw.get("min_turns", 1)),
                            # the schema's forms of a step (a goal, a fixed turn), read as one mapping each
                            milestones=cast(list[MilestoneStep], list(raw.get("milestones") or [])),
                            checkpoints=list(raw.get("checkpoints") or []),
                            python=python if isinstance(python, str) else None,
                            opening=raw.get("opening"), fixed=list(raw.get("fixed") or []),
                            stop_when=cast(list[StopWhen], stop_when),
                            model=self._model_ref(model, (*path, "model"), "simulator") if model else None)

    def _attack(self, raw: AttackNode, path: PathKey) -> AttackSpec | None:
        python = raw.get("python")
        if isinstance(python, str) and ":" not in python:
            self.bad((*path, "python"), f"'{python}' is not FILE.py:function or module:function")
        if python is None:
            for key in ("goal", "strategy"):
                if key not in raw:
                    self.bad(path, f"an attack needs '{key}' (or 'python: FILE.py:function', a scripted attacker)")
        if not isinstance(raw.get("max_turns"), int):
            return None
        model = raw.get("model")
        return AttackSpec(goal=str(raw.get("goal") or ""), strategy=str(raw.get("strategy") or "scripted"),
                          max_turns=raw["max_turns"], attempts=int(raw.get("attempts") or 1),
                          model=self._model_ref(model, (*path, "model"), "attacker") if model else None,
                          python=python if isinstance(python, str) else None)

    def _check_references(self, test: TestSpec) -> None:
        """Labels must exist and turn numbers must be inside a scripted conversation."""
        labels = {t.label for t in test.conversation if t.label}
        if test.recorded:
            labels |= set(self.suite.labels)  # by pattern: a conversation may lack one (the rule is skipped)
        length = scripted_length(test)
        # a rule under a turn is graded right after that turn: it can only look back (docs/en/reports-and-gate.md#errors-and-failures)
        entry_of_label: dict[str, tuple[int, TurnSpec]] = {}
        entry_of_rule: dict[int, int] = {}
        entry = 0
        for t in test.conversation:
            if t.kind == "user":
                entry += 1
                if t.label:
                    entry_of_label[t.label] = (entry, t)
                entry_of_rule.update({id(a): entry for a in t.asserts})
        specs: list[AssertionSpec] = list(test.asserts) + [a for t in test.conversation for a in t.asserts]
        for spec in specs:
            for ref, where in turn_refs(spec):
                if isinstance(ref, str) and is_template(ref):
                    continue  # checked once rendered
                if isinstance(ref, str) and (test.simulate is not None or test.attack is not None):
                    self.bad(where, f"label '{ref}' cannot be used with a simulated user (no labels)")
                elif message := ref_problem(ref, labels, length):
                    self.bad(where, message)
                elif isinstance(ref, str) and id(spec) in entry_of_rule and entry_of_label[ref][0] > entry_of_rule[id(spec)]:
                    line = self.lines.line(entry_of_label[ref][1].where)
                    self.bad(where, f"label '{ref}' is on a later turn (line {line}): a rule under a turn is "
                                    f"checked right after that turn, so it can only refer to labels at or before "
                                    f"it; move the rule to the test's 'assert:'")


def scripted_length(test: TestSpec) -> int | None:
    """User turns in a scripted conversation, or None when unknown (templated fillers, simulation)."""
    if test.simulate is not None or test.attack is not None or not test.conversation:
        return None
    if test.recorded:
        return sum(1 for t in test.conversation if t.kind == "user")
    total = 0
    for t in test.conversation:
        if t.kind == "user":
            total += 1
        elif t.kind == "filler":
            if not isinstance(t.count, int):
                return None
            total += t.count
    return total


def journey_checks_without_journey(test: TestSpec) -> list[AssertionSpec]:
    """`trajectory:milestones` / `trajectory:checkpoints` on a test without `simulate.milestones` /
    `simulate.checkpoints`: written on the test, an error (returned); from `defaults`, left out of the test."""
    sim = test.simulate
    has = {"trajectory:milestones": bool(sim and sim.milestones), "trajectory:checkpoints": bool(sim and sim.checkpoints)}
    idle = [a for a in test.asserts if a.type in has and not has[a.type]]
    test.asserts = [a for a in test.asserts if a not in idle or a.where[:1] != ("defaults",)]
    return [a for a in idle if a.where[:1] != ("defaults",)]


def implied_milestones(test: TestSpec, where: PathKey) -> None:
    """`simulate.milestones` implies `trajectory:milestones` (docs/en/agents.md#milestones); one written in
    `assert:` (with its severity, xfail ...) is that check, given the goals."""
    assert test.simulate is not None
    goals = milestone_goals(test.simulate.milestones)
    written = [a for a in test.asserts if a.type == "trajectory:milestones"]
    for spec in written:
        spec.value = goals
    if not written:
        test.asserts.append(AssertionSpec(type="trajectory:milestones", negate=False, value=goals,
                                          where=(*where, "milestones"), scope="conversation"))
