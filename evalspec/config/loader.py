"""Suite file -> validated `Suite`. Every problem in every file is collected before raising."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import jsonschema
import yaml

from evalspec.config.interpolate import interpolate_env, is_template, load_templating
from evalspec.config.messages import schema_problems
from evalspec.config.model import Suite
from evalspec.config.nodes import SuiteNode
from evalspec.config.numbers import non_finite
from evalspec.config.parser import SuiteParser
from evalspec.config.paths import LineMap
from evalspec.config.schema import suite_schema
from evalspec.config.yamlfile import load_yaml
from evalspec.core.errors import ConfigError, PluginError, Problem
from evalspec.core.plugins import load_plugin
from evalspec.core.pyref import step
from evalspec.core.redact import (
    collect_written_secrets,
    redact_problems,
    run_secrets,
    suite_secrets,
)
from evalspec.extend.kinds import provider_kinds

__all__ = ["expand_cli_mapping", "load_suite", "load_suites"]

_VALIDATORS: dict[tuple[str, ...], jsonschema.Draft202012Validator] = {}


def _validator() -> jsonschema.Draft202012Validator:
    """The validation schema, rebuilt when a plugin registers (or re-registers) a provider kind."""
    key = tuple(f"{name}#{id(kind)}" for name, kind in provider_kinds().items())
    if key not in _VALIDATORS:
        _VALIDATORS[key] = jsonschema.Draft202012Validator(suite_schema(for_validation=True))
    return _VALIDATORS[key]


def _load_plugins(data: SuiteNode, base_dir: Path, lines: LineMap, problems: list[Problem]) -> None:
    plugins = data.get("plugins")
    for i, ref in enumerate(plugins if isinstance(plugins, list) else []):
        if isinstance(ref, str):
            try:
                with step(str(lines.problem(("plugins", i), f"plugin {ref!r}"))):
                    load_plugin(ref, base_dir)
            except PluginError as exc:
                problems.append(lines.problem(("plugins", i), str(exc)))


def load_suites(paths: list[str | Path], cli_vars: Mapping[str, Any] | None = None,
                environ: Mapping[str, str] | None = None) -> list[Suite]:
    """Load several suite files; raises one ConfigError listing the problems of all of them."""
    suites, read, problems = [], [], []
    for path in paths:
        suite, found = check_suite(path, cli_vars, environ)
        problems.extend(found)
        if suite is not None:
            read.append(suite)
            if not found:
                suites.append(suite)
    problems.extend(chart_problems(suites))
    if problems:  # one suite's secret may be quoted in another's problem
        raise ConfigError(redact_problems(problems, run_secrets(read, environ)))
    return suites


def chart_problems(suites: list[Suite]) -> list[Problem]:
    """Curve tests drawn on one `chart` (across the run) must share their x variable."""
    first: dict[str, tuple[str, str, Suite]] = {}
    problems = []
    for suite in suites:
        for test in suite.tests:
            if not test.chart or not test.curve:
                continue
            seen = first.setdefault(test.chart, (test.curve, test.id, suite))
            if seen[0] != test.curve:
                where = (*test.where, "curve", "x")
                message = (f"test '{test.id}': chart '{test.chart}' plots '{seen[0]}' (test '{seen[1]}' in "
                           f"{seen[2].path}); curves on one chart share their x, so use x: {seen[0]} or another chart")
                problems.append(suite.lines.problem(where, message) if suite.lines
                                else Problem(str(suite.path), None, "", message))
    return problems


def load_suite(path: str | Path, cli_vars: Mapping[str, Any] | None = None,
               environ: Mapping[str, str] | None = None) -> Suite:
    suite, problems = check_suite(path, cli_vars, environ)
    if problems or suite is None:
        raise ConfigError(problems)
    return suite


def check_suite(path: str | Path, cli_vars: Mapping[str, Any] | None = None,
                environ: Mapping[str, str] | None = None) -> tuple[Suite | None, list[Problem]]:
    """The suite as far as it could be read, and every problem found in it. The suite is None only
    when the file cannot be read or parsed as YAML (nothing later can be checked then)."""
    path = Path(path)
    shown = str(path)
    try:
        if path.exists() and not path.is_file():
            kind = "a folder" if path.is_dir() else "not a regular file (a pipe, socket or device)"
            return None, [Problem(shown, None, "", f"is {kind}: give a suite .yaml file")]
        raw_bytes = path.read_bytes()
        text = raw_bytes.decode("utf-8")
    except FileNotFoundError:
        return None, [Problem(shown, None, "", "file not found")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(shown, None, "", f"cannot read: {exc}")]
    if is_template(text):
        load_templating()
    problems: list[Problem] = []
    try:
        data, lines = load_yaml(text, shown, problems)
    except ConfigError as exc:
        return None, exc.problems
    if not isinstance(data, dict):
        return None, [Problem(shown, 1, "", "a suite file is a mapping with at least 'providers' and 'tests'")]
    suite = Suite(path=path, sha256=hashlib.sha256(raw_bytes).hexdigest(), lines=lines)
    data = interpolate_env(data, (), environ if environ is not None else os.environ, lines, problems, suite.secrets)
    suite_secrets(data, suite.secrets, cli_vars)
    node = cast(SuiteNode, data)  # a mapping, checked just below against the schema generated from SuiteNode
    _load_plugins(node, path.parent, lines, problems)
    schema_found = [lines.problem(where, message) for err in _validator().iter_errors(data)
                    for where, message in schema_problems(err)]
    parsed_from = len(problems)
    SuiteParser(suite, node, lines, problems, dict(cli_vars or {}),
                environ if environ is not None else os.environ).parse()
    # one mistake, one message: where the parser names a problem, the schema's words for it are dropped,
    # and a NaN or infinity is named as such, not by the range or type check it slipped through
    named = {(p.line, p.path) for p in problems[parsed_from:]}
    problems += [p for p in schema_found if (p.line, p.path) not in named]
    non_numbers = [lines.problem(where, message) for where, message in non_finite(data)]
    if non_numbers:
        places = {(p.line, p.path) for p in non_numbers}
        problems[:] = [p for p in problems if (p.line, p.path) not in places] + non_numbers
    problems.sort(key=lambda p: (p.line or 0, p.path))
    problems = _dedupe([_read_as_text(p, lines) for p in problems])
    return suite, redact_problems(problems, run_secrets([suite], environ)) if problems else problems


_GOT = re.compile(r" must be a text, got (True|False|-?[0-9][0-9_.eE+-]*)$| must be a text or a number, got (True|False)$")


def _read_as_text(problem: Problem, lines: LineMap) -> Problem:
    """`user: no` is false to YAML and `user: 1.0` a number: where a text is expected, say how to quote it."""
    written = lines.plain_typed.get(problem.path)
    if written is None or not _GOT.search(problem.message):
        return problem
    value = yaml.safe_load(written)
    reads = ("true" if value else "false") if isinstance(value, bool) else "a number"
    key = problem.path.rsplit(".", 1)[-1]
    quoted = "'" + written.replace("'", "''") + "'"
    shown = f"- {quoted}" if key.endswith("]") else f"{key}: {quoted}"
    return Problem(problem.file, problem.line, problem.path, f"YAML reads `{written}` as {reads}: quote it, {shown}")


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen, out = set(), []
    for p in problems:
        if (p.line, p.path, p.message) not in seen:
            seen.add((p.line, p.path, p.message))
            out.append(p)
    return out


def expand_cli_mapping(raw: Any, option: str, environ: Mapping[str, str] | None = None) -> tuple[Any, set[str]]:
    """A provider mapping given on the command line (`--judge '{model: ..., api_key: ${KEY}}'`), its
    `${ENV}` expanded as in a suite, and the secrets it holds; an unset variable is a ConfigError."""
    problems: list[Problem] = []
    secrets: set[str] = set()
    value = interpolate_env(raw, (), environ if environ is not None else os.environ, LineMap(option), problems, secrets)
    collect_written_secrets(value, secrets)
    if problems:
        raise ConfigError(redact_problems(problems, secrets))
    return value, secrets
