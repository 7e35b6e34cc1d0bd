"""The bot's own state (docs/en/state.md): `state` checks a JMESPath expression over the state the bot reported
after a turn, `buttons` the button titles its reply offered (the buttons of every part, in order).

Both read the turn's assistant message (`state`, `parts`); a turn that carries none is an error of the
test, never a pass, also under `not-`: a check that cannot see the state has checked nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import jmespath

from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError
from evalspec.core.jsondiff import same
from evalspec.extend.check import Check, Evidence, GradingContext, Reply, Said, say, snippet
from evalspec.extend.params import UNSET, Key, Keywords, Option, Regex
from evalspec.extend.patterns import search
from evalspec.extend.registry import assertion
from evalspec.extend.transcript import Message

Expr = Annotated[str, Keywords(minLength=1, description="a JMESPath expression over the turn's state")]


def compiled(expr: str) -> Any:
    """The compiled JMESPath expression; a bad one is a ValueError (a load error of the suite)."""
    try:
        return jmespath.compile(expr)
    except jmespath.exceptions.JMESPathError as exc:
        msg, at = getattr(exc, "msg", None), getattr(exc, "lex_position", None)
        why = f"{msg} at column {at}" if msg and at is not None else str(exc).splitlines()[0].rstrip(":")
        raise ValueError(f"bad JMESPath expression {expr!r}: {why}") from None


def truthy(value: Any) -> bool:
    """JMESPath truthiness: null, false, "", [] and {} are false; everything else (0 included) true."""
    return not (value is None or value is False or (isinstance(value, (str, list, dict)) and not value))


def shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class StateParams:
    """`state: EXPR` (truthy passes) or `{path, equals | matches | in | exists}`"""

    short_field: ClassVar[str] = "path"
    path: Expr
    equals: Annotated[Any, Keywords(description="the value the path must equal")] = UNSET
    matches: Regex | None = None
    in_: Annotated[list[Any] | None, Key("in"), Keywords(description="the values the path may have")] = None
    exists: Annotated[bool | None, Keywords(description="true: the path yields a value (not null); "
                                                        "false: it yields null")] = None

    def __post_init__(self) -> None:
        compiled(self.path)
        given = [k for k, v in (("equals", self.equals is not UNSET), ("matches", self.matches is not None),
                                ("in", self.in_ is not None), ("exists", self.exists is not None)) if v]
        if len(given) > 1:
            raise ValueError(f"one comparison per state check: found {', '.join(given)}")


@dataclass(frozen=True)
class ButtonsParams:
    value_field: ClassVar[str] = "titles"
    titles: Annotated[list[str | float], Keywords(minItems=1, description="the button titles the reply offers")]
    exact: Annotated[bool, Option(), Keywords(
        description="the reply offers exactly these buttons, in this order (default: at least these)")] = False


def turn_message(reply: Reply, ctx: GradingContext, what: str) -> Message:
    """The assistant message of the reply under check (its `state` and `parts`)."""
    if reply.whole_conversation or reply.turn is None:
        raise GradingError(f"a {what} check reads one turn: use scope each_turn, any_turn or last_response, "
                           "not conversation")
    message = ctx.reply_for_turn(reply.turn)
    if message is None:
        raise GradingError(f"no reply for turn {reply.turn}")
    return message


def state_of(message: Mapping[str, Any], turn: int | None) -> Any:
    """The state recorded on a turn's reply; none is an error naming the turn (never a pass)."""
    state = message.get("state")
    if state is None:
        raise GradingError(f"turn {turn} has no state to check: the provider reported none for it")
    return state


def state_value(expr: str, state: Any) -> Any:
    return compiled(expr).search(state)


@assertion("state", params=StateParams,
           example="- state: {path: active_flow, equals: book_test_drive}   # or a JMESPath expression: truthy passes")
def state_check(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """A JMESPath expression over the bot's state after the turn is truthy (or equals, matches, is in, exists)."""
    p: StateParams = spec.params
    found = state_value(p.path, state_of(turn_message(reply, ctx, "state"), reply.turn))
    return value_check(p.path, found, p, reply.turn)


def value_check(path: str, found: Any, p: Any, turn: int | None, extra: tuple[bool, Said] | None = None) -> Check:
    """The verdict of a path's value against one comparison of `p` (`equals`, `matches`, `in`, `exists`, else
    truthy), for state and world checks alike; `extra`: a comparison of the caller's own, when it gave one."""
    value = shown(found)
    said = f"{path} = {value}"
    if p.equals is not UNSET:
        passed, expected = same(found, p.equals), say("state_expected", value=shown(p.equals))
    elif p.matches is not None:
        passed, expected = found is not None and search(p.matches, value) is not None, \
            say("state_no_match", pattern=p.matches)
    elif p.in_ is not None:
        passed, expected = any(same(found, v) for v in p.in_), say("state_not_in", values=shown(p.in_))
    elif p.exists is not None:
        passed = (found is not None) is p.exists
        expected = say("state_should_exist" if p.exists else "state_should_not_exist")
    elif extra is not None:
        passed, expected = extra
    else:
        passed, expected = truthy(found), say("state_not_true")
    return Check.of(passed, say("as_is", text=said) if passed else say("state_failed", said=said, expected=expected),
                    [Evidence(turn, snippet(said))])


def button_titles(message: Mapping[str, Any], turn: int | None) -> list[str]:
    """The titles of the buttons of every part of a turn's reply, in order; no parts is an error."""
    parts = message.get("parts")
    if parts is None:
        raise GradingError(f"turn {turn} has no parts to read buttons from: the provider reported none for it")
    return [str(b.get("title")) for part in parts if isinstance(part, Mapping)
            for b in part.get("buttons") or [] if isinstance(b, Mapping) and b.get("title") is not None]


@assertion("buttons", params=ButtonsParams,
           example="- buttons: [周六, 周日]      # the reply offers these buttons (exact: true: only these, in order)")
def buttons(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply offers at least these button titles (`exact: true`: exactly these, in order)."""
    p: ButtonsParams = spec.params
    wanted = [shown(t) for t in p.titles]
    offered = button_titles(turn_message(reply, ctx, "buttons"), reply.turn)
    listed = " / ".join(offered) if offered else "no buttons"
    evidence = [Evidence(reply.turn, listed)]
    buttons_said = say("as_is", text=listed) if offered else say("no_buttons")
    if p.exact:
        passed = offered == wanted
        return Check.of(passed, say("buttons", buttons=buttons_said) if passed else
                        say("buttons_exactly", buttons=buttons_said, wanted=" / ".join(wanted)), evidence)
    missing = [t for t in wanted if t not in offered]
    if missing:
        return Check.of(False, say("buttons_missing", missing=" / ".join(missing), buttons=buttons_said), evidence)
    return Check.of(True, say("buttons_offers", wanted=" / ".join(wanted)), evidence)
