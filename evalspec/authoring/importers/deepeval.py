"""DeepEval goldens (ConversationalGolden JSON, conversational test cases) as evalspec suites (docs/en/recorded-conversations.md).

A golden with recorded `turns` (user and assistant messages) becomes a `transcript:` test, graded as it
happened; one whose turns hold no assistant message becomes a scripted `conversation:` of its user turns
(they are played); one without turns becomes a `simulate:` test (persona from `user_description`, goal
from `scenario`). `expected_outcome` is the goal-success check and `chatbot_role` the role-adherence
check, both judged (`llm-rubric` over the conversation); `context` and metadata are kept as `vars`.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from evalspec.authoring.importers import ImportedSuite, literal, plain
from evalspec.authoring.importers.shapes import Check, SuiteTest, said
from evalspec.core.errors import ConfigError, Problem
from evalspec.core.suggest import slugify

JUDGE = "openai/gpt-4o-mini"


def _load(path: Path) -> list[dict[str, object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([Problem(str(path), None, "", f"cannot read: {exc}")]) from None
    except json.JSONDecodeError as exc:
        raise ConfigError([Problem(str(path), exc.lineno, "", f"not JSON: {exc.msg}")]) from None
    if isinstance(data, dict):
        data = data.get("goldens") or data.get("test_cases") or [data]
    if not isinstance(data, list) or not all(isinstance(g, dict) for g in data):
        raise ConfigError([Problem(str(path), 1, "", "DeepEval goldens are a JSON list of objects (scenario, "
                                                    "expected_outcome, turns, ...)")])
    return data


def listed(value: Any) -> Any:
    """`turns` as DeepEval's CSV and dataset exports give it: a list written as JSON text, or as a Python
    literal (`[{'role': 'user', ...}]`), read like the list itself; anything else unchanged."""
    if not isinstance(value, str) or not value.strip().startswith("["):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value


def _turns(golden: dict[str, object]) -> list[dict[str, str]]:
    """The golden's messages: `turns` ({role, content}), or `users` / `replies` side by side."""
    turns = listed(golden.get("turns"))
    if isinstance(turns, list):
        return [{"role": str(t.get("role")), "content": str(t.get("content") or "")}
                for t in turns if isinstance(t, dict)]
    users, replies = golden.get("users"), golden.get("replies")
    out: list[dict[str, str]] = []
    if isinstance(users, list):
        for i, user in enumerate(users):
            out.append({"role": "user", "content": str(user)})
            if isinstance(replies, list) and i < len(replies):
                out.append({"role": "assistant", "content": str(replies[i])})
    return out


def _checks(golden: dict[str, object]) -> list[Check]:
    checks: list[Check] = []
    outcome = golden.get("expected_outcome")
    if isinstance(outcome, str) and outcome.strip():
        checks.append({"llm-rubric": literal(f"goal success: by the end of the conversation, {outcome.strip()}"),
                       "scope": "conversation", "metric": "goal-success"})
    role = golden.get("chatbot_role")
    if isinstance(role, str) and role.strip():
        checks.append({"llm-rubric": literal(f"role adherence: every reply keeps to this role: {role.strip()}"),
                       "scope": "conversation", "metric": "role-adherence"})
    return checks


def _test(golden: dict[str, object], index: int, notes: list[str]) -> SuiteTest:
    scenario = golden.get("scenario") or golden.get("name")
    name = str(scenario or f"golden {index + 1}")
    test: SuiteTest = {"id": f"golden-{index + 1}-{slugify(name)[:40]}".rstrip("-"), "name": plain(name[:200])}
    meta = {k: golden[k] for k in ("context", "additional_metadata", "custom_column_key_values", "comments")
            if golden.get(k)}
    if meta:
        test["vars"] = plain(meta)
    turns = _turns(golden)
    given = golden.get("turns")
    if given not in (None, "", []) and not isinstance(listed(given), list):
        notes.append(f"{test['id']}: turns {str(given)[:60]!r} is neither a list nor a list written as JSON or "
                     "a Python literal: its turns are not converted")
    roles = {t["role"] for t in turns}
    for other in sorted(roles - {"user", "assistant"}):
        notes.append(f"{test['id']}: '{other}' turns")
    if "assistant" in roles:
        test["transcript"] = [said(t["role"], literal(t["content"])) for t in turns if t["role"] in ("user", "assistant")]
    elif turns:
        test["conversation"] = [{"user": literal(t["content"])} for t in turns if t["role"] == "user"]
    else:
        persona = golden.get("user_description") or "a user"
        test["simulate"] = {"persona": plain(str(persona)), "goal": plain(str(scenario or golden.get("expected_outcome") or "")),
                            "max_turns": 10}
    checks = _checks(golden)
    if checks:
        test["assert"] = checks
    return test


def import_deepeval(path: Path, judge: Any = JUDGE) -> ImportedSuite:
    """A DeepEval goldens JSON file -> one suite (one test per golden)."""
    goldens = _load(path)
    notes: list[str] = []
    tests = [_test(g, i, notes) for i, g in enumerate(goldens)]
    suite: dict[str, object] = {"description": f"Imported from DeepEval goldens {path.name}"}
    if any("assert" in t for t in tests):
        suite["judge"] = judge
    suite["tests"] = tests
    return ImportedSuite(filename=f"{slugify(path.stem)}.yaml", data=suite, not_converted=notes, source=path.name)
