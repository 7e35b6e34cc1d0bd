from dataclasses import dataclass

from evalspec import Check, Evidence, assertion


@dataclass
class PoliteParams:
    """Polite words the reply should use."""

    words: list[str]
    min: int = 1


@assertion("polite-words", params=PoliteParams)
def polite_words(reply, spec, ctx):
    """The reply uses at least `min` of the polite words."""
    p = spec.params
    found = [w for w in p.words if w in reply.text]
    return Check.of(len(found) >= p.min, f"found {found}", [Evidence(reply.turn, reply.text)])
