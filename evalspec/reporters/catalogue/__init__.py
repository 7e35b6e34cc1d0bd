"""One catalogue per language for every fixed word on every screen (docs/en/reports-and-gate.md#language), and the choice of
language: `--lang`, else the first suite's `report: {lang:}`, else `EVALSPEC_LANG`, else Chinese when
most of the run's first `LANG_SAMPLE` user turns are Chinese (a turn is Chinese when most of its letters
are CJK).

run.json stays language-neutral: reporters choose the language when they render, so any old run
re-renders in either language. `words(key, **fields)` reads the language set by `speaking(lang)`."""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

from evalspec.core.text import chinese_turn as chinese_turn  # the language predicate, re-exported
from evalspec.core.text import mostly_chinese
from evalspec.reporters.catalogue import en, zh

LANGS = ("zh", "en")
CATALOGUES: dict[str, dict[str, str]] = {"en": en.WORDS, "zh": zh.WORDS}
#: the run's user turns read to guess its language: the first ones (docs/en/reports-and-gate.md#language), so
#: that the summary of a run of a million conversations does not read every record back from disk
LANG_SAMPLE = 1000
_LANG: contextvars.ContextVar[str] = contextvars.ContextVar("evalspec_report_lang", default="en")


def words(key: str, /, **fields: Any) -> str:
    """The fixed text `key` in the language being spoken, its `{fields}` filled."""
    text = CATALOGUES[_LANG.get()][key]
    return text.format(**fields) if fields else text


def word(key: str, default: str | None = None) -> str:
    """A word that may not be in the catalogue (a status from a newer run.json): `default` (else itself)
    when it is not."""
    return CATALOGUES[_LANG.get()].get(key, key if default is None else default)


def reason_text(reason: str | None, reason_zh: str | None) -> str:
    """A check's reason in the language being spoken: run.json's `reason_zh` in Chinese (when the run has
    it), else `reason`."""
    return str(reason_zh if _LANG.get() == "zh" and reason_zh else reason or "")


def current() -> str:
    return _LANG.get()


@contextlib.contextmanager
def speaking(lang: str) -> Iterator[None]:
    token = _LANG.set(lang if lang in CATALOGUES else "en")
    try:
        yield
    finally:
        _LANG.reset(token)


def guess_lang(user_turns: Iterable[str]) -> str:
    return "zh" if mostly_chinese(user_turns) else "en"


def run_user_turns(run: Mapping[str, Any]) -> Iterator[str]:
    """The run's user turns, record by record (a streamed run's records are read as they are reached)."""
    for record in run.get("results") or []:
        for m in record.get("transcript") or []:
            if m.get("role") == "user" and not m.get("filler"):
                yield str(m.get("content") or "")


def planned_user_texts(suites: Iterable[Any]) -> Iterator[str]:
    """What the user will say, before a run (config.model.Suite objects): written user turns; for a test
    without any, its attacker's goal or its simulated user's opening, persona, goal, instructions and
    milestones (their transcripts
    will speak that language, and the summary is chosen from the transcripts)."""
    for suite in suites:
        from evalspec.config.recorded import recorded_user_texts  # (not for no suite: `--help`, `--version`)

        yield from recorded_user_texts(suite)  # a suite of recorded logs speaks its users' language
        for test in suite.tests:
            written = [t.text for t in test.conversation if t.kind == "user" and isinstance(t.text, str)]
            yield from written
            if not written:
                plan = test.attack or test.simulate
                if plan is not None:
                    steps = [str(m.get("goal") or m.get("user") or "") for m in getattr(plan, "milestones", None) or []
                             if isinstance(m, Mapping)]
                    yield " ".join(str(x) for x in (getattr(plan, "opening", None), getattr(plan, "persona", None),
                                                    plan.goal, getattr(plan, "instructions", None), *steps) if x)


def suite_lang(suites: Iterable[Mapping[str, Any]]) -> str | None:
    """The first suite's `report.lang` (it wins over the others)."""
    for s in suites:
        lang = (s.get("report") or {}).get("lang")
        if lang in CATALOGUES:
            return str(lang)
    return None


def choose_lang(run: Mapping[str, Any] | None = None, override: str | None = None, *, suites: Iterable[Any] = (),
                declared: str | None = None, texts: Iterable[str] = ()) -> str:
    """The language of every screen, the one rule for every command and page (docs/en/reports-and-gate.md#language):
    `--lang` (`override`), else the first suite's `report: {lang}` (of the run, else of the loaded `suites`,
    else `declared`: a `lang:` line of files that may not load), else `EVALSPEC_LANG`, else the user turns
    (the run's first `LANG_SAMPLE`, the suites', or `texts`: imported conversations, the files being
    validated), else the system locale (`LANG` starting with `zh`)."""
    if override in CATALOGUES:
        return str(override)
    suites = list(suites)
    chosen = suite_lang((run or {}).get("suites") or []) or next(
        (str(s.report_lang) for s in suites if getattr(s, "report_lang", None) in CATALOGUES), None) or (
        declared if declared in CATALOGUES else None)
    env = os.environ.get("EVALSPEC_LANG")
    if chosen or env in CATALOGUES:
        return str(chosen or env)
    first = islice((t for t in run_user_turns(run or {}) if t.strip()), LANG_SAMPLE)  # only these are read
    said = [t for t in [*first, *planned_user_texts(suites), *texts] if t.strip()]
    if said:
        return guess_lang(said)
    return "zh" if (os.environ.get("LC_ALL") or os.environ.get("LANG") or "").lower().startswith("zh") else "en"


def use(lang: str) -> None:
    """Speak `lang` for the rest of this command (inside the `speaking` block the command line opens)."""
    _LANG.set(lang if lang in CATALOGUES else "en")
