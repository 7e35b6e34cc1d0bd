"""Memory and reference: exact, fuzzy and partial-credit recall of facts; coreference."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

import regex

from evalspec.config.model import AssertionSpec
from evalspec.extend.check import Check, Evidence, GradingContext, Reply, Said, say, snippet
from evalspec.extend.params import Key, Keywords, Option
from evalspec.extend.registry import assertion, threshold_of

Alias = str | float
Aliases = Alias | Annotated[list[Alias], Keywords(minItems=1)]  # one name, or several for the same thing


@dataclass(frozen=True)
class RecallParams:
    value_field: ClassVar[str] = "facts"
    facts: Annotated[dict[str, Aliases], Keywords(minProperties=1)]
    fuzzy: Annotated[bool, Option()] = True
    partial_credit: Annotated[float, Option(), Keywords(minimum=0, maximum=1)] = 0.5


@dataclass(frozen=True)
class RefersParams:
    short_field: ClassVar[str] = "expected"
    short_first: ClassVar[bool] = False
    expected: Aliases
    distractors: Annotated[Aliases | None, Key("not")] = None


@dataclass(frozen=True)
class ClarifyParams:
    value_field: ClassVar[str] = "enabled"
    enabled: bool | None | dict[str, Any] = None
    mode: Annotated[Literal["judge", "heuristic"], Option()] = "judge"
    rubric: Annotated[str | None, Option()] = None
    samples: Annotated[int | None, Option(), Keywords(minimum=1, maximum=15)] = None
    levels: None = field(default=None, init=False)  # a judged check without graded levels or reference
    reference: None = field(default=None, init=False)

    def uses_model(self) -> bool:
        return self.mode == "judge"
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


@assertion("memory-recall", params=RecallParams, default_threshold=1.0,
           example=("- memory-recall: {name: 张三, city: [北京, Beijing]}\n"
                    "  partial_credit: 0.5"))
def memory_recall(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Each remembered fact scores 1 (exact), partial credit (fuzzy) or 0; score = mean."""
    p: RecallParams = spec.params
    scores: dict[str, float] = {}
    evidence: list[Evidence] = []
    facts: list[dict[str, Any]] = []
    for key, expected in p.facts.items():
        score, hit, how = recall_key(reply.text, expected, p.fuzzy, p.partial_credit)
        scores[key] = score
        facts.append({"key": key, "expected": _aliases(expected), "found": hit or None, "how": how, "score": score})
        # evidence is what the reply said (the hit), never the expected value standing in for it
        evidence.append(Evidence(reply.turn, hit, f"{key}: {how}") if hit
                        else Evidence(reply.turn, snippet(reply.text), f"{key}: missing"))
    total = sum(scores.values()) / len(scores)
    threshold = threshold_of(spec)
    parts = [say("fact_found" if f["found"] else "fact_missing", key=f["key"], found=repr(f["found"]),
                 partial=say("fact_partial", expected="/".join(f["expected"])) if f["how"] == "fuzzy" else say("empty"))
             for f in facts]
    listed = Said(", ".join(x.en for x in parts), "，".join(x.zh for x in parts))
    return Check.of(total >= threshold, say("recall", score=f"{total:.2f}", facts=listed), evidence, score=total,
                    details={"keys": scores, "facts": facts})


@assertion("refers-to", params=RefersParams,
           example="- refers-to: {expected: [瑶光], not: [追风]}")
def refers_to(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply names the right entity (an alias) and none of the distractors."""
    p: RefersParams = spec.params
    expected, distractors = _aliases(p.expected), _aliases(p.distractors or [])
    hit = next((h for a in expected if (h := mentions(reply.text, a))), None)
    wrong = [h for d in distractors if (h := mentions(reply.text, d))]
    details = {"entity": {"expected": expected, "not": distractors, "found": hit, "distractors": wrong}}
    want = " or ".join(expected)
    if wrong:
        return Check.of(False, say("refers_wrong", want=want, found=wrong[0]),
                        [Evidence(reply.turn, w, "distractor") for w in wrong], details=details)
    if not hit:
        return Check.of(False, say("refers_neither", want=want),
                        [Evidence(reply.turn, snippet(reply.text), "missing")], details=details)
    return Check.of(True, say("refers_names", found=hit), [Evidence(reply.turn, hit)], details=details)


CLARIFY_PHRASES = regex.compile(
    r"请问|具体|哪一?[个种款位天辆]|您是指|你是指|是指|能否|可以说明|能说一下|确认一下|还是|"
    r"\b(which|clarify|do you mean|could you|can you specify|what do you mean|more details?|specify)\b",
    regex.IGNORECASE,
)


@assertion("asks-clarification", params=ClarifyParams, needs="judge",
           example=("- asks-clarification:\n"
                    "  mode: heuristic      # question marks and phrases, no judge"))
async def asks_clarification(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply asks the user to clarify (judge; `mode: heuristic` uses ? and phrases)."""
    p: ClarifyParams = spec.params
    if p.mode == "heuristic":
        question = "?" in reply.text or "？" in reply.text
        phrase = CLARIFY_PHRASES.search(reply.text)
        score = (0.5 if question else 0.0) + (0.5 if phrase else 0.0)
        shown = phrase.group(0) if phrase else snippet(reply.text, 80)
        return Check.of(score >= 1.0, say("clarify_heuristic", question=say("yes" if question else "no"),
                                          phrase=say("yes" if phrase else "no")), [Evidence(reply.turn, shown)], score=score)
    from evalspec.assertions.graded import judge_reply

    return await judge_reply(
        spec, ctx, reply,
        p.rubric or "The assistant's reply asks the user a question to clarify an ambiguous "
        "or underspecified request instead of guessing.")
