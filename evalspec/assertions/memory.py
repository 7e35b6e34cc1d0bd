"""Memory and reference: exact, fuzzy and partial-credit recall of facts; coreference."""

from __future__ import annotations

from typing import Any

import regex

from evalspec.assertions.base import Check, Evidence, GradingContext, Reply, snippet
from evalspec.assertions.registry import assertion, threshold_of
from evalspec.config.model import AssertionSpec

ALIASES = {"anyOf": [{"type": ["string", "number"]}, {"type": "array", "items": {"type": ["string", "number"]}, "minItems": 1}]}
CJK_RUN = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]{2,}")
LATIN_WORD = regex.compile(r"[\p{Latin}\p{N}]{3,}")
WORD_CHAR = r"[\p{Latin}\p{N}_]"


def _aliases(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(v) for v in items if str(v).strip()]


def mentions(text: str, alias: str) -> str | None:
    """The text where `alias` appears in `text` (case-insensitive; Latin words on word boundaries)."""
    pattern = regex.escape(alias.strip())
    if regex.match(WORD_CHAR, alias.strip()):
        pattern = f"(?<!{WORD_CHAR})" + pattern
    if regex.search(WORD_CHAR + "$", alias.strip()):
        pattern += f"(?!{WORD_CHAR})"
    found = regex.search(pattern, text, regex.IGNORECASE)
    return str(found.group(0)) if found else None


def fuzzy_mention(text: str, alias: str) -> str | None:
    """A run of >= 2 consecutive CJK characters of `alias`, or one of its Latin words of >= 3 letters."""
    for run in CJK_RUN.findall(alias):
        for size in range(len(run), 1, -1):
            for start in range(len(run) - size + 1):
                piece = str(run[start:start + size])
                if piece in text:
                    return piece
    for word in LATIN_WORD.findall(alias):
        hit = mentions(text, word)
        if hit:
            return hit
    return None


def recall_key(text: str, expected: Any, fuzzy: bool, partial: float) -> tuple[float, str, str]:
    """(score, matched text, how) for one remembered fact."""
    aliases = _aliases(expected)
    for alias in aliases:
        hit = mentions(text, alias)
        if hit:
            return 1.0, hit, "exact"
    if fuzzy:
        for alias in aliases:
            hit = fuzzy_mention(text, alias)
            if hit:
                return partial, hit, "fuzzy"
    return 0.0, "", "missing"


@assertion("memory-recall", value={"type": "object", "minProperties": 1, "additionalProperties": ALIASES},
           options={"fuzzy": {"type": "boolean", "default": True},
                    "partial_credit": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5}},
           default_threshold=1.0)
def memory_recall(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Each remembered fact scores 1 (exact), partial credit (fuzzy) or 0; score = mean."""
    fuzzy = bool(spec.options.get("fuzzy", True))
    partial = float(spec.options.get("partial_credit", 0.5))
    scores: dict[str, float] = {}
    evidence: list[Evidence] = []
    facts = []
    for key, expected in spec.value.items():
        score, hit, how = recall_key(reply.text, expected, fuzzy, partial)
        scores[key] = score
        facts.append({"key": key, "expected": _aliases(expected), "found": hit or None, "how": how, "score": score})
        # evidence is what the reply said (the hit), never the expected value standing in for it
        evidence.append(Evidence(reply.turn, hit, f"{key}: {how}") if hit
                        else Evidence(reply.turn, snippet(reply.text), f"{key}: missing"))
    total = sum(scores.values()) / len(scores)
    threshold = threshold_of(spec)
    parts = ", ".join(f"{f['key']} {'found ' + repr(f['found']) if f['found'] else 'not found'}"
                      + (f" (partial: expected {'/'.join(f['expected'])})" if f["how"] == "fuzzy" else "")
                      for f in facts)
    return Check(total >= threshold, total, f"recall {total:.2f}: {parts}", evidence,
                 {"keys": scores, "facts": facts})


@assertion("refers-to", value={"anyOf": [
    {"type": "object", "required": ["expected"], "additionalProperties": False,
     "properties": {"expected": ALIASES, "not": ALIASES}},
    ALIASES,
]})
def refers_to(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply names the right entity (an alias) and none of the distractors."""
    value = spec.value if isinstance(spec.value, dict) else {"expected": spec.value}
    expected, distractors = _aliases(value["expected"]), _aliases(value.get("not", []))
    hit = next((h for a in expected if (h := mentions(reply.text, a))), None)
    wrong = [h for d in distractors if (h := mentions(reply.text, d))]
    details = {"entity": {"expected": expected, "not": distractors, "found": hit, "distractors": wrong}}
    want = " or ".join(expected)
    if wrong:
        return Check(False, 0.0, f"expected {want}, but the reply names {wrong[0]}",
                     [Evidence(reply.turn, w, "distractor") for w in wrong], details)
    if not hit:
        return Check(False, 0.0, f"expected {want}, but the reply names neither",
                     [Evidence(reply.turn, snippet(reply.text), "missing")], details)
    return Check(True, 1.0, f"names {hit}", [Evidence(reply.turn, hit)], details)


CLARIFY_PHRASES = regex.compile(
    r"请问|具体|哪一?[个种款位天辆]|您是指|你是指|是指|能否|可以说明|能说一下|确认一下|还是|"
    r"\b(which|clarify|do you mean|could you|can you specify|what do you mean|more details?|specify)\b",
    regex.IGNORECASE,
)


@assertion("asks-clarification", value={"type": ["boolean", "null", "object"]}, value_required=False,
           options={"mode": {"enum": ["judge", "heuristic"], "default": "judge"},
                    "rubric": {"type": "string"}, "samples": {"type": "integer", "minimum": 1, "maximum": 15}},
           needs="judge")
async def asks_clarification(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply asks the user to clarify (judge; `mode: heuristic` uses ? and phrases)."""
    if spec.options.get("mode") == "heuristic":
        question = "?" in reply.text or "？" in reply.text
        phrase = CLARIFY_PHRASES.search(reply.text)
        score = (0.5 if question else 0.0) + (0.5 if phrase else 0.0)
        shown = phrase.group(0) if phrase else snippet(reply.text, 80)
        return Check(score >= 1.0, score, f"question mark: {question}, clarifying phrase: {bool(phrase)}",
                     [Evidence(reply.turn, shown)])
    from evalspec.assertions.graded import judge_reply

    return await judge_reply(
        spec, ctx, reply,
        spec.options.get("rubric") or "The assistant's reply asks the user a question to clarify an ambiguous "
        "or underspecified request instead of guessing.")
