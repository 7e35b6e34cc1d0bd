"""Rasa 3 test stories (`stories:` with `steps:` of `user` + `intent`, `action`, `slot_was_set`,
`active_loop`) as scripted tests (docs/en/importers.md#coming-from-rasa).

One test per story; each `user` step is a turn (entity annotations `[Paris](city)` stripped from the text
sent, and checked on the turn's `entities`); what the story expects after it is checked on that turn's
state: the intent, the actions in the order listed (others between them allowed, `action_listen`
ignored), the slots set and the active loop after the turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from evalspec.authoring.importers import literal, plain
from evalspec.authoring.importers.rasa_checks import jp_literal, slot_checks
from evalspec.core.suggest import slugify

# [Paris](city), [Paris](city:paris), [Paris]{"entity": "city", "value": "paris"}
_ENTITY = re.compile(r"\[([^\]\[]+)\](?:\(([^)]+)\)|(\{[^{}]*\}))")
IGNORED_ACTIONS = ("action_listen",)


def strip_entities(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(the text as the user types it, [(entity, value)]) of a story's annotated user text."""
    found: list[tuple[str, str]] = []

    def one(match: re.Match[str]) -> str:
        shown, short, braces = match.group(1), match.group(2), match.group(3)
        if short:
            entity, _, value = short.partition(":")
            found.append((entity.strip(), value.strip() or shown))
        else:
            try:
                spec = json.loads(braces)
            except json.JSONDecodeError:
                return match.group(0)
            if not isinstance(spec, dict) or "entity" not in spec:
                return match.group(0)
            found.append((str(spec["entity"]), str(spec.get("value", shown))))
        return shown

    return _ENTITY.sub(one, text), found


def in_order(actions: list[str]) -> dict[str, object]:
    """A state check that `actions` appear in the turn's `actions` in this order, others between them
    allowed: a regex over the list as JSON text (`["a", "x", "b"]`), as `matches` reads a list."""
    any_item = r'"(?:[^"\\]|\\.)*"'
    body = f", (?:{any_item}, )*?".join(re.escape(json.dumps(a, ensure_ascii=False)) for a in actions)
    return {"state": {"path": "actions", "matches": plain(f"^\\[(?:{any_item}, )*?{body}(?:, {any_item})*\\]$")}}


def intent_message(step: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """(the message, [(entity, value)]) of a story step that gives an intent and no text: `/intent`, with
    the step's `entities` (`[{city: 北京}]`) as `/intent{"city": "北京"}`, as Rasa parses such a message."""
    entities: dict[str, object] = {}
    for item in step.get("entities") or []:
        if isinstance(item, dict):
            entities.update({str(k): v for k, v in item.items()})
    suffix = json.dumps(entities, ensure_ascii=False) if entities else ""
    return f"/{step['intent']}{suffix}", [(k, str(v)) for k, v in entities.items()]


class _StoryTurn:
    def __init__(self, entry: dict[str, object]) -> None:
        self.entry = entry
        self.checks: list[dict[str, object]] = []
        self.actions: list[str] = []
        self.loops: list[Any] = []


def story_test(story: dict[str, Any], index: int, notes: list[str], counts: list[int]) -> dict[str, object]:
    """One story -> one test. `counts` is [checks kept, checks not converted], added to."""
    name = str(story.get("story") or f"story {index + 1}")
    where = f"story '{name}'"
    test: dict[str, object] = {"id": slugify(name)[:60] or f"story-{index + 1}", "name": plain(name)}
    turns: list[_StoryTurn] = []

    def lost(at: str, text: str) -> None:
        notes.append(f"{at}: {text}")
        counts[1] += 1

    for s, step in enumerate(story.get("steps") or [], 1):
        at = f"{where}, step {s}"
        if not isinstance(step, dict):
            lost(at, f"step {step!r}: expected a mapping")
        elif "user" in step or ("intent" in step and step["intent"] is not None):
            turns.append(_user_turn(step, at, lost))
        elif not turns:
            key = next(iter(step), "?")
            if key in ("action", "slot_was_set", "active_loop"):
                lost(at, f"{key} before the first user step (the bot's greeting) is not checked")
            else:
                lost(at, f"{key} before the first user step: not converted")
        else:
            _bot_step(turns[-1], step, at, lost)
    for other in sorted(set(story) - {"story", "steps"}):
        lost(where, f"{other}: not converted")
    test["conversation"] = [_written(turn, where, lost, counts) for turn in turns]
    return test


def _user_turn(step: dict[str, Any], at: str, lost: Callable[[str, str], None]) -> _StoryTurn:
    """A user step (its text, else its intent as Rasa's test sends it) and the intent and entities it checks."""
    if "user" in step:
        text, entities = strip_entities(str(step["user"] if step["user"] is not None else "").strip())
    else:  # no text: Rasa's test sends the intent itself, `/intent{"entity": "value"}`
        text, entities = intent_message(step)
    turn = _StoryTurn({"user": literal(text)})
    if step.get("intent") is not None:
        turn.checks.append({"state": {"path": "intent", "equals": plain(str(step["intent"]))}})
    for entity, value in entities:
        turn.checks.append({"state": plain(f"contains(entities[?entity == {jp_literal(entity)}].value, "
                                           f"{jp_literal(value)})")})
    for other in sorted(set(step) - {"user", "intent"} - (set() if "user" in step else {"entities"})):
        lost(at, f"user step key {other}: not converted")
    return turn


def _bot_step(turn: _StoryTurn, step: dict[str, Any], at: str, lost: Callable[[str, str], None]) -> None:
    """What the bot does after a user turn (an action, a slot set, a loop), added to that turn's checks."""
    if "action" in step:
        if str(step["action"]) not in IGNORED_ACTIONS:
            turn.actions.append(str(step["action"]))
    elif "slot_was_set" in step:
        turn.checks += slot_checks(step["slot_was_set"], False)
    elif "active_loop" in step:
        turn.loops.append(step["active_loop"])
    else:
        lost(at, f"step {next(iter(step), '?')}: not converted")


def _written(turn: _StoryTurn, where: str, lost: Callable[[str, str], None], counts: list[int]) -> dict[str, object]:
    """A user turn as written, with its checks: its intent and entities, the actions (in order), the loop."""
    checks = list(turn.checks)
    if len(turn.actions) == 1:
        checks.append({"state": plain(f"contains(actions, {jp_literal(turn.actions[0])})")})
    elif turn.actions:
        checks.append(in_order(turn.actions))
    counts[0] += len(turn.checks) + len(turn.actions)
    if turn.loops:
        loop = turn.loops[-1]
        checks.append({"state": {"path": "active_loop", "equals": None if loop is None else plain(str(loop))}})
        counts[0] += 1
        for earlier in turn.loops[:-1]:
            lost(where, f"active_loop {earlier!r} before the turn's last one: only the loop active after the "
                 "turn is checked")
    if checks:
        turn.entry["assert"] = checks
    return turn.entry
