"""MT-Bench-101 dialogues as golden-history suites, one per task.

Every turn but the last is history (`user` + `assistant` with the golden reply); the last user turn is
sent, and a judge grades the reply with the task's rubric, shown the golden last reply as `reference:`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from evalspec.authoring.importers import ImportedSuite, literal, plain
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


def read_dialogues(path: Path) -> list[dict[str, Any]]:
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


def import_mtbench101(path: Path, judge: Any = "openai/gpt-4o-mini") -> list[ImportedSuite]:
    """One suite per task, in the order the tasks first appear."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in read_dialogues(path):
        by_task.setdefault(str(row.get("task") or "unknown"), []).append(row)
    suites = []
    for task, rows in by_task.items():
        title, rubric = TASKS.get(task, (task, "The reply is as good as the reference reply for this conversation."))
        tests: list[dict[str, Any]] = []
        for row in rows:
            conversation: list[dict[str, Any]] = []
            for turn in row["history"][:-1]:  # the dialogue is sent as written (the reference is not rendered)
                conversation += [{"user": literal(turn["user"])}, {"assistant": literal(turn["bot"])}]
            last = row["history"][-1]
            conversation.append({"user": literal(last["user"]), "assert": [
                {"llm-rubric": rubric, "reference": plain(last["bot"])}]})
            tests.append({"id": plain(f"{task}-{row.get('id', len(tests) + 1)}"), "tags": plain([task]),
                          "conversation": conversation})
        notes = [] if task in TASKS else [f"task '{task}' is not an MT-Bench-101 task: a generic rubric was used"]
        suites.append(ImportedSuite(
            filename=f"mtbench101-{_NOT_NAME.sub('_', task)}.yaml",  # a task is not a path
            source=path.name, not_converted=notes,
            data={"description": plain(f"MT-Bench-101 {task} ({title}): golden history, the last turn judged"),
                  "tags": ["mtbench101"], "judge": judge, "tests": tests}))
    return suites
