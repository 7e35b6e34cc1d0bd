"""`diff` checks every record of both runs against the run schema: the schema compiled to Python
(`runjson.item_valid`, fastjsonschema) answers first, and only jsonschema names a problem. The compiled
answer must never pass what jsonschema refuses (docs/en/scale-and-ray.md#memory)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalspec.core.errors import ConfigError
from evalspec.results.runjson import RUN_SCHEMA_FILE, item_schema_problem, item_valid, read_run, write_json

FIXTURE = Path(__file__).parent.parent / "reporters" / "fixtures" / "run.json"
SAME_IN_DRAFT_7 = {"$defs", "$id", "$ref", "$schema", "additionalProperties", "anyOf", "description", "enum",
                   "exclusiveMaximum", "exclusiveMinimum", "if", "items", "maxItems", "maximum", "minItems", "minLength",
                   "minimum", "pattern", "properties", "required", "then", "title", "type"}


def keywords(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        if "$ref" in node:
            assert set(node) <= {"$ref", "description", "title"}, f"$ref beside other keywords: {sorted(node)}"
        for key, value in node.items():
            found.add(key)
            children = value.values() if key in ("properties", "$defs") and isinstance(value, dict) else [value]
            for child in children:
                keywords(child, found)
    elif isinstance(node, list):
        for child in node:
            keywords(child, found)
    return found


def test_the_run_schema_means_the_same_read_as_draft_7() -> None:
    used = keywords(json.loads(RUN_SCHEMA_FILE.read_text(encoding="utf-8")), set())
    assert used <= SAME_IN_DRAFT_7, sorted(used - SAME_IN_DRAFT_7)


def _set(path: tuple[str | int, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(item: dict[str, Any]) -> None:
        node: Any = item
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value
    return change


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda item: item.pop(key, None)


RECORD_CHANGES = {
    "status misspelt": _set(("status",), "passd"),
    "score a word": _set(("score",), "high"),
    "suite missing": _drop("suite"),
    "a message's role a number": _set(("transcript", 0, "role"), 5),
    "transcript an object": _set(("transcript",), {}),
    "duration negative": _set(("duration_ms",), -1),
    "calls a float": _set(("calls",), 1.5),
    "calls 1.0": _set(("calls",), 1.0),
}
VERDICT_CHANGES = {
    "category unknown": _set(("category",), "great"),
    "status missing": _drop("status"),
    "n a string": _set(("n",), "3"),
}


@pytest.mark.parametrize("key, changes", [("results", RECORD_CHANGES), ("verdicts", VERDICT_CHANGES)])
def test_the_compiled_schema_never_passes_what_jsonschema_refuses(key: str, changes: dict[str, Any]) -> None:
    items = json.loads(FIXTURE.read_text(encoding="utf-8"))[key]
    refused: set[str] = set()
    for item in items:
        assert item_valid(key, item) and item_schema_problem(key, item, 0) is None  # a real run's items
        for name, change in changes.items():
            changed = copy.deepcopy(item)
            try:
                change(changed)
            except (KeyError, IndexError, TypeError):
                continue  # the item has no such place
            problem = item_schema_problem(key, changed, 0)
            if item_valid(key, changed):
                assert problem is None, f"{name}: the compiled schema passed what jsonschema refuses: {problem}"
            if problem is not None:
                refused.add(name)
    assert refused >= set(changes) - {"calls 1.0"}  # each change is a refusal somewhere (1.0 is an integer)


def test_a_streamed_diff_read_names_the_record_that_breaks_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    data = read_run(FIXTURE)
    write_json(path, data)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = lines.index('"results": [\n') + 2  # the second record
    record = json.loads(lines[at].rstrip().removesuffix(","))
    record["duration_ms"] = -5
    lines[at] = json.dumps(record, ensure_ascii=False) + ("," if lines[at].rstrip().endswith(",") else "") + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"results\[1\]\.duration_ms: -5 is less than the minimum of 0"):
        read_run(path, check=True, stream=True)
    assert read_run(path, stream=True)["results"][1]["duration_ms"] == -5  # unchecked, it is read as it is
