"""The provider-kind registry: `python`, `model` and `http` are entries like a plugin's kind, and the
suite schema, the parser and `evalspec list` read them from there (plugins: tests/core/test_plugins.py)."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main
from evalspec.config.schema import suite_schema
from evalspec.extend.kinds import BUILTIN, PROVIDER_KINDS, provider_kinds


def test_the_built_in_kinds_come_first_each_registered_by_its_own_module() -> None:
    kinds = provider_kinds()
    assert list(kinds)[:3] == ["python", "model", "http"]
    for name, module in BUILTIN.items():
        assert kinds[name].builtin and kinds[name].build.__module__ == module


def test_each_built_in_kind_s_schema_in_the_suite_schema_comes_from_its_registry_entry(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = provider_kinds()
    provider = suite_schema()["$defs"]["provider"]
    assert provider["oneOf"] == [{"required": [name]} for name in kinds]
    for name, kind in kinds.items():
        assert provider["properties"][name] == kind.schema
        for key, schema in kind.keys.items():
            assert provider["properties"][key] == schema, f"{name}.{key}"
    changed = dataclasses.replace(kinds["http"], schema={"type": "string", "description": "a changed entry"},
                                  keys={"greeting": {"type": "string"}})
    monkeypatch.setitem(PROVIDER_KINDS, "http", changed)
    regenerated = suite_schema()["$defs"]["provider"]["properties"]
    assert regenerated["http"] == changed.schema and regenerated["greeting"] == {"type": "string"}


def test_evalspec_list_providers_prints_each_registered_kind_with_its_doc() -> None:
    result = CliRunner().invoke(main, ["list", "providers"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    for name, kind in provider_kinds().items():
        assert any(line.startswith(name) and line.endswith(kind.doc) for line in lines), name


def test_a_stateful_kind_is_told_by_its_entry() -> None:
    http = provider_kinds()["http"]
    assert http.stateful({"http": {"url": "http://127.0.0.1/x", "stateful": True}})
    assert not http.stateful({"http": {"url": "http://127.0.0.1/x"}})
    assert not provider_kinds()["model"].stateful({"model": "openai/x", "stateful": True})
