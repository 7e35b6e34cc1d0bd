"""One owner for what "the system's reply" is: evalspec/extend/transcript.py (`is_reply`, `replies`,
`is_system_message`, `system_messages`). Anywhere else, a test of a message's role against "assistant"
together with its `injected` or `intermediate` flag is a second definition of the reply, which drifts
from the first; this test finds it, in Python code (per expression) and in template strings (per line).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import evalspec

PACKAGE = Path(evalspec.__file__).parent
OWNER = PACKAGE / "extend" / "transcript.py"
FLAGS = ("injected", "intermediate")
# a Jinja (or other template) test: `m.role == 'assistant' and not m.injected`
TEMPLATE_TEST = re.compile(r"""role\s*[!=]=\s*['"]assistant['"].*\b(?:injected|intermediate)\b"""
                           r"""|\b(?:injected|intermediate)\b.*role\s*[!=]=\s*['"]assistant['"]""")


def _names_a_flag(node: ast.AST) -> bool:
    """`m.get("injected")`, `m["intermediate"]`, `m.injected`: any mention of a flag in the expression."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and sub.value in FLAGS:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in FLAGS:
            return True
    return False


def _compares_assistant(node: ast.AST) -> bool:
    return any(isinstance(sub, ast.Compare) and any(isinstance(c, ast.Constant) and c.value == "assistant"
                                                    for c in [sub.left, *sub.comparators])
               for sub in ast.walk(node))


def reply_predicates(source: str, name: str) -> list[str]:
    """Where `source` decides for itself whether a message is a reply: 'NAME:LINE: text'."""
    found: dict[int, str] = {}
    tree = ast.parse(source, name)
    lines = source.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and _compares_assistant(node) and _names_a_flag(node):
            found.setdefault(node.lineno, lines[node.lineno - 1].strip())
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for i, line in enumerate(node.value.splitlines()):
                if TEMPLATE_TEST.search(line):
                    found.setdefault(node.lineno + i, line.strip()[:120])
    return [f"{name}:{n}: {text}" for n, text in sorted(found.items())]


def test_the_reply_is_decided_only_by_its_owner() -> None:
    outside = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != OWNER
               for hit in reply_predicates(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))]
    assert outside == [], "decide 'is this the system's reply' with evalspec.extend.transcript " \
                          "(is_reply / replies / system_messages):\n" + "\n".join(outside)


def test_the_finder_sees_each_way_of_writing_it() -> None:
    """The three ways the predicate was written before it had an owner are each found (and a plain role
    test, or a flag alone, is not)."""
    source = '''
a = [m for m in t if m["role"] == "assistant" and not m.get("injected")]
b = [m for m in t if m.get("role") == "assistant" and not m.get("intermediate")]
if m["role"] == "assistant" and (turn := m.get("turn")) is not None and not m.get("injected") \\
        and m.get("content"):
    pass
T = """{% if m.role == 'assistant' and not m.injected and not m.intermediate %}回复{% endif %}"""
ok = [m for m in t if m["role"] == "assistant"]
fine = [m for m in t if not m.get("intermediate")]
'''
    hits = reply_predicates(source, "x.py")
    assert [h.split(":")[1] for h in hits] == ["2", "3", "4", "7"], hits


def test_the_owner_itself_holds_the_predicate() -> None:
    assert reply_predicates(OWNER.read_text(encoding="utf-8"), "transcript.py")
