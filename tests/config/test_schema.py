"""The committed suite schema is the one the code generates, and the demo suites satisfy it."""

from __future__ import annotations

import json

import jsonschema
import yaml

from evalspec import __all__ as public
from evalspec.config.schema import suite_schema
from evalspec.extend.registry import all_type_names
from tests import ROOT


def test_committed_schema_matches_generated() -> None:
    committed = json.loads((ROOT / "schema" / "suite.schema.json").read_text(encoding="utf-8"))
    assert committed == suite_schema(), "run: evalspec schema -o schema/suite.schema.json"


def test_schema_knows_every_registered_assertion() -> None:
    schema = suite_schema()
    names = set(schema["$defs"]["assertion"]["anyOf"][0]["properties"]["type"]["enum"])
    for name in all_type_names():
        assert name in names
        assert (f"not-{name}" in names) != name.startswith("not-")  # not-tool-called is a type of its own


def test_demo_suites_validate_against_the_editor_schema() -> None:
    validator = jsonschema.Draft202012Validator(suite_schema())
    for path in sorted((ROOT / "suites").glob("*.yaml")):
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8"))))
        assert not errors, (path, errors[0].message)


def test_editor_schema_rejects_a_typo() -> None:
    validator = jsonschema.Draft202012Validator(suite_schema())
    bad = {"providers": [{"id": "x", "python": "a.py:f"}],
           "tests": [{"id": "t", "conversation": [{"user": "hi", "asert": []}]}]}
    assert list(validator.iter_errors(bad))


def test_public_api_is_pinned() -> None:
    assert sorted(public) == ["CallContext", "Check", "ConfigError", "EvalspecError", "Evidence", "GradingContext", "JudgeRequest",
                              "JudgeVerdict", "Message", "Provider", "ProviderResponse", "Reply",
                              "Run", "RunResult", "Suite", "__version__", "arun", "assertion", "load_suite",
                              "provider_kind", "run"]


def test_catalogue_names_from_the_spec_are_registered() -> None:
    spec_names = ["equals", "contains", "icontains", "contains-any", "contains-all", "starts-with", "regex", "is-json", "contains-json", "jmespath", "word-count", "levenshtein", "latency", "cost", "tokens", "not-before", "within", "at-most", "not-after", "turn-count", "memory-recall", "refers-to", "asks-clarification", "similar", "topic-coherence", "llm-rubric", "trajectory:goal-success", "conversation-relevance", "knowledge-retention", "role-adherence", "coherence", "follows-correction", "stays-on-topic", "rejects-false-premise", "python"]
    assert set(spec_names) <= set(all_type_names())
