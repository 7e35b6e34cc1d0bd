"""Suite loading: YAML with line numbers, interpolation, templates, schema and semantic validation."""

from evalspec.config.loader import load_suite, load_suites
from evalspec.config.model import AssertionSpec, ProviderSpec, RepeatSpec, Suite, TestSpec, TurnSpec

__all__ = [
    "AssertionSpec",
    "ProviderSpec",
    "RepeatSpec",
    "Suite",
    "TestSpec",
    "TurnSpec",
    "load_suite",
    "load_suites",
]
