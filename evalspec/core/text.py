"""Text helpers that treat Chinese and English alike, and the JSON found in a model's or bot's answer."""

from __future__ import annotations

import json
import re
from typing import Any

import regex

CJK_CHAR = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")
LATIN_WORD = regex.compile(r"[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*")
JSON_FENCE = regex.compile(r"```(?:json)?\s*([\[{].*?[\]}])\s*```", regex.DOTALL)
# C0/C1 controls (ESC starts terminal sequences) and bidi overrides; tab and newline are kept
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: object) -> str:
    """Nothing from the system under test can act on the reader's terminal (SPEC §8)."""
    return CONTROL.sub("", str(text))


def count_words(text: str) -> int:
    """Latin words count one each, and so does every CJK character."""
    cjk = len(CJK_CHAR.findall(text))
    rest = CJK_CHAR.sub(" ", text)
    return cjk + len(LATIN_WORD.findall(rest))


def levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def find_json(text: str, objects_only: bool = False) -> tuple[bool, Any]:
    """(found, value): the JSON in `text` — the whole text, else a ```json fenced block, else the first
    `{` (or `[`) from which a value parses. `objects_only`: only a JSON object counts (a judge's verdict).
    The one reader of JSON inside prose: `contains-json`, `jmespath`, judges, attackers, history models."""
    wanted: tuple[type, ...] = (dict,) if objects_only else (dict, list)
    try:
        value = json.loads(text.strip())
        if not objects_only or isinstance(value, dict):
            return True, value
    except ValueError:
        pass
    for block in JSON_FENCE.finditer(text):
        try:
            value = json.loads(block.group(1))
        except ValueError:
            continue
        if isinstance(value, wanted):
            return True, value
    decoder = json.JSONDecoder()
    starts = "{" if objects_only else "{["
    for i, ch in enumerate(text):
        if ch in starts:
            try:
                value = decoder.raw_decode(text, i)[0]
            except ValueError:
                continue
            if isinstance(value, wanted):
                return True, value
    return False, None
