"""A validation problem in the language being spoken (docs/en/reports-and-gate.md#language).

The loader writes its problems in English (config and core sit below the catalogue, and the English text is
what docs/en/troubleshooting.md lists); `problem_text` is the one place a problem is put into words for a
screen. In English it is the problem as written; in Chinese the forms a Chinese team meets most — an unknown
key or check with its "did you mean", a bad regex, the full-width punctuation of a Chinese input method —
are said with the catalogue's words, and any other message keeps its English beside the Chinese lead word.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from evalspec.core.errors import Problem
from evalspec.reporters.catalogue import current, words

_Q = r"'(?P<{}>[^']*)'"
_HINT = r"(?P<hint>(?: \(did you mean '[^']*'\?\))?(?:; valid here: .*)?)"
_DID_YOU_MEAN = re.compile(r" \(did you mean '(?P<choice>[^']*)'\?\)")
_TEST_PATH = re.compile(r"^test '(?P<id>.*)'$")  # an importer's problem names its test so
_VALID_HERE = re.compile(r"; valid here: (?P<keys>.*)$")


def _hint(text: str) -> str:
    text = _DID_YOU_MEAN.sub(lambda m: words("problem_did_you_mean", choice=m["choice"]), text)
    return _VALID_HERE.sub(lambda m: words("problem_valid_here", keys=m["keys"]), text)


#: the `regex` module's words for the mistakes a pattern most often has (the others stay as it says them)
_REGEX_ERRORS = {"unterminated character set": "problem_regex_set", "missing )": "problem_regex_open",
                 "unbalanced parenthesis": "problem_regex_close", "nothing to repeat": "problem_regex_repeat"}
_REGEX_ERROR = re.compile(r"^(?P<what>.*) at position (?P<pos>\d+)$")


def _regex_error(text: str) -> str:
    m = _REGEX_ERROR.match(text)
    key = _REGEX_ERRORS.get(m["what"]) if m else None
    return words(key, pos=m["pos"]) if m and key else text


#: what a value may be, as evalspec/config/messages.py says it (`_KINDS`), in the catalogue's words
_KIND_WORDS = [(re.compile(r"a whole number from (?P<n>-?\d+) up"), "kind_whole_from"), (re.compile("a whole number"), "kind_whole"),
               (re.compile("a number"), "kind_number"), (re.compile("a text"), "kind_text"),
               (re.compile(r"a list like \[a, b\]"), "kind_list"), (re.compile(r"a mapping like \{key: value\}"), "kind_mapping")]
_KIND_LIST = re.compile("^(?:" + "|".join(f.pattern for f, _ in _KIND_WORDS) + r"|true/false|, | or )+$")


def _worded(key: str) -> Callable[[re.Match[str]], str]:
    return lambda m: words(key, **m.groupdict())


def _kinds(text: str) -> str | None:
    """`a whole number from 1 up or a mapping like {key: value}` in the catalogue's words; None: another form."""
    if not _KIND_LIST.match(text):
        return None
    for form, key in _KIND_WORDS:
        text = form.sub(_worded(key), text)
    return text.replace(" or ", words("kind_or")).replace(", ", "、")


def _must_be(m: re.Match[str]) -> str | None:
    kinds = _kinds(m["kinds"])
    return None if kinds is None else words("problem_must_be", name=m["name"], kinds=kinds, got=m["got"])


def _unknown_key(m: re.Match[str]) -> str:
    where = words("problem_in", context=m["context"]) if m["context"] is not None else ""
    return words("problem_unknown_key", key=m["key"], where=where, hint=_hint(m["hint"]))


#: (an English form the loader writes, its words in the catalogue) — the forms are the loader's f-strings
#: (evalspec/config/messages.py, asserts.py, yamlfixes.py, yamlfile.py; evalspec/extend/patterns.py)
_FORMS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str | None]]] = [
    (re.compile("^unknown key " + _Q.format("key") + " for " + _Q.format("name") + _HINT + "$"),
     lambda m: words("problem_unknown_key_for", key=m["key"], name=m["name"], hint=_hint(m["hint"]))),
    (re.compile("^unknown key " + _Q.format("key") + "(?: in " + _Q.format("context") + ")?" + _HINT + "$"), _unknown_key),
    (re.compile("^unknown assertion type " + _Q.format("name") + _HINT + "$"),
     lambda m: words("problem_unknown_type", name=m["name"], hint=_hint(m["hint"]))),
    (re.compile(r"^bad regex (?P<pattern>'.*'|\".*\"): (?P<error>.*)$"),
     lambda m: words("problem_bad_regex", pattern=m["pattern"], error=_regex_error(m["error"]))),
    (re.compile("^full-width colon '：' after " + _Q.format("key") + ": YAML needs an ASCII colon and a space — write "
                "'(?P<fixed>.*)'$"),
     lambda m: words("problem_fullwidth_colon", key=m["key"], fixed=m["fixed"])),
    (re.compile("^full-width spaces '　' in the indentation of '(?P<line>.*)': YAML indents with ASCII spaces only — "
                r"replace them with spaces \((?P<n>\d+) spaces line it up as it looks\)$"),
     lambda m: words("problem_fullwidth_spaces", line=m["line"], n=m["n"])),
    (re.compile("^no space after '(?P<key>[^']*):': YAML reads '(?P<joined>.*)' as one text — write a space after the "
                "colon: '(?P<fixed>.*)'$"),
     lambda m: words("problem_no_space", key=m["key"], joined=m["joined"], fixed=m["fixed"])),
    (re.compile("^'(?P<item>.*)' is one item: the full-width comma '，' does not separate list items — write "
                r"(?P<fixed>\[.*\]), or quote it if the comma is part of the text: (?P<quoted>\[.*\])$"),
     lambda m: words("problem_fullwidth_comma_item", item=m["item"], fixed=m["fixed"], quoted=m["quoted"])),
    (re.compile(r"^would check nothing: its source has no rule and the suite no `defaults:` rules; give --expect-state, "
                r"add rules under defaults: \(or --allow-empty writes it anyway\)$"),
     lambda m: words("problem_checks_nothing")),
    # the notes of `import transcripts` (evalspec/authoring/importers/transcripts.py)
    (re.compile(r"^no system under test in the source: edit (?P<stub>\S+) or the providers entry$"),
     lambda m: words("note_no_provider", stub=m["stub"])),
    (re.compile(r"^the tests check nothing yet: add rules under defaults: or give --expect-state$"),
     lambda m: words("note_checks_nothing")),
    (re.compile("^label " + _Q.format("label") + r" does not exist(?P<hint>(?: \(did you mean '[^']*'\?\))?)"
                r"(?:; labels in this test: (?P<labels>.*))?$"),
     lambda m: words("problem_no_label", label=m["label"], hint=_hint(m["hint"]),
                     known=words("problem_labels_here", labels=m["labels"]) if m["labels"] else "")),
    (re.compile("^unknown severity " + _Q.format("value") + r"(?P<hint>(?: \(did you mean '[^']*'\?\))?); valid: (?P<valid>.*)$"),
     lambda m: words("problem_severity", value=m["value"], hint=_hint(m["hint"]), valid=m["valid"])),
    (re.compile(r"^(?P<name>[\w.\-\[\] ]+?) must be at (?P<side>least|most) (?P<value>\S+), got (?P<got>.+)$"),
     lambda m: words(f"problem_at_{m['side']}", name=m["name"], value=m["value"], got=m["got"])),
    (re.compile(r"^(?P<name>[\w.\-\[\] ]+?) must be (?P<kinds>.+), got (?P<got>.+)$"), _must_be),
]


def message_text(message: str) -> str:
    """One problem's message in the language being spoken (an unknown form: its "did you mean" only)."""
    if current() == "en":
        return message
    for form, said in _FORMS:
        if (m := form.match(message)) and (text := said(m)) is not None:
            return text
    return _DID_YOU_MEAN.sub(lambda m: words("problem_did_you_mean", choice=m["choice"]), message)


def problem_text(problem: Problem) -> str:
    """`FILE:LINE: PATH: MESSAGE`, as `str(problem)`, its message in the language being spoken."""
    test = _TEST_PATH.match(problem.path) if current() != "en" else None
    path = words("problem_path_test", id=test["id"]) if test else problem.path
    return str(Problem(problem.file, problem.line, path, message_text(problem.message)))
