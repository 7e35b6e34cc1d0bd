"""Every check declares its parameters as a dataclass: the suite schema is generated from it, the loader
builds it once (a wrong type or a bad regex is a load error with file:line), and checks read it typed."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import pytest

from evalspec.assertions.builtin import TYPES
from evalspec.assertions.graded import JudgeParams
from evalspec.assertions.session import AtMostParams, WithinParams
from evalspec.assertions.tools import CallRef, SequenceParams
from evalspec.config import load_suite
from evalspec.config.schema import suite_schema
from evalspec.core.errors import ConfigError
from evalspec.extend.params import UNSET, Key, Keywords, Option, make_params, options_schema, value_schema
from evalspec.extend.registry import REGISTRY, load_installed_plugins, model_needed
from evalspec.plan.build import build_plan
from tests import ROOT
from tests.helpers import spec

BOT = ROOT / "providers" / "demo_bot.py"
HEAD = f"providers:\n  - id: bot\n    python: {BOT}:respond\n"
load_installed_plugins()
BUILT_IN = sorted(name for name, t in REGISTRY.items() if t.fn.__module__ in TYPES.values())


def test_the_built_in_checks_are_registered_without_the_registry_importing_them() -> None:
    assert len(BUILT_IN) >= 40 and {"contains", "within", "memory-recall", "tool-sequence", "efficiency"} <= set(BUILT_IN)
    source = (ROOT / "evalspec" / "extend" / "registry.py").read_text()
    assert "assertions import" not in source


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_check_has_a_params_dataclass_and_its_schema_is_generated_from_it(name: str) -> None:
    atype = REGISTRY[name]
    assert dataclasses.is_dataclass(atype.params), f"{name} declares no parameter dataclass"
    defs = suite_schema()["$defs"]
    written = {k: v for k, v in defs[f"value_{name}"].items() if k != "description"}
    generated = {k: v for k, v in value_schema(atype.params).items() if k != "description"}
    assert written == generated
    assert atype.options == options_schema(atype.params)
    form = next(f for f in defs["assertion"]["anyOf"] if f.get("title") == name)
    assert set(atype.options) <= set(form["properties"])


def load_problems(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + body, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    return [str(p) for p in info.value.problems]


def test_a_wrong_typed_parameter_of_a_built_in_check_is_a_load_error_naming_file_and_line(tmp_path: Path) -> None:
    found = load_problems(tmp_path, """\
tests:
  - id: t
    conversation:
      - user: hi
        label: start
        assert:
          - word-count: {min: three}
          - within: {pattern: "x", after: start, turns: 0}
          - memory-recall: {name: 张三}
            partial_credit: 2
      - user: again
    assert:
      - at-most: {pattern: "(", count: 1}
      - latency: fast
""")
    assert found == [
        f"{tmp_path / 's.yaml'}:10: tests[0].conversation[0].assert[0].word-count.min: word-count: min must be a "
        "whole number, got 'three'",
        f"{tmp_path / 's.yaml'}:11: tests[0].conversation[0].assert[1].within.turns: within: turns must be at least 1, got 0",
        f"{tmp_path / 's.yaml'}:13: tests[0].conversation[0].assert[2].partial_credit: partial_credit must be at most 1, got 2",
        f"{tmp_path / 's.yaml'}:16: tests[0].assert[0].at-most.pattern: bad regex '(': missing ) at position 1",
        f"{tmp_path / 's.yaml'}:17: tests[0].assert[1].latency: latency must be a number, got 'fast'",
    ]


def test_parameters_are_built_with_their_defaults_options_and_nested_dataclasses() -> None:
    within = spec("within: {pattern: 退款, after: 2}").params
    assert within == WithinParams(pattern="退款", after=2, turns=1)
    assert spec("at-most: {tool: refund, count: 1}").params == AtMostParams(tool="refund", count=1, after=None)
    sequence = spec("tool-sequence: {calls: [search, {name: book, args: {day: 're:\\d+'}}]}\nmode: subset").params
    assert sequence == SequenceParams(calls=["search", CallRef("book", {"day": "re:\\d+"})], mode="subset")
    written_in_value = spec("tool-sequence: {calls: [a], mode: superset}\nmode: subset").params
    assert written_in_value.mode == "superset"  # the value's own `mode` wins over the option
    recall = spec("memory-recall: {job: [测试工程师, QA]}\nfuzzy: false").params
    assert (recall.facts, recall.fuzzy, recall.partial_credit) == ({"job": ["测试工程师", "QA"]}, False, 0.5)
    refers = spec("refers-to: {expected: 北京, not: [上海]}").params
    assert (refers.expected, refers.distractors) == ("北京", ["上海"])
    judged = spec("follows-correction:\nlevels: default\nsamples: 3").params
    assert isinstance(judged, JudgeParams) and (judged.levels, judged.samples) == ("default", 3)


def test_a_templated_value_is_built_again_once_rendered(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + """\
tests:
  - id: t
    matrix: {word: [退款, 发票]}
    conversation:
      - user: hi
        assert:
          - contains: "{{ word }}"
          - within: {pattern: "{{ word }}", after: 1}
""", encoding="utf-8")
    instances = build_plan([load_suite(path)])
    texts = [[a.params for a in inst.turns[0].asserts] for inst in instances]
    assert [t[0].text for t in texts] == ["退款", "发票"]
    assert [t[1].pattern for t in texts] == ["退款", "发票"]


def test_a_spec_pickles_without_its_built_parameters() -> None:
    s = spec("within: {pattern: x, after: 1}")
    assert s.params.after == 1
    copy = pickle.loads(pickle.dumps(s))
    assert copy.parsed is None and copy.params == s.params


def test_whether_a_check_needs_its_model_comes_from_its_parameters() -> None:
    assert model_needed(spec("asks-clarification:")) == "judge"
    assert model_needed(spec("asks-clarification:\nmode: heuristic")) is None
    assert model_needed(spec("similar: 你好")) == "embedder"
    assert model_needed(spec("contains: x")) is None


@dataclass(frozen=True)
class Shaped:
    short_field: ClassVar[str] = "name"
    name: Annotated[str, Keywords(minLength=1)]
    distractor: Annotated[str | None, Key("not")] = None
    exact: Annotated[bool, Option()] = True
    equals: Any = UNSET


def test_the_schema_generator_reads_short_forms_keys_options_and_optional_keys() -> None:
    assert value_schema(Shaped) == {"anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "object", "additionalProperties": False, "required": ["name"],
         "properties": {"name": {"type": "string", "minLength": 1}, "not": {"type": "string"}, "equals": {}}}]}
    assert options_schema(Shaped) == {"exact": {"type": "boolean", "default": True}}
    assert make_params(Shaped, "x", {"exact": False}) == Shaped(name="x", exact=False)
    assert make_params(Shaped, {"name": "x", "not": "y", "equals": None}) == Shaped(name="x", distractor="y", equals=None)
