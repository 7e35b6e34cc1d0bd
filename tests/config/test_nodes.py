"""The suite's shape is written once (`config.nodes`): the schema is generated from those types."""

from __future__ import annotations

from typing import Annotated, TypedDict

from evalspec.config import nodes
from evalspec.config.nodes import AssertionKeys, SuiteNode
from evalspec.config.schema import suite_schema
from evalspec.extend.params import REQUIRED, Exactly, Keywords, Ref, type_schema, typeddict_properties
from evalspec.extend.registry import COMMON_KEYS


class _Pet(TypedDict, total=False):
    name: Annotated[str, Keywords(minLength=1), REQUIRED]
    owner: Annotated[_Owner, Ref("owner")]
    tag: Annotated[object, Exactly({"const": "猫"})]


class _Owner(TypedDict, total=False):
    nick: str


def test_a_typeddict_is_an_object_with_its_keys_in_order_and_the_marked_ones_required() -> None:
    assert type_schema(_Pet) == {
        "type": "object", "additionalProperties": False, "required": ["name"],
        "properties": {"name": {"type": "string", "minLength": 1}, "owner": {"$ref": "#/$defs/owner"},
                       "tag": {"const": "猫"}}}
    assert list(type_schema(_Pet)["properties"]) == ["name", "owner", "tag"]


def test_every_assertion_key_the_registry_names_has_its_schema_in_the_nodes() -> None:
    assert set(typeddict_properties(AssertionKeys)) == set(COMMON_KEYS) - {"type", "value"}


def test_the_suite_and_test_keys_are_the_nodes_keys() -> None:
    schema = suite_schema(for_validation=True)
    assert list(schema["properties"]) == list(typeddict_properties(SuiteNode))
    assert list(schema["$defs"]["test"]["properties"]) == list(typeddict_properties(nodes.TestNode))
    defaults = schema["properties"]["defaults"]["properties"]
    assert {"id", "name", "transcript", "dataset"}.isdisjoint(defaults) and "assert" in defaults
