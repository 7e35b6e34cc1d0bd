"""Build a labelled set for `evalspec judge-eval` from MT-Bench-101 dialogues (shared/data/mtbench101-sample.jsonl).

Each item grades one assistant turn with its task's criterion (MT-Bench-101 judges turn k with the history up
to turn k). Labels follow the benchmark's own rules, decided by reading each reply:
- the last turn of every dialogue, labelled by its task criterion (LABELS below; MR 451 is wrong arithmetic);
- a few earlier turns that MT-Bench-101 would score low or high (EXTRA);
- negatives by substitution: the last reply replaced by the last reply of another task's dialogue, which
  MT-Bench-101's rules score as failing (irrelevant to the question asked).

Usage: python build_mtbench_labels.py MTBENCH101.jsonl > mtbench101-labels.jsonl
"""

from __future__ import annotations

import json
import sys
from typing import Any

CRITERIA = {
    "GR": "The reply's final answer and its reasoning are logically correct given every fact stated so far.",
    "MR": "The reply's mathematical answer is correct, and so is the reasoning that leads to it.",
    "IC": "If the user's request is ambiguous the reply asks a clarifying question; once it is clear, the reply "
          "answers the clarified question accurately.",
    "AR": "The reply resolves what the user's pronoun or reference (it, he, the first issue, ...) points to in "
          "earlier turns and answers about that.",
    "FR": "The reply restates the earlier content in exactly the format the user asked for, keeping its meaning.",
    "CR": "The reply rewrites the earlier content in the style or for the audience the user asked for, keeping "
          "its meaning.",
    "CC": "The reply answers the latest question and does not confuse it with the similar-sounding earlier one.",
    "TS": "The reply follows the user's current topic (a return to an earlier topic included) and answers it correctly.",
    "SA": "When the user challenges a correct answer, the reply keeps the correct answer instead of giving in.",
    "SC": "The reply gives accurate information; when the user points out an error, the reply corrects it.",
    "SI": "The reply applies the task the user set earlier to the user's latest input and answers accurately.",
    "CM": "The reply uses what the user said earlier (preferences, constraints, facts) correctly.",
    "PI": "The reply engages proactively: it responds helpfully and moves the conversation on with a relevant "
          "question or suggestion.",
}
WRONG_LAST = {451}  # 1, 8, 5 give 18/81/15/51/85/58 and sums 9/6/13, not what the reply says
EXTRA = [  # (dialogue id, turn, label)
    (2, 1, False),     # John may be Mary's father or father-in-law; the reply asserts one
    (451, 1, False),   # two-digit numbers from 1, 8, 5: the reply lists digits that are not on the cards
    (1312, 1, False),  # type 1 diabetes needs insulin; diet and exercise alone is wrong
    (1313, 1, False),  # the pancreas does not store bile
    (449, 1, True),    # 3 × 5 = 15 paths
    (3, 1, True),      # one flip: tails, so "no"
    (1, 2, True),      # A vs E undetermined: "not possible to determine" is right
    (72, 1, True),     # ambiguous question: asks which medicine
]
SWAP_EVERY = 2  # every other dialogue also gives a substituted (negative) item
SWAP_OFFSET = 7


def transcript(history: list[dict[str, str]], upto: int, last: str | None = None) -> list[dict[str, str]]:
    out = []
    for i, turn in enumerate(history[:upto], 1):
        out.append({"role": "user", "content": turn["user"]})
        out.append({"role": "assistant", "content": last if (i == upto and last is not None) else turn["bot"]})
    return out


def item(task: str, dialogue: int, messages: list[dict[str, str]], label: bool, kind: str) -> dict[str, Any]:
    return {"transcript": messages, "label": label, "source": {"task": task, "id": dialogue, "kind": kind},
            "assert": {"llm-rubric": CRITERIA[task], "scope": "last_response",
                       "description": f"MT-Bench-101 {task}: {kind}"}}


def build(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {r["id"]: r for r in rows}
    items = [item(r["task"], r["id"], transcript(r["history"], len(r["history"])), r["id"] not in WRONG_LAST, "last turn")
             for r in rows]
    items += [item(by_id[d]["task"], d, transcript(by_id[d]["history"], turn), label, f"turn {turn}")
              for d, turn, label in EXTRA if d in by_id]
    for n, r in enumerate(rows):
        if n % SWAP_EVERY:
            continue
        other = rows[(n + SWAP_OFFSET) % len(rows)]
        if other["task"] == r["task"]:
            continue
        swapped = transcript(r["history"], len(r["history"]), last=other["history"][-1]["bot"])
        items.append(item(r["task"], r["id"], swapped, False, f"last reply taken from {other['task']} {other['id']}"))
    return items


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as lines:
        source = [json.loads(line) for line in lines if line.strip()]
    for entry in build(source):
        print(json.dumps(entry, ensure_ascii=False))
