"""Approving a draft (docs/en/review.md): `draft: true` taken out of the test in the suite file, nothing else touched.

A minimal text edit rather than a YAML round trip: PyYAML's node marks locate the `draft` key and its
value in the test's own mapping, only those characters (and the line break or comma that belonged to
them) are removed, and a comment on that line stays as a comment line. Every other byte is the same by
construction, and the result is checked: it must load to the same data minus that one key, or nothing
is written.
"""

from __future__ import annotations

from typing import Any

import yaml

from evalspec.core.errors import EvalspecError


class ApproveError(EvalspecError):
    """The test cannot be approved by this edit; the message says why and what to do."""


def _pairs(node: yaml.Node) -> list[tuple[yaml.Node, yaml.Node]]:
    return list(node.value) if isinstance(node, yaml.MappingNode) else []


def _find_test(root: yaml.Node, test_id: str) -> yaml.MappingNode:
    tests = next((v for k, v in _pairs(root) if getattr(k, "value", None) == "tests"), None)
    if not isinstance(tests, yaml.SequenceNode):
        raise ApproveError("the file has no `tests:` list")
    ids = []
    for item in tests.value:
        test_key = next((v.value for k, v in _pairs(item) if k.value == "id" and isinstance(v, yaml.ScalarNode)), None)
        if test_key == test_id and isinstance(item, yaml.MappingNode):
            return item
        ids.append(str(test_key))
    raise ApproveError(f"no test {test_id!r} in this file (tests: {', '.join(ids)})")


def _flow_span(text: str, start: int, end: int) -> tuple[int, int]:
    """`draft: true` in `{id: a, draft: true, ...}`: the pair with its comma and the space after it."""
    after = end
    while after < len(text) and text[after] in " \t":
        after += 1
    if after < len(text) and text[after] == ",":
        after += 1
        while after < len(text) and text[after] in " \t":
            after += 1
        return start, after
    before = start
    while before > 0 and text[before - 1] in " \t":
        before -= 1
    if before > 0 and text[before - 1] == ",":
        return before - 1, end  # the last pair: the comma before it goes
    return start, end


def _block_edit(text: str, start: int, end: int, following: yaml.Node | None) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    eol = text.find("\n", end)
    eol = len(text) if eol < 0 else eol
    rest = text[end:eol].strip()
    if rest and not rest.startswith("#"):
        raise ApproveError(f"unexpected text after the value: {rest!r}")
    before = text[line_start:start]
    if not before.strip():  # `    draft: true   # comment` on its own line
        line_break = "\r\n" if text[eol - 1:eol] == "\r" else "\n"
        kept = f"{before}{rest}{line_break}" if rest else ""
        return text[:line_start] + kept + text[eol + 1:]
    if before.strip() == "-" and following is not None and not rest:  # `- draft: true` opening the test
        resume = following.start_mark.index
        if text[end:resume].strip():
            raise ApproveError("a comment sits between `draft: true` and the next key")
        return text[:start] + text[resume:]
    raise ApproveError("`draft: true` shares its line with other keys")


def remove_draft(text: str, test_id: str) -> tuple[str, int]:
    """The suite text without the test's `draft: true`, and the line it was on (1-based)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        before = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ApproveError(f"not readable YAML: {exc}") from None
    if root is None:
        raise ApproveError("the file is empty")
    test = _find_test(root, test_id)
    pairs = _pairs(test)
    at = next((i for i, (k, _) in enumerate(pairs) if k.value == "draft"), None)
    if at is None:
        raise ApproveError(f"test {test_id!r} is not a draft: it has no `draft:` key of its own")
    key, value = pairs[at]
    if not (isinstance(value, yaml.ScalarNode) and yaml.safe_load(value.value) is True):
        raise ApproveError(f"test {test_id!r} is not a draft: draft is {value.value!r}")
    start, end = key.start_mark.index, value.end_mark.index
    if test.flow_style:
        a, b = _flow_span(text, start, end)
        edited = text[:a] + text[b:]
    else:
        following = pairs[at + 1][0] if at + 1 < len(pairs) else None
        edited = _block_edit(text, start, end, following)
    _check(before, edited, test_id)
    return edited, key.start_mark.line + 1


def _check(before: Any, edited: str, test_id: str) -> None:
    """The edited file loads to the original data with only the test's `draft` key gone."""
    try:
        after = yaml.safe_load(edited)
    except yaml.YAMLError:
        after = None
    expected = before
    for test in expected.get("tests", []):
        if isinstance(test, dict) and test.get("id") == test_id:
            test.pop("draft", None)
    if after != expected:
        raise ApproveError("removing `draft: true` here would change more than that key; remove it by hand")
