"""promptfoo's `select-best`: a judge picks the best of one test case's outputs, every prompt × provider.

evalspec compares a test's candidates (its providers × matrix instances), so the exact form is one test
whose matrix is the rendered prompt (`matrix: {prompt: [...]}`, sent as `user: "{{ prompt }}"`) on the
same providers. Whatever would change the set of outputs compared (prompts bound to providers, a
provider that was not converted, a conversation across tests) or what the judge reads (a transform)
keeps the check from being converted.
"""

from __future__ import annotations

from typing import Any

from evalspec.authoring.importers import plain

SELECT_BEST = "select-best"
PROMPT_VAR = "prompt"  # the matrix key: promptfoo's own name for the prompt sent, in checks too


def split_best(raw: Any) -> tuple[Any, list[tuple[int, dict[str, object]]]]:
    """A test's `assert:` without its `select-best` items, and those items with their index."""
    if not isinstance(raw, list):
        return raw, []
    best = [(j, a) for j, a in enumerate(raw) if isinstance(a, dict) and a.get("type") == SELECT_BEST]
    if not best:
        return raw, []
    return [a for a in raw if not (isinstance(a, dict) and a.get("type") == SELECT_BEST)], best


def best_check(item: dict[str, object]) -> tuple[dict[str, object] | None, str | None]:
    """The evalspec item of one promptfoo `select-best`, or why it cannot be one."""
    value = item.get("value")
    if not isinstance(value, str) or not value.strip():
        return None, "without a criterion"
    extra = sorted(set(item) - {"type", "value", "weight", "metric"})
    if extra:
        return None, f"with {', '.join(repr(k) for k in extra)}"
    out: dict[str, object] = {SELECT_BEST: value, **{k: item[k] for k in ("weight", "metric") if k in item}}
    return dict(plain(out)), None


def config_problem(data: dict[str, object], names: list[tuple[Any, str | None]], multi_turn: bool,
                   transform: Any) -> str | None:
    """Why no `select-best` of this config compares what promptfoo's compares, or None."""
    providers = data.get("providers") if data.get("providers") is not None else data.get("targets")
    if any(isinstance(p, dict) and p.get("prompts") is not None for p in (providers if isinstance(providers, list) else [])):
        return "prompts bound to providers (`providers[].prompts`): promptfoo compares only those pairs"
    if any(pid is None for _, pid in names):
        return "a provider that was not converted would be missing from the outputs compared"
    if multi_turn:
        return "the tests are turns of one conversation"
    if transform is not None:
        return "on the output transformed by `options.transform`"
    return None


def test_problem(variables: dict[str, object], prompts: int, providers: int,
                 rendered: list[list[dict[str, str]]]) -> str | None:
    """Why one test's `select-best` cannot be converted, or None: `rendered` is its messages per prompt."""
    if prompts * providers < 2:
        return "with one output to compare (promptfoo refuses it)"
    if prompts > 1 and PROMPT_VAR in variables:
        return f"with a var named '{PROMPT_VAR}' (the prompts' matrix key)"
    if any(len(messages) != 1 or messages[0]["role"] != "user" for messages in rendered):
        return "on a prompt that is not one user message (a system message or a history per prompt)"
    texts = [messages[0]["content"] for messages in rendered]
    if len(set(texts)) < len(texts):
        return "on prompts that read the same once rendered"
    return None
