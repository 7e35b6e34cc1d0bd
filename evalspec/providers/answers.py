"""What a model said on evalspec's behalf: the one reader of every answer a judge, second opinion,
simulated user, attacker or context strategy gives (docs/en/judges.md#how-a-verdict-is-read).

The answer is read in its own words only:

- reasoning (`<think>…</think>`) is dropped;
- a JSON object that also appears in the material shown to the model (the conversation: a user or
  assistant message or a tool result, with the same keys and values however spaced) is quoted material,
  never an answer, wherever it stands;
- an object whose strings are placeholders (`...`, `…`, empty, `<reason>`) is a format example;
- of the rest, the last object with the requested keys is the answer; an earlier one that disagrees (and
  is not quoted by its position: a code fence, a `>` line, a quotation mark) makes the answer an error.

No answer of its own (prose only, only quoted objects, only a format example) is a refusal: a
GradingError. A simulated user's or an attacker's answer that holds no object at all may be plain text
(`plain_text`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalspec.core.errors import GradingError

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
# a format example's values: `...`, `…`, empty, `<reason>`
_PLACEHOLDER = re.compile(r"\s*(?:\.{2,}|…+|<[^<>]*>)?\s*", re.DOTALL)
_QUOTES = "\"'“‘「『«`"
_PAIRS = {'"': '"', "'": "'", "“": "”", "‘": "’", "「": "」", "『": "』", "«": "»", "`": "`"}
# where a chat template starts another turn: a small model that runs past its own turn writes these
_TURN_MARKER = re.compile(r"<\|[A-Za-z_]+\|>|</?s>|\[/?INST\]|<(?:start|end)_of_turn>|<[be]os>", re.IGNORECASE)
_NESTING = 4  # JSON written inside a string inside JSON (a tool result), this many levels deep


def answer_text(text: str) -> str:
    """The answer without its reasoning: `<think>…</think>` blocks dropped, the text after a lone closing
    tag (a template that opened the block itself), nothing from an opening tag never closed."""
    text = _THINK.sub(" ", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end():]
    opened = _THINK_OPEN.search(text)
    return text[:opened.start()] if opened else text


class Twice(dict[str, object]):
    """An object that gives one key twice with different values (`{"pass": false, "pass": true}`): the
    last value stands, as JSON readers take it, and `twice` names the keys said both ways."""

    twice: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, object]:
    value: dict[str, object] = {}
    twice: list[str] = []
    for key, item in pairs:
        if key in value and _key(value[key]) != _key(item):
            twice.append(key)
        value[key] = item
    if not twice:
        return value
    marked = Twice(value)
    marked.twice = tuple(twice)
    return marked


def json_objects(text: str) -> list[tuple[int, int, dict[str, object]]]:
    """(start, end, object) of every outermost JSON object in `text`."""
    # a raw newline inside a string (small models write them) is text
    decoder = json.JSONDecoder(strict=False, object_pairs_hook=_pairs)
    found = []
    i = text.find("{")
    while i != -1:
        try:
            value, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict):
            found.append((i, end, value))
        i = text.find("{", end)
    return found


def _key(value: Any) -> str:
    """One spelling of a JSON value: the same keys and values are the same key, however spaced or ordered."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class Shown:
    """The JSON objects in the material a model was shown (every message: content, parts, tool calls and
    results), nested ones and JSON written inside their strings included: what the model may quote."""

    def __init__(self, messages: Iterable[Mapping[str, Any]] = ()) -> None:
        self._keys: set[str] = set()
        for message in messages:
            self._collect(dict(message), 0)

    def _collect(self, value: Any, depth: int) -> None:
        if isinstance(value, dict):
            self._keys.add(_key(value))
            for item in value.values():
                self._collect(item, depth)
        elif isinstance(value, list):
            for item in value:
                self._collect(item, depth)
        elif isinstance(value, str) and "{" in value and depth < _NESTING:
            for _, _, found in json_objects(value):
                self._collect(found, depth + 1)

    def quotes(self, value: dict[str, object]) -> bool:
        """True when `value` appears in the material shown: the model quoted it, it did not say it."""
        return _key(value) in self._keys


def is_format_example(value: dict[str, object]) -> bool:
    """An object with a placeholder string (`...`, `…`, empty, `<reason>`) shows the format; it decides nothing."""
    strings = [v for v in value.values() if isinstance(v, str)]
    strings += [x for v in value.values() if isinstance(v, list) for x in v if isinstance(x, str)]
    return any(_PLACEHOLDER.fullmatch(s) for s in strings)


def quoted_by_position(text: str, start: int) -> bool:
    """Inside a code fence, a `>` quote line, or right after a quotation mark or backtick: shown, not said."""
    if text.count("```", 0, start) % 2:
        return True
    line = text[text.rfind("\n", 0, start) + 1:start]
    if line.lstrip().startswith(">"):
        return True
    before = text[:start].rstrip(" \t")
    return bool(before) and before[-1] in _QUOTES


def decision(value: dict[str, object], keys: Sequence[str]) -> dict[str, object]:
    """What an answer decides: its requested keys but `reason` (two answers agree when these agree)."""
    return {k: value.get(k) for k in (keys or value) if k != "reason"}


def schema_keys(schema: Mapping[str, object] | None) -> list[str]:
    """The keys an answer must hold: the schema's `required`, else its `properties`."""
    schema = schema or {}
    keys = schema.get("required") or schema.get("properties") or []
    return [str(k) for k in keys] if isinstance(keys, (list, dict)) else []


def own_objects(text: str, shown: Shown) -> list[tuple[int, int, dict[str, object]]]:
    """The objects of an answer (`answer_text` already applied) that are not quoted from `shown`."""
    return [(s, e, v) for s, e, v in json_objects(text) if not shown.quotes(v)]


def read_answer(text: str, schema: dict[str, object] | None, *, shown: Shown, role: str = "judge") -> dict[str, object]:
    """The model's answer: the last JSON object of its own words that has the keys `schema` requires (prose
    may follow it). Reasoning, objects quoted from `shown`, format examples, and drafts quoted by position
    before it are ignored; no answer of its own, or two that disagree, is a GradingError."""
    answer = answer_text(text)
    excerpt = text.strip()[:200]
    keys = schema_keys(schema)
    objects = json_objects(answer)
    shaped = [(s, e, v) for s, e, v in objects if all(k in v for k in keys)]
    own = [(s, e, v) for s, e, v in shaped if not shown.quotes(v)]
    answers = [(s, e, v) for s, e, v in own if not is_format_example(v)]
    if not answers:
        wanted = f" with {', '.join(keys)}" if keys else ""
        partial = [v for _, _, v in objects if not shown.quotes(v) and not is_format_example(v)]
        if partial and not shaped:  # an answer of its own, short of a key it was asked for: not a refusal
            missing = [k for k in keys if k not in partial[-1]]
            raise GradingError(f"{role} answer has no {', '.join(map(repr, missing))} (it was asked for "
                               f"{', '.join(keys)}): {excerpt!r}")
        what = "only a format example (placeholder values), no answer" if own else \
            "only material quoted from the conversation it was shown, no answer of its own" if shaped else \
            f"not {'a JSON verdict' if role == 'judge' else 'JSON'} (no object{wanted})"
        raise GradingError(f"{role} answer is {what}: a refusal: {excerpt!r}")
    for _, _, value in answers:
        said_twice = [k for k in value.twice if k in keys or not keys] if isinstance(value, Twice) else []
        if said_twice:
            raise GradingError(f"{role} answer gives {', '.join(map(repr, said_twice))} twice with different "
                               f"values, two verdicts that disagree: {excerpt!r}")
    chosen = answers[-1][2]
    decided = decision(chosen, keys)
    for s, _, other in answers[:-1]:
        if not quoted_by_position(answer, s) and decision(other, keys) != decided:
            raise GradingError(f"{role} answer holds two verdicts that disagree "
                               f"({json.dumps(decision(other, keys), ensure_ascii=False)} then "
                               f"{json.dumps(decided, ensure_ascii=False)}): {excerpt!r}")
    return dict(chosen)


def plain_text(text: str, schema: dict[str, object] | None, *, shown: Shown) -> str | None:
    """A simulated user's or an attacker's answer written as plain text: the text after any `<think>`
    block, without surrounding quotes (may be empty). None when the answer is not plain text: it holds an
    object of its own (or starts one the token cap cut short), quotes an object with the requested keys
    (a refusal, as for a judge), or is a format example (`...`, `<message>`)."""
    said = answer_text(text).strip()
    keys = schema_keys(schema)
    if said.startswith("{") or any(not shown.quotes(v) or all(k in v for k in keys) for _, _, v in json_objects(said)):
        return None
    while len(said) >= 2 and _PAIRS.get(said[0]) == said[-1]:
        said = said[1:-1].strip()
    if said and _PLACEHOLDER.fullmatch(said):
        return None
    return said


def within_turn(message: str) -> str:
    """A simulated user's or an attacker's message up to the first chat-template turn marker (`<s>`,
    `[INST]`, `<start_of_turn>`, `<|im_start|>` …): what follows was written past its own turn."""
    marker = _TURN_MARKER.search(message)
    return (message[:marker.start()] if marker else message).strip()
