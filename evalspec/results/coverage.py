"""What a suite covers: the coverage matrix (docs/en/coverage.md).

A suite's `coverage:` declares dimensions and their values; a test covers a value when its `covers:`
says so, when one of its turn labels or tags equals the value, or (per instance) when a matrix key
named like the dimension takes it. Everything here is computed from the planned instances (their
labels include `labels:` patterns and spliced fragments) and from run.json data: no call is made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from evalspec.config.model import Suite, TestSpec
from evalspec.core.errors import Problem
from evalspec.plan.build import Instance
from evalspec.results.errorbars import interval

VERDICTS = ("passed", "failed", "error")
THIN = 0.3  # a cell whose pass rate's 95 % interval is wider than this is `thin` (docs/en/coverage.md#marks)
STATE_KEYS = ("intent", "active_flow", "flows_started", "flows_completed", "flows_cancelled", "actions",
              "utterances")


def covered_values(coverage: Mapping[str, Sequence[str]], test: TestSpec, labels: Iterable[str],
                   matrix: Mapping[str, Any]) -> dict[str, list[str]]:
    """The declared values one test instance covers, by dimension (in declared order; empty ones left out)."""
    marks = set(labels) | set(test.tags)
    out: dict[str, list[str]] = {}
    for dim, values in coverage.items():
        given = set(test.covers.get(dim, ()))
        if dim in matrix:
            given.add(str(matrix[dim]))
        if found := [v for v in values if v in given or v in marks]:
            out[dim] = found
    return out


def instance_covers(instance: Instance) -> dict[str, list[str]]:
    """What one planned instance covers (run.json's `covers` on its record)."""
    return covered_values(instance.suite.coverage, instance.test, instance.labels, instance.matrix)


@dataclass
class Unit:
    """One test instance without repeats or providers: what it covers."""

    suite: str
    test: str
    base_id: str
    draft: bool
    covers: dict[str, list[str]]


@dataclass
class Cell:
    tests: set[tuple[str, str]] = field(default_factory=set)
    approved: set[tuple[str, str]] = field(default_factory=set)
    verdicts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))

    def to_json(self, with_run: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"tests": len(self.tests), "approved": len(self.approved)}
        if with_run:
            out.update(self.verdicts)
            decided = self.verdicts["passed"] + self.verdicts["failed"]
            out["pass_rate"] = round(self.verdicts["passed"] / decided, 4) if decided else None
            out["pass_rate_ci"] = interval(self.verdicts["passed"], decided)
            out["mark"] = mark(out["pass_rate_ci"])
        return out


def mark(ci: Sequence[float] | None) -> str:
    """A cell of a run's matrix: `untested` (no verdict passed or failed), `thin` (its pass rate's 95 %
    interval is wider than THIN) or `stable`."""
    if ci is None:
        return "untested"
    return "thin" if round(ci[1] - ci[0], 6) > THIN else "stable"


def units(plan: Iterable[Instance]) -> list[Unit]:
    """Each test instance of the plan once (repeats and providers folded), with what it covers."""
    seen: dict[tuple[str, str], Unit] = {}
    for instance in plan:
        key = (str(instance.suite.path), instance.base_id)
        if key not in seen:
            seen[key] = Unit(key[0], instance.test.id, instance.base_id, instance.test.draft,
                             instance_covers(instance))
    return list(seen.values())


def declared(suites: Iterable[Mapping[str, Sequence[str]]]) -> dict[str, list[str]]:
    """The dimensions of several suites, their values merged in the order first declared."""
    out: dict[str, list[str]] = {}
    for coverage in suites:
        for dim, values in coverage.items():
            known = out.setdefault(dim, [])
            known.extend(v for v in values if v not in known)
    return out


def _verdict_covers(run: Mapping[str, Any], by_key: Mapping[tuple[str, str], Unit]) -> list[tuple[str, dict[str, list[str]]]]:
    """(category, covers) of each verdict of the run: the record's `covers`, else the planned instance's."""
    recorded: dict[tuple[str, str], Any] = {}
    for r in run.get("results") or []:
        recorded.setdefault((str(r.get("suite")), str(r.get("base_id"))), r.get("covers"))
    out = []
    for v in run.get("verdicts") or []:
        key = (str(v.get("suite")), str(v.get("test_id")))
        covers = recorded.get(key)
        if not isinstance(covers, dict):
            unit = by_key.get(key)
            covers = unit.covers if unit else {}
        out.append((str(v.get("category") or v.get("status")), covers))
    return out


def matrix(units_: Sequence[Unit], coverage: Mapping[str, Sequence[str]], run: Mapping[str, Any] | None = None,
           grid: tuple[str, str] | None = None) -> dict[str, Any]:
    """Per dimension each value's tests, approved (non-draft) tests and, with a run, its verdicts; with
    `grid`, the two dimensions as a table of cells (None for a cell no test covers)."""
    cells: dict[tuple[str, str], Cell] = {(d, v): Cell() for d, values in coverage.items() for v in values}
    pairs: dict[tuple[str, str], Cell] = {}
    for u in units_:
        key = (u.suite, u.test)
        for dim, values in u.covers.items():
            for value in values:
                if (dim, value) in cells:
                    cells[(dim, value)].tests.add(key)
                    if not u.draft:
                        cells[(dim, value)].approved.add(key)
        if grid:
            for a in u.covers.get(grid[0], ()):
                for b in u.covers.get(grid[1], ()):
                    cell = pairs.setdefault((a, b), Cell())
                    cell.tests.add(key)
                    if not u.draft:
                        cell.approved.add(key)
    if run is not None:
        by_key = {(u.suite, u.base_id): u for u in units_}
        for category, covers in _verdict_covers(run, by_key):
            if category not in VERDICTS:
                continue
            for dim, values in covers.items():
                for value in values:
                    if (dim, value) in cells:
                        cells[(dim, value)].verdicts[category] += 1
            if grid:
                for a in covers.get(grid[0], ()):
                    for b in covers.get(grid[1], ()):
                        pairs.setdefault((a, b), Cell()).verdicts[category] += 1
    with_run = run is not None
    out: dict[str, Any] = {"dimensions": [
        {"name": dim, "values": [{"value": v, **cells[(dim, v)].to_json(with_run)} for v in values]}
        for dim, values in coverage.items()]}
    if grid:
        rows, cols = coverage[grid[0]], coverage[grid[1]]
        out["grid"] = {"rows": grid[0], "columns": grid[1], "row_values": list(rows), "column_values": list(cols),
                       "cells": [[pairs[(a, b)].to_json(with_run) if (a, b) in pairs and pairs[(a, b)].tests else None
                                  for b in cols] for a in rows]}
    return out


class Below(TypedDict):
    """A declared coverage value with fewer approved tests than asked."""

    dimension: str
    value: Any
    approved: int


class GatedRule(TypedDict):
    """A rule of the gated tests as written: where, on how many tests, and whether it has `examples:`."""

    rule: str
    severity: str
    where: str
    tests: int
    examples: bool


def below(result: Mapping[str, Any], minimum: int) -> list[Below]:
    """The declared values with fewer than `minimum` approved tests."""
    return [{"dimension": d["name"], "value": v["value"], "approved": v["approved"]}
            for d in result["dimensions"] for v in d["values"] if v["approved"] < minimum]


def gated_rules(suites: Iterable[Suite]) -> list[GatedRule]:
    """Each rule of the gated (non-draft, non-xfail, non-curve) tests as written: the tests it runs on and
    whether it has `examples:` (docs/en/rule-self-tests.md)."""
    rules: dict[tuple[str, Any], GatedRule] = {}
    tests: dict[tuple[str, Any], set[str]] = {}  # the tests each rule runs on
    for suite in suites:
        for test in suite.tests:
            if test.draft or test.xfail or test.curve:
                continue
            for spec in [*(a for t in test.conversation for a in t.asserts), *test.asserts]:
                key = (str(suite.path), spec.where)
                if key not in rules:
                    line = suite.lines.line(spec.where) if suite.lines else None
                    rules[key] = {"rule": spec.name, "severity": spec.severity,
                                  "where": f"{suite.path}:{line}" if line else str(suite.path),
                                  "tests": 0, "examples": bool(spec.examples)}
                tests.setdefault(key, set()).add(test.id)
    for key, rule in rules.items():
        rule["tests"] = len(tests[key])
    return list(rules.values())


def state_seen(records: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The distinct state values of the assistant messages (docs/en/state.md: intent, active_flow, flows_*,
    actions, utterances), in the order first seen; keys never present are left out."""
    seen: dict[str, dict[str, None]] = {}
    for r in records:
        for m in r.get("transcript") or []:
            state = m.get("state") if isinstance(m, dict) and m.get("role") == "assistant" else None
            if not isinstance(state, dict):
                continue
            for key in STATE_KEYS:
                value = state.get(key)
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                        seen.setdefault(key, {})[str(item)] = None
    return {k: list(seen[k]) for k in STATE_KEYS if k in seen}


def declared_tools(suites: Iterable[Suite]) -> list[str]:
    """The tool names the suites' providers declare as a list (`tools: [...]`)."""
    names: dict[str, None] = {}
    for suite in suites:
        for p in suite.providers:
            tools = p.config.get("tools")
            for tool in tools if isinstance(tools, list) else []:
                name = (tool.get("function") or {}).get("name") if isinstance(tool, dict) else None
                if isinstance(name, str):
                    names[name] = None
    return list(names)


def tools_called(records: Iterable[Mapping[str, Any]]) -> set[str]:
    called: set[str] = set()
    for r in records:
        for m in r.get("transcript") or []:
            for call in (m.get("tool_calls") or []) if isinstance(m, dict) else []:
                name = (call.get("function") or {}).get("name") if isinstance(call, dict) else None
                if isinstance(name, str):
                    called.add(name)
    return called


def coverage_warnings(suites: Sequence[Suite], plan: Iterable[Instance]) -> list[Problem]:
    """What `validate` warns about: a declared value no test covers."""
    found = units(plan)
    warnings: list[Problem] = []
    for suite in suites:
        if not suite.coverage:
            continue
        mine = [u for u in found if u.suite == str(suite.path)]
        result = matrix(mine, suite.coverage)
        for d in result["dimensions"]:
            for v in d["values"]:
                if v["tests"]:
                    continue
                message = (f"no test covers {d['name']} '{v['value']}'; give a test `covers: "
                           f"{{{d['name']}: {v['value']}}}`, a turn label or a tag '{v['value']}'")
                path = ("coverage", d["name"], suite.coverage[d["name"]].index(v["value"]))
                warnings.append(suite.lines.problem(path, message) if suite.lines
                                else Problem(str(suite.path), None, "", message))
    return warnings


def run_matrices(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The matrix of each suite of a run that declares `coverage:` (what the reports show): from the
    suite's `coverage` and the records' `covers` in run.json."""
    records = run.get("results") or []
    out = []
    for meta in run.get("suites") or []:
        coverage = meta.get("coverage")
        if not isinstance(coverage, dict) or not coverage:
            continue
        path = str(meta.get("path"))
        found: dict[tuple[str, str], Unit] = {}
        for r in records:
            if r.get("suite") == path and (r["suite"], r["base_id"]) not in found:
                found[(r["suite"], r["base_id"])] = Unit(path, str(r.get("test")), r["base_id"], bool(r.get("draft")),
                                                         dict(r.get("covers") or {}))
        dims = list(coverage)
        mine = {**run, "verdicts": [v for v in run.get("verdicts") or [] if v.get("suite") == path]}
        result = matrix(list(found.values()), coverage, mine, (dims[0], dims[1]) if len(dims) > 1 else None)
        out.append({"suite": path, "description": meta.get("description") or "", **result})
    return out
