#!/usr/bin/env python3
"""CrossWOZ dialogues -> evalspec's recorded-conversations JSONL.

    python examples/adapters/crosswoz_to_jsonl.py data/crosswoz/test.json -o logs/crosswoz-test.jsonl

Reads a CrossWOZ data file (a JSON object, dialogue id -> `{"sys-usr", "goal", "messages": [{"role":
"usr"|"sys", "content", "dialog_act", "user_state" | "sys_state", ...}], "type", ...}`) and writes one
conversation a line, as docs/en/recorded-conversations.md reads them:
`{"id", "messages": [{"role": "user"|"assistant", "content", "state"?}], "metadata": {...}}`.

- `usr` is `user`, `sys` is `assistant`; consecutive messages of one role are joined (a newline between).
- An assistant message keeps its annotation as its recorded state (docs/en/state.md):
  `{"dialog_act": [[intent, domain, slot, value], ...], "sys_state": {domain: {slot: value}}}`, so
  `state:` checks read it, e.g. `state: "contains(dialog_act[*][0], 'NoOffer')"`.
- metadata: `type` (单领域, 独立多领域, 独立多领域+交通, 不独立多领域, 不独立多领域+交通), `domains` (the goal's
  domains in order, e.g. ["景点", "酒店"]) and `source: crosswoz`.
- Not converted: the user side's `dialog_act` and `user_state`, `sys_state_init`, the goal's slots and
  `final_goal`, `task description`, and `sys-usr` (annotator ids).

Standard library only; see examples/adapters/README.md.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROLES = {"usr": "user", "sys": "assistant"}


def messages_of(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The dialogue's messages as chat messages, an assistant message with its annotation as state."""
    messages: list[dict[str, Any]] = []
    for number, message in enumerate(raw, 1):
        role = ROLES.get(str(message.get("role")))
        if role is None:
            raise ValueError(f"message {number}: role {message.get('role')!r} is not usr or sys")
        text = str(message.get("content") or "").strip()
        if not text:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": role, "content": text})
        if role == "assistant":  # the latest annotation of the (joined) message
            messages[-1]["state"] = {"dialog_act": message.get("dialog_act") or [],
                                     "sys_state": message.get("sys_state") or {}}
    return messages


def domains_of(goal: Any) -> list[str]:
    """The goal's domains in order of its sub-goals: goal rows are [sub-goal id, domain, slot, value, done]."""
    found: list[str] = []
    for row in goal if isinstance(goal, list) else []:
        if isinstance(row, list) and len(row) > 1 and isinstance(row[1], str) and row[1] not in found:
            found.append(row[1])
    return found


def convert(dialogues: Any) -> list[dict[str, Any]]:
    """CrossWOZ dialogues (a JSON object, id -> dialogue) as recorded conversations."""
    if not isinstance(dialogues, dict):
        raise ValueError("a CrossWOZ file is a JSON object of dialogues by id")
    out: list[dict[str, Any]] = []
    for cid, dialogue in dialogues.items():
        if not isinstance(dialogue, dict) or not isinstance(dialogue.get("messages"), list):
            raise ValueError(f"dialogue {cid}: no 'messages' list")
        try:
            messages = messages_of(dialogue["messages"])
        except ValueError as exc:
            raise ValueError(f"dialogue {cid}: {exc}") from None
        metadata = {"source": "crosswoz", "type": str(dialogue.get("type") or ""),
                    "domains": domains_of(dialogue.get("goal"))}
        out.append({"id": str(cid), "messages": messages, "metadata": metadata})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("source", type=Path, help="a CrossWOZ JSON data file (train.json, val.json, test.json)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the JSONL file to write")
    args = parser.parse_args(argv)
    try:
        conversations = convert(json.loads(args.source.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        print(f"{args.source}: {exc}", file=sys.stderr)
        return 2
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("w", encoding="utf-8") as out:
        for conversation in conversations:
            out.write(json.dumps(conversation, ensure_ascii=False) + "\n")
    print(f"{len(conversations)} conversations -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
