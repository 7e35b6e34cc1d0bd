"""Text helpers that treat Chinese and English alike."""

from __future__ import annotations

import regex

CJK_CHAR = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")
LATIN_WORD = regex.compile(r"[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*")


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
