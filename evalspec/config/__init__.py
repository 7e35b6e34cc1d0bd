"""Suite loading: YAML with line numbers, interpolation, templates, schema and semantic validation.

Its names are imported on first use (PEP 562), so that a module of this package (`config.numbers`,
`config.interpolate`) can be imported without the loader and its schema validation."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module 'evalspec.config' has no attribute {name!r}")
    value = getattr(import_module("evalspec.config.loader" if name.startswith("load_") else "evalspec.config.model"), name)
    globals()[name] = value
    return value
