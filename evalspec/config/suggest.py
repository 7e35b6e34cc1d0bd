"""'did you mean ...' suggestions."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{matches[0]}'?)" if matches else ""


def slugify(text: str) -> str:
    """A test id from its name: Unicode letters and digits kept, everything else folded to '-'."""
    import regex

    slug = regex.sub(r"[^\p{L}\p{N}]+", "-", text.strip().lower()).strip("-")
    return slug or "test"
