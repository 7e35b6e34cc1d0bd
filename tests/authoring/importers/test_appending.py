"""Appending to a suite keeps it as written (SPEC §26 "Identity and layout"): a document end `...` and a
block that keeps its trailing lines (`|+`) stay intact, and a suite that would read otherwise is refused
with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from evalspec.authoring.importers.appending import append_items
from evalspec.core.errors import ConfigError
from tests.helpers import invoke

KEPT = "第一行\n\n\n"  # a `|+` value: its trailing blank lines are part of it

SUITES = {
    "document end": "providers: [{id: p, python: bot.py:respond}]\ntests:\n  - id: a\n    conversation: [{user: 你好}]\n"
                    "    assert: [{contains: 好}]\n...\n# after the document\n",
    "keep block last": "providers: [{id: p, python: bot.py:respond}]\ntests:\n  - id: a\n    conversation:\n"
                       "      - user: 你好\n    assert: [{contains: 好}]\n    description: |+\n      第一行\n\n\n",
    "keep block before a key": "tests:\n  - id: a\n    conversation:\n      - user: 你好\n    assert: [{contains: 好}]\n"
                               "    description: |+\n      第一行\n\n\n# who answers\n"
                               "providers: [{id: p, python: bot.py:respond}]\n",
    "keep block then document end": "providers: [{id: p, python: bot.py:respond}]\ntests:\n  - id: a\n"
                                    "    conversation: [{user: 你好}]\n    assert: [{contains: 好}]\n"
                                    "    description: |+\n      第一行\n\n\n...\n",
    "no tests after a keep block": "providers: [{id: p, python: bot.py:respond}]\ndescription: |+\n  第一行\n\n\n...\n",
}


def _jsonl(tmp_path: Path) -> Path:
    row = {"id": "c1", "messages": [{"role": "user", "content": "价格多少？"}, {"role": "assistant", "content": "20万"}]}
    source = tmp_path / "logs.jsonl"
    source.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    return source


@pytest.mark.parametrize("name", list(SUITES))
def test_appending_keeps_a_document_end_and_a_keep_block(name: str, tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '好的'\n", encoding="utf-8")
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITES[name], encoding="utf-8")
    before = yaml.safe_load(SUITES[name])
    code, output = invoke("import", "transcripts", str(_jsonl(tmp_path)), "-o", str(suite), "--allow-empty")
    assert code == 0, output
    text = suite.read_text(encoding="utf-8")
    after = next(iter(yaml.safe_load_all(text)))  # loads, the new test inside the document
    assert [t["id"] for t in after["tests"]] == [t["id"] for t in before.get("tests") or []] + ["c1"], text
    if "keep" in name:
        holder = after["tests"][0] if before.get("tests") else after
        assert holder["description"] == KEPT, text  # the `|+` value unchanged
    if "..." in SUITES[name]:
        assert text.index("id: c1") < text.index("\n...\n"), text
    assert invoke("validate", str(suite))[0] == 0


def test_a_suite_that_would_read_otherwise_is_refused_with_nothing_written() -> None:
    text = "{tests: [{id: a, conversation: [{user: hi}]}]}\n"  # a flow mapping: nothing can go after it
    with pytest.raises(ConfigError) as caught:
        append_items(text, "tests", lambda indent: f"{indent}- id: b\n", "s.yaml")
    assert "nothing was written" in str(caught.value.problems[0])
