"""The scripted user: the test's own turns as the source of the next user message (the loop is play/turns.py)."""

from __future__ import annotations

import itertools
import json

import jmespath

from evalspec.core.errors import EvalspecError
from evalspec.extend.patterns import search
from evalspec.extend.transcript import Message, is_reply, replies
from evalspec.plan.build import Instance, has_captures, with_captures
from evalspec.play.turns import NextMessage, TurnError, play_turns, user_message
from evalspec.providers.tool_rounds import SendTurn, ToolKit
from evalspec.results.transcript import Transcript

__all__ = ["ScriptedUser", "captured_values", "pressed", "run_scripted"]


def captured_values(messages: list[Message], instance: Instance | None = None) -> tuple[dict[str, str], str | None]:
    """What each capturing user turn stored (docs/en/recorded-conversations.md, §24: its reply, a regex's first group or whole match
    over it, or a JMESPath over its state), and the first capture that found nothing, as an error line. A
    turn not reached captures nothing and is no error. Without `instance`, every capture is of the reply."""
    sources = {t.turn: t.captures for t in instance.turns if t.captures} if instance is not None else {}
    values: dict[str, str] = {}
    for i, message in enumerate(messages):
        name = message.get("capture") if message.get("role") == "user" else None
        if not name:
            continue
        heard = replies(itertools.takewhile(lambda m: m.get("role") != "user", messages[i + 1:]), golden=True)
        if not heard:
            continue
        turn = message.get("turn")
        for var, (how, arg) in ((sources.get(turn) if turn is not None else None) or {name: ("reply", "")}).items():
            value, why = _captured(heard[-1], how, arg)
            if value is None:
                return values, (f"turn {message.get('turn')}: capture '{var}' found nothing: {why}, so the later "
                                f"turns and checks that use {{{{ {var} }}}} cannot be rendered")
            values[var] = value
    return values, None


def _captured(reply: Message, how: str, arg: str) -> tuple[str | None, str]:
    """One capture's value from a turn's reply, or None and why it found nothing."""
    text = reply.get("content")
    text = text if isinstance(text, str) else ""
    if how == "state":
        state = reply.get("state")
        if not isinstance(state, dict):
            return None, "the turn has no state (its provider gave none)"
        found = jmespath.search(arg, state)
        if found is None or found == "" or found == [] or found == {}:
            return None, f"the turn's state has nothing at '{arg}'"
        return (str(found) if isinstance(found, (str, int, float)) and not isinstance(found, bool)
                else json.dumps(found, ensure_ascii=False)), ""
    if not text.strip():
        return None, "the reply is empty"
    if how == "regex":
        try:
            match = search(arg, text)
        except EvalspecError as exc:
            return None, str(exc)
        if match is None:
            return None, f"the reply does not match {arg!r}"
        value = match.group(1) if match.re.groups else match.group(0)
        return (value, "") if value else (None, f"{arg!r} matched an empty text")
    return text, ""


def pressed(transcript: list[Message], title: str, turn: int) -> tuple[str, str]:
    """`click: T` (docs/en/state.md): the first button of the previous reply titled T, else the first whose payload
    is T, as (what is sent: its payload, else its title; the title pressed). No such button is a TurnError."""
    previous = next((m for m in reversed(transcript) if is_reply(m, golden=True)), None)
    buttons = [b for part in (previous or {}).get("parts") or [] if isinstance(part, dict)
               for b in part.get("buttons") or [] if isinstance(b, dict)]
    chosen = next((b for b in buttons if str(b.get("title")) == title), None) \
        or next((b for b in buttons if b.get("payload") is not None and str(b.get("payload")) == title), None)
    if chosen is None:
        titles = [str(b.get("title")) for b in buttons]
        offered = ("it offers " + ", ".join(f"'{t}'" for t in titles)) if titles else "it offers no buttons"
        raise TurnError(f"turn {turn}: click '{title}' found no button titled (or with payload) '{title}' in the "
                        f"previous reply: {offered}")
    payload = chosen.get("payload")
    sent = str(payload) if payload is not None and str(payload) != "" else str(chosen.get("title") or title)
    return sent, title


class ScriptedUser:
    """The test's own turns, in order. With `capture:` turns, each later turn is rendered again with the
    replies captured so far (docs/en/recorded-conversations.md); a capture that finds nothing ends the conversation at its turn."""

    stop_reason: str = "completed"
    who: str | None = None

    def __init__(self, instance: Instance) -> None:
        self.instance, self.rendered, self.known, self.index = instance, instance, 0, 0
        self.captures = has_captures(instance)

    async def next_message(self, transcript: Transcript) -> NextMessage | None:
        index = self.index
        if index == len(self.instance.turns):
            if self.captures and (problem := captured_values(transcript.messages, self.instance)[1]):
                raise TurnError(problem)
            return None
        self.index += 1
        planned = self.instance.turns[index]
        if self.captures:
            values, problem = captured_values(transcript.messages, self.instance)
            if problem:
                raise TurnError(problem)
            if len(values) != self.known:
                try:
                    self.rendered, self.known = with_captures(self.instance, values), len(values)
                except EvalspecError as exc:  # a template the captures so far do not render
                    raise TurnError(f"turn {planned.turn}: {exc}") from exc
            planned = self.rendered.turns[index]
        if planned.role == "assistant":
            return NextMessage({"role": "assistant", "content": planned.text, "turn": planned.turn,
                                "latency_ms": None, "tokens": None, "cost": None, "injected": True}, call=False)
        text, click = planned.text, None
        if planned.click is not None:
            text, click = pressed(transcript.messages, planned.click, planned.turn)
        return NextMessage(user_message(text, planned.turn, filler=planned.filler, label=planned.label,
                                        history=not planned.call, capture=planned.capture, click=click),
                           call=planned.call, silent_ok=planned.no_reply_ok)

    async def stop_after(self, transcript: Transcript, reply: Message, turn: int) -> str | None:
        return None


async def run_scripted(instance: Instance, call: SendTurn, kit: ToolKit | None = None) -> Transcript:
    """Send each user turn and record the reply (after its tool rounds); the first provider failure
    ends the conversation."""
    return await play_turns(ScriptedUser(instance), instance, call, kit)
