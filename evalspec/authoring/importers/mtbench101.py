"""MT-Bench-101 dialogues as golden-history suites, one per task, every judged turn graded (docs/en/recorded-conversations.md).

One test per dialogue with a matrix over the turns the benchmark judges (`turn: [2, 3]`): instance
`[turn=k]` holds the golden history before turn k (`until_turn`) and sends user turn k, whose reply a
judge grades on the benchmark's 1–10 scale (`levels`); the dialogue's score is the minimum over its
turns (`reduce: min`), as the benchmark reports it. Its per-task rules (opencompass MT-Bench-101): the
first turn of some tasks is not judged, and the reasoning tasks show the judge the golden reply.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from evalspec.authoring.importers import ImportedSuite, literal, plain
from evalspec.authoring.importers.shapes import Check, SuiteTest, SuiteTurn
from evalspec.core.errors import ConfigError, Problem

TASKS: dict[str, tuple[str, str]] = {
    "CM": ("context memory", "The reply correctly recalls and uses information the user gave in earlier turns."),
    "SI": ("separate input", "The reply applies the instruction given in the first turn to the input of the last turn."),
    "AR": ("anaphora resolution", "The reply resolves pronouns and references to the right entities from earlier turns."),
    "TS": ("topic shift", "The reply follows the user's new topic and does not drag in the earlier one."),
    "CC": ("content confusion", "The reply answers the last question itself, not a similar-looking earlier one."),
    "CR": ("content rephrasing", "The reply rephrases the earlier content as asked, keeping its meaning."),
    "FR": ("format rephrasing", "The reply restructures the earlier content into the requested format."),
    "SC": ("self-correction", "After the user points out a real error, the reply corrects it."),
    "SA": ("self-affirmation", "When the user wrongly challenges a correct answer, the reply keeps the correct answer."),
    "MR": ("mathematical reasoning", "The reply's reasoning and final answer to the last math question are correct."),
    "GR": ("general reasoning", "The reply's reasoning and conclusion for the last question are correct."),
    "IC": ("instruction clarification", "When the request is ambiguous, the reply asks a clarifying question."),
    "PI": ("proactive interaction", "The reply engages the user with a relevant question or suggestion."),
}
_NOT_NAME = re.compile(r"[^\w-]")


class Exchange(TypedDict):
    """One exchange of an MT-Bench-101 dialogue."""

    user: str
    bot: str


class Dialogue(TypedDict, total=False):
    """One MT-Bench-101 line, as `read_dialogues` checked it (`history` a non-empty list of exchanges)."""

    task: str
    id: object
    history: list[Exchange]


def read_dialogues(path: Path) -> list[Dialogue]:
    rows, problems = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(str(path), n, "", f"not JSON: {exc.msg}"))
            continue
        history = row.get("history") if isinstance(row, dict) else None
        if not isinstance(history, list) or not history or not all(
                isinstance(t, dict) and isinstance(t.get("user"), str) and isinstance(t.get("bot"), str)
                for t in history):
            problems.append(Problem(str(path), n, "", "expected {task, id, history: [{user, bot}, ...]}"))
            continue
        rows.append(row)
    if problems:
        raise ConfigError(problems)
    return rows


SKIP_FIRST = ("FR", "CR", "AR", "SA", "SC", "CM")  # tasks whose first turn only sets up the dialogue
NEED_REFERENCE = ("MR", "GR")  # tasks judged against the golden reply
LEVELS = {str(n): round((n - 1) / 9, 4) for n in range(10, 0, -1)}  # "10": 1.0 … "1": 0.0


def judged_turns(task: str, turns: int) -> list[int]:
    """The user turns (1-based) MT-Bench-101 judges in a dialogue of this task."""
    return [k for k in range(1, turns + 1) if not (k == 1 and task in SKIP_FIRST)]


def import_mtbench101(path: Path, judge: Any = "openai/gpt-4o-mini") -> list[ImportedSuite]:
    """One suite per task, in the order the tasks first appear."""
    by_task: dict[str, list[Dialogue]] = {}
    for row in read_dialogues(path):
        by_task.setdefault(str(row.get("task") or "unknown"), []).append(row)
    suites = []
    for task, rows in by_task.items():
        title, rubric = TASKS.get(task, (task, "The reply is as good as the reference reply for this conversation."))
        rubric += " Rate the reply from 1 (fails completely) to 10 (meets every criterion)."
        tests: list[SuiteTest] = []
        notes = [] if task in TASKS else [f"task '{task}' is not an MT-Bench-101 task: a generic rubric was used"]
        for row in rows:
            tid = f"{task}-{row.get('id', len(tests) + 1)}"
            turns = judged_turns(task, len(row["history"]))
            if not turns:
                notes.append(f"{tid}: a one-turn dialogue of a task whose first turn is not judged: left out")
                continue
            conversation: list[SuiteTurn] = []
            for k, turn in enumerate(row["history"], 1):  # the dialogue is sent as written
                entry: SuiteTurn = {"user": literal(turn["user"])}
                if k in turns:
                    check: Check = {"llm-rubric": rubric, "levels": dict(LEVELS)}
                    if task in NEED_REFERENCE or task not in TASKS:
                        check["reference"] = plain(turn["bot"])
                    entry["assert"] = [check]
                conversation += [entry, {"assistant": literal(turn["bot"])}]
            tests.append({"id": plain(tid), "tags": plain([task]), "matrix": {"turn": [*turns]}, "reduce": "min",
                          "until_turn": "{{ turn }}", "conversation": conversation})
        if not tests:
            continue
        suites.append(ImportedSuite(
            filename=f"mtbench101-{_NOT_NAME.sub('_', task)}.yaml",  # a task is not a path
            source=path.name, not_converted=notes,
            data={"description": plain(f"MT-Bench-101 {task} ({title}): golden history, every judged turn "
                                       "graded 1–10, the dialogue scored by its lowest turn"),
                  "tags": ["mtbench101"], "judge": judge, "tests": tests}))
    return suites
