"""The table of built-in checks (evalspec/assertions/builtin.py): each type → the module that registers
it, so that a run imports only the checks its suite names (docs/en/scale-and-ray.md#start-up). Pinned
here to what the check modules register, so it cannot go stale."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from importlib import import_module

import evalspec.assertions
from evalspec.assertions.builtin import TYPES
from evalspec.extend.registry import REGISTRY
from tests import ROOT


def test_the_table_names_every_type_the_check_modules_register_and_its_module() -> None:
    for found in pkgutil.iter_modules(evalspec.assertions.__path__):
        import_module(f"evalspec.assertions.{found.name}")
    registered = {name: t.fn.__module__ for name, t in REGISTRY.items() if t.fn.__module__.startswith("evalspec.")}
    assert registered == TYPES


def _fresh(code: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_looking_a_type_up_imports_its_module_only_and_listing_them_imports_all() -> None:
    seen = _fresh("""
        import json, sys
        from evalspec.extend.registry import all_type_names, resolve_type
        checks = lambda: sorted(m for m in sys.modules if m.startswith("evalspec.assertions."))
        contains, negated = resolve_type("not-contains")
        first = checks()
        assert resolve_type("没有这种检查") is None
        names = all_type_names()
        print(json.dumps({"type": contains.name, "negated": negated, "first": first, "names": names}))
    """)
    assert seen["type"] == "contains" and seen["negated"] is True
    assert "evalspec.assertions.text" in seen["first"]  # type: ignore[operator]
    assert not {"evalspec.assertions.graded", "evalspec.assertions.session", "evalspec.assertions.world",
                "evalspec.assertions.sql"} & set(seen["first"])  # type: ignore[arg-type]
    assert sorted(TYPES) == [n for n in seen["names"] if n in TYPES]  # type: ignore[union-attr]


def test_a_plugins_type_registered_first_wins_over_the_built_in_module_that_loads_later() -> None:
    seen = _fresh("""
        import json, sys
        from evalspec import assertion
        from evalspec.extend.registry import resolve_type

        @assertion("regex")
        def mine(reply, value, ctx):
            'a plugin of its own regex'
            return True

        @assertion("similar")
        def ours(reply, value, ctx):
            'a plugin of its own similar'
            return True

        resolve_type("contains")  # imports the text checks, which hold the built-in regex
        import evalspec.assertions.graded  # imported by other code, as a judged check's use does
        print(json.dumps({"regex": resolve_type("regex")[0].fn is mine,
                          "similar": resolve_type("similar")[0].fn is ours,
                          "graded": "evalspec.assertions.graded" in sys.modules}))
    """)
    assert seen == {"regex": True, "similar": True, "graded": True}
