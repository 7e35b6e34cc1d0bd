"""The shape check of run.json compiled once (results/runshape.py `shaped`) answers as the schema walk that
names a problem (`shape`) does, on a run as evalspec writes it and on every value of it made wrong: a
report of a large run checks each record with the compiled one (docs/en/scale-and-ray.md#memory)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalspec.results.runshape import SHAPE_DEPTH, shape, shape_schema, shaped

RUN = Path(__file__).resolve().parents[1] / "reporters" / "fixtures" / "run.json"
WRONG: list[Any] = [None, 0, 1.5, True, "文字", [], {}, [1], [{"a": 1}], {"role": 1}]


def wrong_versions(value: Any, depth: int) -> Iterator[Any]:
    """`value` with one of its parts (down to `depth`) replaced by each wrong value, or left out."""
    yield from WRONG
    if depth <= 0:
        return
    parts = list(value.items()) if isinstance(value, dict) else list(enumerate(value)) if isinstance(value, list) else []
    for key, part in parts:
        for other in wrong_versions(part, depth - 1):
            changed = copy.copy(value)
            changed[key] = other
            yield changed
        if isinstance(value, dict):
            yield {k: v for k, v in value.items() if k != key}


def test_the_compiled_shape_check_agrees_with_the_schema_walk() -> None:
    run = json.loads(RUN.read_text(encoding="utf-8"))
    schema = shape_schema()
    defs, props = schema["$defs"], schema["properties"]
    answers = []
    for key, depth in (("results", SHAPE_DEPTH - 2), ("verdicts", SHAPE_DEPTH - 2)):
        for item in run[key][:4]:
            for version in wrong_versions(item, 3):
                walked = shape(version, props[key]["items"], defs, (key, 0), depth, compiled=False) is None
                assert shaped(version, props[key]["items"], defs, depth) == walked, version
                answers.append(walked)
                if not walked and item is run[key][0]:  # the problem is named as the walk names it
                    within = {**run, key: [*run[key][:2], version]}
                    named = shape(within, schema, defs, (), SHAPE_DEPTH, compiled=False)
                    assert named is not None and shape(within, schema, defs, (), SHAPE_DEPTH) == named
    for version in (run, *({**run, top: w} for top in run for w in WRONG)):
        walked = shape(version, schema, defs, (), SHAPE_DEPTH, compiled=False) is None
        assert shaped(version, schema, defs, SHAPE_DEPTH) == walked
        assert (shape(version, schema, defs, (), SHAPE_DEPTH) is None) == walked  # its records compiled
    assert answers.count(True) > 50 and answers.count(False) > 500  # both answers, many times
