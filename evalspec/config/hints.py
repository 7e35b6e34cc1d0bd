"""'indent it under ...': a key that is unknown where it is written but valid at another depth."""

from __future__ import annotations

from functools import lru_cache

from evalspec.config.paths import PathKey

# where a mapping sits -> its name in a message, and how deep it is (to say "indent" or "move out")
_PLACES = {"suite": ("the top level of the suite", 0), "provider": ("a provider", 1), "test": ("a test", 1),
           "turn": ("a conversation turn", 2), "assertion": ("an assertion item ('- TYPE: value')", 3),
           "simulate": ("'simulate:'", 2), "options": ("'options:'", 1), "gate": ("'gate:'", 1)}


@lru_cache(maxsize=1)
def _keys() -> dict[str, set[str]]:
    from evalspec.config.nodes import GateNode, OptionsNode, SimulateNode, SuiteNode, TestNode, TurnNode
    from evalspec.config.schema import provider_keys
    from evalspec.extend.registry import COMMON_KEYS, REGISTRY, load_installed_plugins

    load_installed_plugins()
    assertion = set(COMMON_KEYS) - {"type", "value"} | {o for t in REGISTRY.values() for o in t.options}
    return {"suite": set(SuiteNode.__annotations__), "provider": provider_keys(),
            "test": set(TestNode.__annotations__), "turn": set(TurnNode.__annotations__),
            "assertion": assertion, "simulate": set(SimulateNode.__annotations__),
            "options": set(OptionsNode.__annotations__), "gate": set(GateNode.__annotations__)}


def all_keys() -> set[str]:
    """Every key a suite has somewhere (to tell `user:你好` from a text that happens to hold a colon)."""
    return set().union(*_keys().values())


def place_of(path: PathKey) -> str | None:
    """The kind of mapping at `path` (the mapping that holds the key)."""
    if not path:
        return "suite"
    last = path[-1]
    parent = path[-2] if len(path) > 1 else None
    if isinstance(last, int):
        return {"providers": "provider", "targets": "provider", "tests": "test", "conversation": "turn",
                "assert": "assertion"}.get(str(parent))
    return {"defaults": "test", "simulate": "simulate", "options": "options", "gate": "gate"}.get(str(last))


def elsewhere(key: str, path: PathKey) -> str:
    """' — it belongs to ...: indent it under / move it out ...' or '' when the key is nowhere valid."""
    here = place_of(path)
    if here is None:
        return ""
    keys = _keys()
    if key in keys.get(here, set()):
        return ""
    if here in ("test", "turn") and _is_assertion(key):
        return (f": '{key}' is an assertion — put it in an `assert:` list (`assert:`, then `- {key}: ...` "
                f"indented under it)")
    homes = [p for p in _PLACES if key in keys[p] and p != here]
    if not homes:
        return ""
    depth = _PLACES[here][1]
    deeper = [p for p in homes if _PLACES[p][1] > depth]
    home = deeper[0] if deeper else homes[0]
    name = _PLACES[home][0]
    if _PLACES[home][1] > depth:
        return f": '{key}' belongs to {name} — indent it under the {name.split(' (')[0].removeprefix('an ').removeprefix('a ')} it is for"
    return f": '{key}' belongs to {name} — move it out (less indentation) to {name}"


def _is_assertion(key: str) -> bool:
    from evalspec.extend.registry import resolve_type

    return resolve_type(key) is not None
