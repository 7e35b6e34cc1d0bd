"""Provider mappings as written -> `ProviderSpec`: one reading for the suite's `providers:`, its
`judge:`/`simulator:`/`embedder:`, an assertion's `provider:` and a history, simulate or attack `model:`.

What a JSON Schema cannot check about a mapping is found here too, with the key it is about: the kind's
own checks (its registry entry's `check`), `history:`, and the keys that only model providers answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalspec.config.model import ProviderSpec
from evalspec.config.strategies import history_problem
from evalspec.core.suggest import did_you_mean
from evalspec.extend.kinds import ProviderKind, kind_of, provider_kinds

RUN_KEYS = ("id", "max_concurrency", "rpm")  # read by the pool from the spec, not part of the config
MODEL_ONLY_KEYS = ("tool_results", "answer_tool_calls")
ROUND_KINDS = ("model", "python")  # kinds that may play tool rounds (`max_tool_rounds`, docs/en/world.md#the-world-and-the-tools)

Found = list[tuple[tuple[Any, ...], str]]


def provider_spec(raw: dict[str, Any], kind: str, pid: str, where: tuple[Any, ...] = ()) -> ProviderSpec:
    """The spec of a provider mapping whose kind is known."""
    config = {k: v for k, v in raw.items() if k not in RUN_KEYS}
    return ProviderSpec(id=pid, kind=kind, config=config, where=where,
                        max_concurrency=raw.get("max_concurrency"), rpm=raw.get("rpm"))


def model_ref(raw: Any, default_id: str | None = None, where: tuple[Any, ...] = ()) -> ProviderSpec:
    """A model reference (a judge, a history or simulate `model:`): a string is a model provider's
    model; a mapping is a provider (a `model:` one when it names no kind)."""
    if isinstance(raw, str):
        return ProviderSpec(id=default_id or f"judge:{raw}", kind="model", config={"model": raw}, where=where)
    kind = kind_of(raw) or "model"
    return provider_spec(raw, kind, str(raw.get("id") or default_id or f"judge:{raw.get(kind)}"), where)


def mapping_problems(raw: Mapping[str, object], pid: object) -> tuple[str | None, Found]:
    """The kind a provider mapping names, and what is wrong with it beyond its schema (each with the key
    path under the provider it is about)."""
    kinds = provider_kinds()
    named = [k for k in kinds if k in raw]
    if len(named) != 1:
        return None, [((), f"a provider needs exactly one of {', '.join(repr(k) for k in kinds)}"
                       + (f" (found {', '.join(named)})" if named else ""))]
    kind = named[0]
    found: Found = list(kinds[kind].check(raw))
    accepted_by = [name for name, k in kinds.items() if "history" in k.keys]
    wrong = history_problem(raw.get("history"), kind, accepted_by)
    if wrong:
        found.append((("history",), f"provider '{pid}': {wrong}"))
    found.extend(_tool_key_problems(raw, kind))
    found.extend(_other_kinds_keys(raw, kind, kinds))
    return kind, found


def _other_kinds_keys(raw: Mapping[str, object], kind: str, kinds: dict[str, ProviderKind]) -> Found:
    """Keys another kind reads and this one does not (`system:` on an http provider) would be ignored
    silently: each is named (`history:` has its own message)."""
    found: Found = []
    for key in raw:
        owners = [name for name, k in kinds.items() if key in k.keys]
        if owners and kind not in owners and key != "history":
            found.append(((key,), f"'{key}' is for {' and '.join(f'{o}:' for o in owners)} providers; "
                                  f"{kind}: providers do not read it"))
    return found


def _tool_key_problems(raw: Mapping[str, object], kind: str) -> Found:
    """Tool calls are answered only for model providers, and not with `answer_tool_calls: false`; each
    tool result names a declared tool."""
    found: Found = []
    for key in MODEL_ONLY_KEYS:
        if key in raw and kind != "model":
            found.append(((key,), f"'{key}' is for model providers: {kind} providers report their tool "
                                  "calls (they are recorded, not answered)"))
    if "max_tool_rounds" in raw and kind not in ROUND_KINDS:
        found.append((("max_tool_rounds",), f"'max_tool_rounds' is for model and python providers: {kind} "
                                            "providers report their tool calls (they are recorded, not answered)"))
    if raw.get("answer_tool_calls") is False and kind == "model":
        found.extend(((key,), f"'{key}' is not read with answer_tool_calls: false (the model's tool calls are "
                              "reported, not answered)") for key in ("tool_results", "max_tool_rounds") if key in raw)
    tools, results = raw.get("tools"), raw.get("tool_results")
    if isinstance(tools, list) and isinstance(results, dict):
        names = [t.get("function", t).get("name") for t in tools if isinstance(t, dict)]
        for name in results:
            if name not in names:
                found.append((("tool_results", name), f"tool_results for '{name}', which is not in `tools`"
                              + (did_you_mean(str(name), [str(n) for n in names])
                                 or f" (tools: {', '.join(map(str, names))})")))
    return found
