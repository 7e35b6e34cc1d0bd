"""Rasa end-to-end tests (`test_cases:` files) as evalspec suites with a `rasa:` provider (docs/en/state.md, §19).

Each `test_case` becomes a scripted test: its `user` steps are the user turns, and what Rasa checks
after a turn (`bot`, `utter`, `slot_was_set` steps, the `assertions:` of a step) becomes checks on that
turn: text checks on the reply and `state:` checks over the turn's tracker state (`slots_set`,
`utterances`, `actions`, `flows_started`, ...). `fixtures:` seed the test's slots, `metadata:` is sent
with each user turn it covers. A file with `stub_custom_actions` is refused: the stubs live in the
Rasa server, which evalspec talks to as it is.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from evalspec.authoring.importers import ImportedSuite, literal, plain, provider_from_spec
from evalspec.authoring.importers.rasa_checks import (
    _has,
    _state,
    slot_checks,
)
from evalspec.authoring.importers.shapes import mappings
from evalspec.authoring.importers.yaml12 import load_yaml12
from evalspec.core.errors import ConfigError, Problem
from evalspec.core.suggest import slugify

DEFAULT_PROVIDER: dict[str, object] = {"id": "rasa-bot", "rasa": {"url": "http://localhost:5005"}}
JUDGE = "openai/gpt-4o-mini"


class SourceRefused(ConfigError):
    """A source file that is not imported at all (stub_custom_actions, an INCLUDE cycle): its reason."""

    def __init__(self, reason: str) -> None:
        super().__init__([Problem("", None, "", reason)])
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


def _named(mapping: Any, key: str) -> dict[str, object]:
    """Rasa's `fixtures:` / `metadata:`: a list of one-key mappings (or a mapping) -> {name: value}."""
    out: dict[str, object] = {}
    items = mapping if isinstance(mapping, list) else [mapping] if isinstance(mapping, dict) else []
    for item in items:
        if isinstance(item, dict):
            out.update({str(k): v for k, v in item.items()})
    return out


def _slots(value: Any) -> dict[str, object]:
    """A fixture's slots: a list of `{slot: value}` mappings (or one mapping)."""
    out: dict[str, object] = {}
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict):
            out.update({str(k): v for k, v in item.items()})
    return out





def _flow_id(value: Any) -> tuple[str | None, bool]:
    """`flow_started: X` or `{flow_id: X, flow_step_id: Y}` -> (X, whether a step id was given)."""
    if isinstance(value, dict):
        flow = value.get("flow_id")
        return (str(flow) if flow is not None else None), "flow_step_id" in value
    return (str(value) if value is not None else None), False


class _Turn:
    def __init__(self, entry: dict[str, object]) -> None:
        self.entry = entry
        self.bot_texts: list[str] = []
        self.checks: list[dict[str, object]] = []
        self.text_steps = 0  # bot / utter steps (a lone `bot:` is an equals check)


class _Converter:
    def __init__(self, source: str, notes: list[str]) -> None:
        self.source, self.notes = source, notes
        self.judged = False
        self.button_payloads_noted = False

    def note(self, where: str, text: str) -> None:
        self.notes.append(f"{where}: {text}")

    def bot_uttered(self, value: Any, where: str, negated: bool) -> list[dict[str, object]]:
        if not isinstance(value, dict):
            self.note(where, f"{'bot_did_not_utter' if negated else 'bot_uttered'} {value!r}: expected a mapping")
            return []
        checks: list[dict[str, object]] = []
        if value.get("utter_name") is not None:
            checks.append(_state(_has("utterances", str(value["utter_name"])), negated))
        if value.get("text_matches") is not None:
            checks.append({("not-regex" if negated else "regex"): plain(str(value["text_matches"]))})
        buttons = value.get("buttons")
        if isinstance(buttons, list) and buttons:
            titles = [str(b.get("title")) if isinstance(b, dict) else str(b) for b in buttons]
            checks.append({("not-buttons" if negated else "buttons"): plain(titles)})
            if any(isinstance(b, dict) and b.get("payload") is not None for b in buttons) \
                    and not self.button_payloads_noted:
                self.button_payloads_noted = True
                self.note(where, "bot_uttered buttons: their payloads are not checked (buttons: checks the titles)")
        for other in sorted(set(value) - {"utter_name", "text_matches", "buttons"}):
            self.note(where, f"bot_uttered {other}: not converted")
        return checks

    def assertion(self, item: Any, where: str) -> list[dict[str, object]]:
        if not isinstance(item, dict) or len(item) != 1:
            self.note(where, f"assertion {item!r}: expected a one-key mapping")
            return []
        (kind, value), = item.items()
        if kind in ("flow_started", "flow_completed", "flow_cancelled"):
            flow, step_id = _flow_id(value)
            if flow is None:
                self.note(where, f"{kind} without a flow_id")
                return []
            if step_id:
                self.note(where, f"{kind} {flow}: flow_step_id not converted")
            key = {"flow_started": "flows_started", "flow_completed": "flows_completed",
                   "flow_cancelled": "flows_cancelled"}[kind]
            return [_state(_has(key, flow))]
        if kind == "action_executed":
            return [_state(_has("actions", str(value)))]
        if kind in ("slot_was_set", "slot_was_not_set"):
            return slot_checks(value, kind == "slot_was_not_set")
        if kind in ("bot_uttered", "bot_did_not_utter"):
            return self.bot_uttered(value, where, kind == "bot_did_not_utter")
        if kind == "pattern_clarification_contains":
            flows = value if isinstance(value, list) else [value]
            self.note(where, f"pattern_clarification_contains {[str(f) for f in flows]}: the flows offered are "
                      "not checked (only that pattern_clarification started)")
            return [_state(_has("flows_started", "pattern_clarification"))]
        if kind in ("generative_response_is_relevant", "generative_response_is_grounded"):
            spec = value if isinstance(value, dict) else {}
            self.judged = True
            if kind.endswith("relevant"):
                rubric = "The reply is relevant to the user's last message and answers it."
            else:
                truth = spec.get("ground_truth")
                rubric = ("The reply is grounded: every factual claim in it is supported by "
                          + (f"this ground truth: {truth}" if truth else "the bot's knowledge sources, none invented"))
            check: dict[str, object] = {"llm-rubric": literal(rubric)}
            if spec.get("threshold") is not None:
                check["threshold"] = float(spec["threshold"])
            for other in sorted(set(spec) - {"threshold", "ground_truth"}):
                self.note(where, f"{kind} {other}: not converted")
            return [check]
        self.note(where, f"assertion {kind}: not converted")
        return []

    def test(self, case: dict[str, Any], index: int, fixtures: dict[str, object], metadata: dict[str, object]) -> dict[str, object]:
        name = str(case.get("test_case") or f"test case {index + 1}")
        test: dict[str, object] = {"id": slugify(name)[:60] or f"case-{index + 1}", "name": plain(name)}
        where = f"test_case '{name}'"
        slots: dict[str, object] = {}
        for fixture in case.get("fixtures") or []:
            if str(fixture) in fixtures:
                slots.update(_slots(fixtures[str(fixture)]))
            else:
                self.note(where, f"fixture '{fixture}' is not defined in the file's fixtures:")
        if slots:
            test["state"] = {"slots": plain(slots)}
        case_meta = self._metadata(case.get("metadata"), metadata, where)
        if case.get("assertion_order_enabled"):
            test["_order"] = True
        turns: list[_Turn] = []
        for s, step in enumerate(case.get("steps") or []):
            at = f"{where}, step {s + 1}"
            if not isinstance(step, dict):
                self.note(at, f"step {step!r}: expected a mapping")
                continue
            if "user" in step:
                turns.append(self._user_turn(step, case_meta, metadata, at))
                continue
            if not turns:
                self.note(at, f"{next(iter(step), '?')} before the first user step (the bot's greeting) is not checked")
                continue
            self._bot_step(turns[-1], step, at)
        test["conversation"] = [_written(turn) for turn in turns]
        return test

    def _user_turn(self, step: dict[str, Any], case_meta: dict[str, object], metadata: dict[str, object],
                   at: str) -> _Turn:
        """A user step (its text and metadata) and the checks of its `assertions`."""
        user = step["user"]
        step_meta_ref = step.get("metadata")
        if isinstance(user, dict):
            step_meta_ref = user.get("metadata", step_meta_ref)
            user = user.get("text")
        entry: dict[str, object] = {"user": literal(str(user if user is not None else ""))}
        meta = {**case_meta, **self._metadata(step_meta_ref, metadata, at)}
        if meta:
            entry["metadata"] = plain(meta)
        turn = _Turn(entry)
        if step.get("assertion_order_enabled"):
            entry["_order"] = True
        for item in step.get("assertions") or []:
            turn.checks += self.assertion(item, at)
        for other in sorted(set(step) - {"user", "metadata", "assertions", "assertion_order_enabled"}):
            self.note(at, f"user step key {other}: not converted")
        return turn

    def _bot_step(self, turn: _Turn, step: dict[str, Any], at: str) -> None:
        """What the bot says or sets after a user turn, added to that turn."""
        if "bot" in step:
            turn.bot_texts.append(str(step["bot"]))
            turn.text_steps += 1
        elif "utter" in step:
            turn.text_steps += 1
            turn.checks.append(_state(_has("utterances", str(step["utter"]))))
        elif "slot_was_set" in step or "slot_was_not_set" in step:
            negated = "slot_was_not_set" in step
            turn.checks += slot_checks(step["slot_was_not_set" if negated else "slot_was_set"], negated)
        else:
            self.note(at, f"step {next(iter(step), '?')}: not converted")

    def _metadata(self, ref: Any, metadata: dict[str, object], where: str) -> dict[str, object]:
        if ref is None:
            return {}
        if isinstance(ref, dict):
            return ref
        if isinstance(found := metadata.get(str(ref)), dict):
            return dict(found)
        self.note(where, f"metadata '{ref}' is not defined in the file's metadata:")
        return {}


def _written(turn: _Turn) -> dict[str, object]:
    """A user turn as written, with its checks: the bot's texts (exactly, or as lines when the turn has
    several), then the step checks."""
    texts: list[dict[str, object]] = []
    for text in turn.bot_texts:
        if turn.text_steps == 1:
            texts.append({"equals": literal(" ".join(text.split()))})
        else:
            texts.append({"regex": plain("(?m)^\\s*" + re.escape(text.strip()).replace("\\ ", " ") + "\\s*$")})
    checks = texts + turn.checks
    if checks:
        turn.entry["assert"] = checks
    return turn.entry


def _load(path: Path) -> Any:
    try:
        return load_yaml12(path.read_text(encoding="utf-8-sig"))  # as Rasa reads it: `yes` is text
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([Problem(str(path), None, "", f"cannot read: {exc}")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError([Problem(str(path), mark.line + 1 if mark else None, "", f"not YAML: {exc}")]) from None


def _orders(data: dict[str, Any], notes: list[str]) -> None:
    """`assertion_order_enabled` (kept as a note: evalspec checks a turn's assertions each on its own)."""
    for test in data["tests"]:
        if test.pop("_order", False):
            notes.append(f"test '{test['id']}': assertion_order_enabled (kept as a comment: evalspec checks each "
                         "assertion on its own, in any order)")
        for i, entry in enumerate(test.get("conversation") or []):
            if entry.pop("_order", False):
                notes.append(f"test '{test['id']}', turn {i + 1}: assertion_order_enabled (kept as a comment: "
                             "evalspec checks each assertion on its own, in any order)")


def import_rasa_file(path: Path, filename: str, provider: str | None = None, judge: Any = JUDGE) -> ImportedSuite:
    """One Rasa e2e test file -> one suite. Raises SourceRefused (stub_custom_actions) or ConfigError."""
    data = _load(path)
    if isinstance(data, dict) and isinstance(data.get("stories"), list) and not isinstance(data.get("test_cases"), list):
        return _import_stories(path, filename, data, provider)
    if not isinstance(data, dict) or not isinstance(data.get("test_cases"), list):
        raise ConfigError([Problem(str(path), 1, "", "not a Rasa test file: expected test_cases: (end-to-end "
                                                     "tests) or stories: (test stories)")])
    if data.get("stub_custom_actions"):
        names = ", ".join(sorted(str(k) for k in data["stub_custom_actions"])) \
            if isinstance(data["stub_custom_actions"], dict) else "?"
        raise SourceRefused(f"stub_custom_actions ({names}): the stubs live in the Rasa server (its e2e test runner "
                      "replaces those actions); evalspec talks to the server as it runs, so the checks that "
                      "depend on the stubbed results would test something else")
    notes: list[str] = []
    conv = _Converter(path.name, notes)
    fixtures, metadata = _named(data.get("fixtures"), "fixtures"), _named(data.get("metadata"), "metadata")
    for other in sorted(set(data) - {"test_cases", "fixtures", "metadata", "stub_custom_actions"}):
        notes.append(f"top-level {other}: not converted")
    tests = [conv.test(c, i, fixtures, metadata) for i, c in enumerate(data["test_cases"]) if isinstance(c, dict)]
    seen: dict[str, int] = {}
    for test in tests:
        tid = str(test["id"])
        n = seen[tid] = seen.get(tid, 0) + 1
        if n > 1:
            test["id"] = f"{test['id']}-{n}"
    suite: dict[str, object] = {"description": f"Imported from Rasa end-to-end tests {path.name}",
                             "providers": [provider_from_spec(provider) if provider else DEFAULT_PROVIDER]}
    if conv.judged:
        suite["judge"] = judge
    suite["tests"] = tests
    _orders(suite, notes)
    return ImportedSuite(filename=filename, data=suite, not_converted=notes, source=path.name)


def _import_stories(path: Path, filename: str, data: dict[str, object], provider: str | None) -> ImportedSuite:
    """Rasa 3 test stories -> one suite, a test per story; training stories (no `user` step) are refused."""
    from evalspec.authoring.importers.rasa_stories import story_test

    stories = mappings(data["stories"])
    if not any("user" in step for s in stories for step in mappings(s.get("steps"))):
        raise SourceRefused("training stories (no user: step): nothing to send, not a test file")
    notes: list[str] = []
    counts = [0, 0]
    tests = [story_test(s, i, notes, counts) for i, s in enumerate(stories)]
    seen: dict[str, int] = {}
    for test in tests:
        tid = str(test["id"])
        n = seen[tid] = seen.get(tid, 0) + 1
        if n > 1:
            test["id"] = f"{test['id']}-{n}"
    for other in sorted(set(data) - {"stories", "version"}):
        notes.append(f"top-level {other}: not converted")
    suite: dict[str, object] = {"description": f"Imported from Rasa test stories {path.name}",
                             "providers": [provider_from_spec(provider) if provider else DEFAULT_PROVIDER],
                             "tests": tests}
    return ImportedSuite(filename=filename, data=suite, not_converted=notes, source=path.name,
                         checks=(counts[0], counts[1]))


def import_rasa(target: Path, provider: str | None = None, judge: Any = JUDGE
                ) -> tuple[list[ImportedSuite], list[tuple[str, str]]]:
    """A Rasa e2e test file, or a folder read recursively (sub-folders kept) -> (suites, refused files)."""
    refused: list[tuple[str, str]] = []
    if target.is_file():
        try:
            return [import_rasa_file(target, f"{slugify(target.stem)}.yaml", provider, judge)], refused
        except SourceRefused as exc:
            return [], [(target.name, str(exc))]
    suites = []
    for path in sorted(p for p in target.rglob("*") if p.suffix in (".yml", ".yaml") and p.is_file()):
        rel = path.relative_to(target)
        filename = str(rel.parent / f"{slugify(path.stem)}.yaml")
        try:
            suites.append(import_rasa_file(path, filename, provider, judge))
        except SourceRefused as exc:
            refused.append((str(rel), str(exc)))
        except ConfigError as exc:
            refused.append((str(rel), "; ".join(p.message for p in exc.problems)))
    return suites, refused
