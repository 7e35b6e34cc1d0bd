"""Text helpers that treat Chinese and English alike, and the JSON found in a model's or bot's answer."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import regex

CJK_CHAR = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")
LATIN_WORD = regex.compile(r"[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*")
JSON_FENCE = regex.compile(r"```(?:json)?\s*([\[{].*?[\]}])\s*```", regex.DOTALL)
# C0/C1 controls (ESC starts terminal sequences) and bidi overrides; tab and newline are kept
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: object) -> str:
    """Nothing from the system under test can act on the reader's terminal (docs/en/reports-and-gate.md#errors-and-failures)."""
    return CONTROL.sub("", str(text))


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return 0x3400 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x3FFFF


def chinese_turn(text: str) -> bool:
    """Most of its letters are CJK (digits, punctuation and spaces are not letters)."""
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and sum(map(_is_cjk, letters)) * 2 > len(letters)


def mostly_chinese(turns: Iterable[str]) -> bool:
    """Most of the (non-blank) turns are Chinese: the language rule of every screen
    (docs/en/reports-and-gate.md#language)."""
    said = [t for t in turns if t.strip()]
    return bool(said) and sum(map(chinese_turn, said)) * 2 > len(said)


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


# -- normalization for red lines (docs/en/suite-format.md#normalize) ------------------------------------
NORMALIZERS = ("nfkc", "digits", "casefold")  # the order they apply in, whatever order they are written in
_GRAPHEME = regex.compile(r"\X")
# spaces on the line (U+3000 included; not line breaks), hyphens and dashes, and dots, between two digits
_DIGIT_GAP = regex.compile(r"(?<=\d)[\t \u00a0\u1680\u2000-\u200b\u202f\u205f\u3000"
                           r"\-\u2010-\u2015\u2212\uff0d.\uff0e]+(?=\d)")


@dataclass(frozen=True)
class Normalized:
    """A reply as the checks read it (`text`), and where each of its characters came from in the reply as
    written (`original[starts[i]:ends[i]]`; None: the text is the original), so evidence quotes what the
    bot actually said."""

    text: str
    original: str
    starts: tuple[int, ...] | None = None
    ends: tuple[int, ...] | None = None

    def source(self, start: int, end: int) -> str:
        """The original text behind `text[start:end]`."""
        if self.starts is None or self.ends is None:
            return self.original[start:end]
        return self.original[self.starts[start]:self.ends[end - 1]] if end > start else ""


def normalizer_names(given: str | Iterable[str] | None) -> tuple[str, ...]:
    """`normalize:` as written (a name, a list or nothing) -> the names in the order they apply."""
    names = {given} if isinstance(given, str) else set(given or ())
    return tuple(n for n in NORMALIZERS if n in names)


def normalized(text: str, names: str | Iterable[str] | None) -> Normalized:
    """The one owner of `normalize:`: `nfkc` (full-width letters and every script's digits to ASCII), then `digits`
    (spaces, hyphens and dots between two digits removed), then `casefold`, keeping the way back to the
    reply as written."""
    order = normalizer_names(names)
    if not order:
        return Normalized(text, text)
    pieces: list[tuple[str, int, int]] = [(ch, i, i + 1) for i, ch in enumerate(text)]
    if "nfkc" in order:  # per grapheme cluster: the same text as NFKC of the whole, with its origins
        pieces = [(ch, start, end) for chunk, start, end in _per_cluster(
            text, lambda cluster: _ascii_digits(unicodedata.normalize("NFKC", cluster))) for ch in chunk]
    if "digits" in order:
        joined = "".join(p[0] for p in pieces)
        dropped = {i for m in _DIGIT_GAP.finditer(joined) for i in range(m.start(), m.end())}
        pieces = [p for i, p in enumerate(pieces) if i not in dropped]
    if "casefold" in order:
        pieces = [(ch.casefold(), start, end) for ch, start, end in pieces]
    starts = tuple(start for chunk, start, _ in pieces for _ in chunk)
    ends = tuple(end for chunk, _, end in pieces for _ in chunk)
    return Normalized("".join(p[0] for p in pieces), text, starts, ends)


def _ascii_digits(text: str) -> str:
    """Every script's decimal digits as ASCII (`١٣٩`, `१३९`, `𝟏𝟑𝟗` → `139`): NFKC leaves most of them."""
    return "".join(str(unicodedata.decimal(ch)) if not ch.isascii() and unicodedata.decimal(ch, None) is not None
                   else ch for ch in text)


def _per_cluster(text: str, fn: Callable[[str], str]) -> list[tuple[str, int, int]]:
    return [(fn(m.group(0)), m.start(), m.end()) for m in _GRAPHEME.finditer(text)]


def normalize(text: str, names: str | Iterable[str] | None) -> str:
    """`text` as a check with `normalize: names` reads it."""
    return normalized(text, names).text if names else text
