#!/usr/bin/env python3
"""Taskmaster (1, 2 or 3) dialogs -> evalspec's recorded-conversations JSONL.

    python examples/adapters/taskmaster_to_jsonl.py TM-2-2020/data/flights.json -o logs/flights.jsonl

Reads a Taskmaster data file (a JSON list of conversations, each
`{"conversation_id", "instruction_id", "utterances": [{"index", "speaker": "USER"|"ASSISTANT", "text",
"segments"}]}`) and writes one conversation a line, as docs/en/recorded-conversations.md reads them:
`{"id", "messages": [{"role": "user"|"assistant", "content"}], "metadata": {...}}`.

- USER is `user`, ASSISTANT is `assistant` (Taskmaster-3 writes them in lower case); utterances are
  taken in `index` order.
- Taskmaster-3's `apis` on an assistant utterance become tool calls: an assistant message with
  `tool_calls` (name, args), then one `tool` message a call holding its `response` as JSON text, then the
  utterance's text.
- Consecutive utterances of one speaker are joined into one message (a newline between them): the bot's
  reply answers all that the user said before it, and every assistant sentence is graded as its reply.
- metadata: `instruction_id`, `domain` (`--domain`, else the part of `instruction_id` before its first
  `-`, e.g. `restaurant-table-2` -> `restaurant`; Taskmaster-3, which has none, its `vertical`),
  Taskmaster-3's `vertical` and `scenario` when present, and `source: taskmaster`.
- Not converted: `segments` (the slot annotations), Taskmaster-3's `instructions`, `apis` on a user
  utterance. An utterance with no text is left out (its calls are kept).

Standard library only; see examples/adapters/README.md.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROLES = {"USER": "user", "ASSISTANT": "assistant"}


def messages_of(utterances: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The utterances as chat messages, consecutive ones of one speaker joined, API calls as tool calls."""
    messages: list[dict[str, Any]] = []
    ordered = sorted(enumerate(utterances), key=lambda pair: (pair[1].get("index", pair[0]), pair[0]))
    for position, utterance in ordered:
        speaker = str(utterance.get("speaker", "")).upper()
        if speaker not in ROLES:
            raise ValueError(f"utterance {position}: speaker {utterance.get('speaker')!r} is not USER or ASSISTANT")
        role = ROLES[speaker]
        apis = utterance.get("apis") if role == "assistant" else None
        if isinstance(apis, list) and apis:
            messages.extend(tool_messages(apis, f"call_{position}"))
        text = str(utterance.get("text") or "").strip()
        if not text:
            continue
        if messages and messages[-1]["role"] == role and "tool_calls" not in messages[-1]:
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": role, "content": text})
    return messages


def tool_messages(apis: list[Any], prefix: str) -> list[dict[str, Any]]:
    """Taskmaster-3 API invocations: the assistant's calls, then each call's response as a tool message."""
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for number, api in enumerate(apis, 1):
        if not isinstance(api, dict) or not api.get("name"):
            raise ValueError(f"api {number} has no name")
        call_id = f"{prefix}_{number}"
        calls.append({"id": call_id, "name": str(api["name"]), "arguments": api.get("args") or {}})
        results.append({"role": "tool", "tool_call_id": call_id, "name": str(api["name"]),
                        "content": json.dumps(api.get("response") or {}, ensure_ascii=False)})
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *results]


def convert(dialogs: Any, domain: str | None = None) -> list[dict[str, Any]]:
    """Taskmaster dialogs (a JSON list) as recorded conversations."""
    if not isinstance(dialogs, list):
        raise ValueError("a Taskmaster file is a JSON list of conversations")
    out: list[dict[str, Any]] = []
    for number, dialog in enumerate(dialogs, 1):
        if not isinstance(dialog, dict) or not isinstance(dialog.get("utterances"), list):
            raise ValueError(f"conversation {number}: no 'utterances' list")
        cid = str(dialog.get("conversation_id") or f"taskmaster-{number}")
        try:
            messages = messages_of(dialog["utterances"])
        except ValueError as exc:
            raise ValueError(f"conversation {cid}: {exc}") from None
        instruction = str(dialog.get("instruction_id") or "")
        metadata: dict[str, Any] = {"source": "taskmaster",
                                    "domain": domain or instruction.split("-", 1)[0] or str(dialog.get("vertical") or "")}
        if instruction:  # Taskmaster-1 and -2
            metadata["instruction_id"] = instruction
        for key in ("vertical", "scenario"):  # Taskmaster-3
            if isinstance(dialog.get(key), str):
                metadata[key] = dialog[key]
        out.append({"id": cid, "messages": messages, "metadata": metadata})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("source", type=Path, help="a Taskmaster JSON data file")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the JSONL file to write")
    parser.add_argument("--domain", help="metadata.domain of every conversation (default: from instruction_id)")
    args = parser.parse_args(argv)
    try:
        conversations = convert(json.loads(args.source.read_text(encoding="utf-8")), args.domain)
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
