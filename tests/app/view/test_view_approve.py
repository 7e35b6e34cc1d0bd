"""Approving a draft: `draft: true` taken out of the test, every other byte of the suite file kept."""

from __future__ import annotations

import pytest
import yaml

from evalspec.app.view.approve import ApproveError, remove_draft

BLOCK = """\
# 剧本
tests:
  - id: a   # 第一个
    draft: true   # 待评审
    conversation:
      - user: 你好
  - draft: true
    id: b
    conversation: [{user: hi}]
  - {id: c, draft: true, conversation: [{user: x}]}
  - {id: d, conversation: [{user: x}], draft: yes}
  - id: e
    draft: true
"""


def removed(before: str, after: str) -> tuple[list[str], list[str]]:
    """Lines only in `before`, lines only in `after`."""
    a, b = before.splitlines(), after.splitlines()
    return [x for x in a if x not in b], [x for x in b if x not in a]


@pytest.mark.parametrize(("test", "gone", "added", "line"), [
    ("a", ["    draft: true   # 待评审"], ["    # 待评审"], 4),
    ("b", ["  - draft: true", "    id: b"], ["  - id: b"], 7),
    ("c", ["  - {id: c, draft: true, conversation: [{user: x}]}"], ["  - {id: c, conversation: [{user: x}]}"], 10),
    ("d", ["  - {id: d, conversation: [{user: x}], draft: yes}"], ["  - {id: d, conversation: [{user: x}]}"], 11),
    ("e", ["    draft: true"], [], 13),
])
def test_only_the_draft_key_goes(test: str, gone: list[str], added: list[str], line: int) -> None:
    after, at = remove_draft(BLOCK, test)
    assert removed(BLOCK, after) == (gone, added) and at == line
    data = yaml.safe_load(after)
    assert [t.get("draft") for t in data["tests"] if t["id"] == test] == [None]
    assert sum(1 for t in data["tests"] if t.get("draft")) == 4


def test_line_ends_and_the_rest_of_the_file_are_byte_identical() -> None:
    crlf = BLOCK.replace("\n", "\r\n")
    after, _ = remove_draft(crlf, "a")
    assert after == crlf.replace("    draft: true   # 待评审\r\n", "    # 待评审\r\n")


@pytest.mark.parametrize(("text", "reason"), [
    ("tests: [{id: a}]\n", "is not a draft: it has no `draft:` key of its own"),
    ("tests: [{id: a, draft: false}]\n", "is not a draft: draft is 'false'"),
    ("base: &b {draft: true}\ntests:\n  - <<: *b\n    id: a\n", "no `draft:` key of its own"),
    ("tests: [{id: b, draft: true}]\n", "no test 'a' in this file (tests: b)"),
    ("providers: []\n", "the file has no `tests:` list"),
    ("tests:\n  - {id: a,\n  bad\n", "not readable YAML"),
])
def test_what_cannot_be_approved_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ApproveError) as caught:
        remove_draft(text, "a")
    assert reason in str(caught.value)

