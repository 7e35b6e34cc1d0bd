"""promptfoo checks as evalspec checks: what keeps its meaning is converted, tests that check nothing in the
source are left out beside tests that check, and nothing hollow is written (SPEC §19)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.authoring.importers.test_promptfoo import import_config


def written(tmp_path: Path) -> dict[str, Any]:
    data = yaml.safe_load((tmp_path / "out" / "promptfooconfig.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


COMPARE = {"prompts": ["Answer: {{ message }}"], "providers": ["openai:gpt-4o-mini"],
           "tests": [{"vars": {"message": "What's the capital of France?"}},
                     {"vars": {"message": "Are hippos good swimmers?"},
                      "assert": [{"type": "llm-rubric", "value": "says that hippos are not good swimmers"}]},
                     {"description": "poem", "vars": {"message": "Write a poem about the sea."}}]}


def test_tests_that_check_nothing_in_the_source_are_left_out_beside_tests_that_check(tmp_path: Path) -> None:
    code, out, err = import_config(tmp_path, COMPARE)
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert [t["conversation"][0]["user"] for t in tests] == ["Answer: Are hippos good swimmers?"]
    assert tests[0]["conversation"][0]["assert"] == [{"llm-rubric": "says that hippos are not good swimmers"}]
    assert "2 test(s) left out that check nothing in the source" in err and "test-1, poem" in err
    head = (tmp_path / "out" / "promptfooconfig.yaml").read_text(encoding="utf-8").split("\ntests:")[0]
    assert "left out that check nothing in the source" in head  # said in the suite too


def test_allow_empty_writes_the_tests_that_check_nothing_too(tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, COMPARE, "--allow-empty")
    assert code == 0, err
    assert [t["id"] for t in written(tmp_path)["tests"]] == ["test-1", "test-2", "poem"]


def test_a_config_whose_tests_all_check_nothing_is_refused_saying_the_source_has_no_check(tmp_path: Path) -> None:
    config = {**COMPARE, "tests": [COMPARE["tests"][0], COMPARE["tests"][2]]}
    code, _, err = import_config(tmp_path, config)
    assert code == 2 and not (tmp_path / "out").exists()
    assert "test 'test-1': checks nothing: its source has no check either" in err
    assert "test 'poem': checks nothing: its source has no check either" in err


def test_a_test_whose_checks_were_all_dropped_still_refuses_the_import(tmp_path: Path) -> None:
    """A check lost in conversion is never hidden by leaving its test out."""
    config = {**COMPARE, "tests": [*COMPARE["tests"], {"vars": {"message": "hi"},
                                                       "assert": [{"type": "no-such-check", "value": 1}]}]}
    code, _, err = import_config(tmp_path, config)
    assert code == 2 and not (tmp_path / "out").exists()
    assert "test 'test-4': checks nothing: none of its source's checks could be converted" in err


def test_default_checks_make_every_test_checked(tmp_path: Path) -> None:
    config = {**COMPARE, "defaultTest": {"assert": [{"type": "not-contains", "value": "As an AI"}]}}
    code, _, err = import_config(tmp_path, config)
    assert code == 0, err
    assert len(written(tmp_path)["tests"]) == 3 and "left out" not in err
