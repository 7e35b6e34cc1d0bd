"""'did you mean ...' suggestions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib  # for a mistake only

    names = list(choices)
    matches = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    if not matches and names and 2 <= len(word) <= 4:  # one slip in a short name (`问提` for `问题`) leaves it only 0.5 alike
        from evalspec.core.text import levenshtein

        matches = [name for name in difflib.get_close_matches(word, names, n=len(names), cutoff=0.3)
                   if len(name) >= 2 and levenshtein(word, name) == 1][:1]
    return f" (did you mean '{matches[0]}'?)" if matches else ""


def slugify(text: str) -> str:
    """A test id from its name: Unicode letters and digits kept, everything else folded to '-'."""
    import regex

    slug = regex.sub(r"[^\p{L}\p{N}]+", "-", text.strip().lower()).strip("-")
    return slug or "test"


def unknown_key(err: Any) -> tuple[str, str] | None:
    """For a jsonschema `additionalProperties` error: (the first unknown key, its 'did you mean' hint)."""
    if err.validator != "additionalProperties" or not isinstance(err.instance, dict):
        return None
    schema = err.schema if isinstance(err.schema, dict) else {}
    known = list((schema.get("properties") or {}).keys())
    extra = [k for k in err.instance if k not in known]
    return (str(extra[0]), did_you_mean(str(extra[0]), known)) if extra else None
