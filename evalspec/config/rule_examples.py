"""Rules that are tested before they test (docs/en/rule-self-tests.md): each assertion's `examples:` graded offline.

A `fail` example is a reply (or a small transcript) the rule must reject, a `pass` example one it must
accept. `validate` and `run` grade every example of every deterministic assertion before the first call,
with the grading code itself (`evaluate_off_loop`, as the runner grades); a wrong example is a config
error on its line. Model-graded assertions keep their examples for `judge-eval --examples`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, cast

from evalspec.config.families import family_warnings
from evalspec.config.model import AssertionSpec, Suite
from evalspec.config.nodes import REPORTED_KEYS as _REPORTED
from evalspec.config.paths import PathKey
from evalspec.core.errors import Problem
from evalspec.core.suggest import did_you_mean
from evalspec.core.text import mostly_chinese, normalizer_names
from evalspec.extend.check import snippet
from evalspec.extend.provider import REASON_WORDS, normalize_finish_reason
from evalspec.extend.registry import model_needed
from evalspec.extend.transcript import Message


def example_problems(examples: Any) -> list[tuple[PathKey, str]]:
    """What the schema cannot say about well-formed examples: a transcript opens with a user entry, and
    its labels are unique."""
    found: list[tuple[PathKey, str]] = []
    for kind in ("fail", "pass"):
        for i, example in enumerate(examples.get(kind) or []):
            if not isinstance(example, list):
                continue
            if "user" not in example[0]:
                found.append(((kind, i, 0), "an example transcript starts with a {user: ...} entry"))
            labels = [e["label"] for e in example if "label" in e]
            for label in {x for x in labels if labels.count(x) > 1}:
                found.append(((kind, i), f"duplicate label '{label}' in this example"))
    return found


def example_transcript(example: Any) -> tuple[list[Message], dict[str, int]]:
    """A reply (or `{reply, state, parts}`) -> one turn; a transcript -> messages numbered as the runner
    numbers them (each user entry opens a turn; in a turn, assistant entries before the last are its tool
    rounds), and its labels."""
    if isinstance(example, dict):
        example = [{"user": ""}, {"assistant": str(example.get("reply", "")),
                                  **{k: example[k] for k in _REPORTED if k in example}}]
    elif not isinstance(example, list):
        example = [{"user": ""}, {"assistant": str(example)}]
    transcript: list[dict[str, Any]] = []
    labels: dict[str, int] = {}
    turn = 0
    for entry in example:
        if "user" in entry:
            turn += 1
            if entry.get("label"):
                labels[entry["label"]] = turn
            transcript.append({"role": "user", "content": str(entry["user"]), "turn": turn,
                               **({"label": entry["label"]} if entry.get("label") else {})})
            continue
        if transcript and transcript[-1]["role"] == "assistant" and transcript[-1]["turn"] == turn:
            transcript[-1]["intermediate"] = True  # a tool round before the turn's reply
        message: dict[str, Any] = {"role": "assistant", "content": str(entry["assistant"]), "turn": turn}
        if entry.get("tool_calls"):
            message["tool_calls"] = [{"id": f"example-{turn}-{k}", "name": c["name"],
                                      "arguments": dict(c.get("arguments") or {})}
                                     for k, c in enumerate(entry["tool_calls"])]
        for key in _REPORTED:  # what the bot reported with the reply (docs/en/state.md)
            if key in entry:
                message[key] = entry[key]
        if "finish_reason" in message:
            message["finish_reason"] = normalize_finish_reason(message["finish_reason"])
        transcript.append(message)
    return cast(list[Message], transcript), labels  # an example's messages: the keys checks read


def shown(example: Any) -> str:
    """The example as a message quotes it."""
    if isinstance(example, list):
        text = " / ".join(str(e.get("user", e.get("assistant", ""))) for e in example)
        return repr(snippet(text, 100)) + " (transcript)"
    if isinstance(example, dict):
        said = [repr(snippet(str(example["reply"]), 100))] if "reply" in example else []
        if "state" in example:
            said.append("state " + snippet(json.dumps(example["state"], ensure_ascii=False), 100))
        if "parts" in example:
            said.append(f"{len(example['parts'])} parts")
        if "finish_reason" in example:
            said.append(f"finish reason {example['finish_reason']}")
        return " with ".join(said) if said else "{}"
    return repr(snippet(str(example), 100))


def examples_of(spec: AssertionSpec) -> Iterator[tuple[str, int, Any, PathKey]]:
    """(kind, 1-based number, example, data path) for each of the spec's examples."""
    for kind in ("fail", "pass"):
        found = (spec.examples or {}).get(kind)
        for i, example in enumerate(found if isinstance(found, list) else []):
            yield kind, i + 1, example, (*spec.where, "examples", kind, i)


def hollow(suite: Suite) -> list[tuple[PathKey, str]]:
    """Each test of `suite` that checks nothing (no assertion of its own, on a turn or the test, and none from
    `defaults`), and `transcripts:` without rules: they would pass whatever the bot replies
    (docs/en/suite-format.md#tests-that-check-nothing)."""
    out: list[tuple[PathKey, str]] = []
    for test in suite.tests:
        if test.recorded == "file" or test.asserts or any(t.asserts for t in test.conversation):
            continue
        out.append((test.where, f"test '{test.id}' checks nothing: it has no assertion of its own and none from "
                                "`defaults`, so it passes whatever the bot replies; add `assert:`"))
    source = suite.transcripts
    if source is not None and not source.asserts:
        out.append((source.at, "the recorded conversations of `transcripts:` are checked by nothing: add "
                               "`defaults: assert:` (they pass whatever they hold)"))
    return out


def builtin_examples_of(spec: AssertionSpec) -> Iterator[tuple[str, int, Any, PathKey, str]]:
    """(kind, 1-based number, example, data path, whose) for the examples a check type carries itself
    (its parameters' `builtin_examples(negate)`, as `not-pii: [cn_mobile]` does): graded like the
    writer's, on the line of the rule's value, named as built-in."""
    try:
        carried = getattr(spec.params, "builtin_examples", None)
    except (TypeError, ValueError):  # parameters that cannot be built are reported where they are written
        return
    if carried is None:
        return
    for name, kind, examples in carried(spec.negate):
        for i, example in enumerate(examples):
            yield kind, i + 1, example, spec.value_where, f"built-in {name} "


def rule_warnings(suites: list[Suite], strict: bool = False) -> list[Problem]:
    """What `validate` warns about: a test that checks nothing, an `xfail` test holding a critical assertion of
    its own (docs/en/rule-self-tests.md#verdicts-that-hold), a `finish-reason` that is no known reason (`stopp`); with `strict`, every critical
    deterministic assertion without a `fail` example (docs/en/rule-self-tests.md) and every `not-regex` with
    `\\d` reading a Chinese suite's replies without `nfkc`."""
    warnings: list[Problem] = []
    for suite in suites:
        def at(path: PathKey, message: str, suite: Suite = suite) -> None:
            warnings.append(suite.lines.problem(path, message) if suite.lines
                            else Problem(str(suite.path), None, "", message))

        reported: set[PathKey] = set()
        typos: set[PathKey] = set()  # finish-reason values warned about (a `defaults` check once)
        for path, message in hollow(suite):
            at(path, message)
        for test in suite.tests:
            own = [*(a for t in test.conversation for a in t.asserts),
                   *(a for a in test.asserts if a.where[:1] != ("defaults",))]
            critical = [a for a in own if a.severity == "critical"]
            if test.xfail and critical and not test.draft:
                first = critical[0]
                line = suite.lines.line(first.where) if suite.lines else None
                written = suite.lines is not None and (*test.where, "xfail") in suite.lines.lines
                where = (*test.where, "xfail") if written else ("defaults", "xfail")
                at(where, f"test '{test.id}': xfail cannot silence a red line: critical '{first.name}'"
                          f"{f' (line {line})' if line else ''} still fails the gate when it fails; make it major "
                          f"while the defect is known, or drop xfail")
            checks = [*test.asserts, *(a for t in test.conversation for a in t.asserts)]
            for spec in checks:
                if spec.type == "finish-reason" and spec.where not in typos and (word := _unknown_reason(spec)):
                    typos.add(spec.where)
                    at(spec.where, f"'{spec.name}: {word}' is none of {', '.join(REASON_WORDS)}"
                                   f"{did_you_mean(word, REASON_WORDS)}: it matches only a reply whose provider "
                                   "reports that very word")
            if not strict:
                continue
            for spec in checks:
                if spec.severity != "critical" or spec.where in reported or _model_graded(spec):
                    continue
                reported.add(spec.where)
                has_fail = (spec.examples or {}).get("fail") or any(e[0] == "fail" for e in builtin_examples_of(spec))
                if not has_fail:
                    at(spec.where, f"critical '{spec.name}' has no fail example: a red line that catches nothing "
                                   f"passes silently; add `examples: {{fail: [a reply it must reject]}}`")
        warnings.extend(family_warnings(suite))  # docs/en/judges.md#same-family-judges
        if strict:
            warnings.extend(_digits_warnings(suite))
    return warnings


def _digits_warnings(suite: Suite) -> list[Problem]:
    """A `not-regex` with `\\d` reading a Chinese suite's replies as written (docs/en/red-lines.md)."""
    specs = {a.where: a for t in suite.tests for a in [*t.asserts, *(a for turn in t.conversation for a in turn.asserts)]}
    specs.update({a.where: a for a in (suite.transcripts.asserts if suite.transcripts else [])})
    flagged = [spec for spec in specs.values() if _digits_as_written(spec)]
    if not flagged or not speaks_chinese(suite):
        return []
    message = ("'not-regex' uses \\d on replies read as written: a Chinese bot's full-width digits (１３９…) and "
               "spaced numbers (139 1234 5678) slip past it; add `normalize: [nfkc, digits]` beside it (or "
               "`options.normalize` for the suite), or use `not-pii: [cn_mobile]`")
    return [suite.lines.problem(spec.where, message) if suite.lines else Problem(str(suite.path), None, "", message)
            for spec in flagged]


_DIGIT_CLASS = re.compile(r"(?<!\\)(?:\\\\)*\\d")  # a `\d` that is no escaped backslash before a d


def _digits_as_written(spec: AssertionSpec) -> bool:
    """A `not-regex` whose pattern uses `\\d` and whose `normalize` (its own, or `options.normalize`)
    does not hold `nfkc`."""
    if spec.name != "not-regex" or not isinstance(spec.value, str) or not _DIGIT_CLASS.search(spec.value):
        return False
    try:
        return "nfkc" not in normalizer_names(spec.params.normalize)
    except (TypeError, ValueError):
        return False


def speaks_chinese(suite: Suite) -> bool:
    """The suite's conversations are Chinese (docs/en/reports-and-gate.md#language): its `report.lang`,
    else most of its user turns — written, or those of the first recorded conversations."""
    if suite.report_lang is not None:
        return suite.report_lang == "zh"
    turns = [t.text for test in suite.tests for t in test.conversation if t.kind == "user" and isinstance(t.text, str)]
    turns += [plan.goal for test in suite.tests for plan in (test.simulate, test.attack) if plan is not None]
    from evalspec.config.recorded import recorded_user_texts

    return mostly_chinese(turns + recorded_user_texts(suite))


def _unknown_reason(spec: AssertionSpec) -> str | None:
    """A `finish-reason` value that is no reason evalspec knows (a typo, most likely), else None."""
    word = normalize_finish_reason(getattr(spec.params, "reason", None))
    return word if word is not None and word not in REASON_WORDS else None


def _model_graded(spec: AssertionSpec) -> bool:
    try:
        return model_needed(spec) is not None
    except (TypeError, ValueError):
        return False
