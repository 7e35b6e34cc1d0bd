"""`evalspec --help` and `--version` answer without loading the package (docs/en/scale-and-ray.md): the
command line's group imports no suite loader, no YAML parser, no check, no run.json types, no schema
validator, no template engine and no model client; `import evalspec` imports its public names on first use, and the
built-in checks register themselves on the registry's first lookup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import evalspec

ROOT = Path(evalspec.__file__).parent.parent
HEAVY = ("jsonschema", "jinja2", "litellm", "yaml", "evalspec.authoring", "evalspec.assertions", "evalspec.results.rundata",
         "evalspec.config.loader", "evalspec.config.model", "evalspec.app.api")


def _fresh(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in a new interpreter (this one has imported everything already)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("EVALSPEC_LANG", None)  # as people run it: the language is guessed (from no suite at all)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_the_group_answers_without_the_heavy_modules(flag: str, tmp_path: Path) -> None:
    done = _fresh(f"""
        import json, sys
        from evalspec.app.cli.main import main
        try:
            main([{flag!r}])
        except SystemExit as exc:
            code = exc.code
        print(json.dumps({{"code": code, "modules": sorted(sys.modules)}}))
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["code"] in (0, None)
    assert ("evalspec, version" if flag == "--version" else "Test chatbots") in done.stdout
    loaded = [m for m in HEAVY if m in last["modules"] or any(n.startswith(m + ".") for n in last["modules"])]
    assert loaded == [], f"`evalspec {flag}` imported {loaded}"


def test_the_public_names_and_the_builtin_checks_load_on_use(tmp_path: Path) -> None:
    done = _fresh("""
        import sys
        import evalspec
        assert "evalspec.app.api" not in sys.modules
        from evalspec import assertion
        from evalspec.extend.registry import resolve_type, all_type_names
        assert "evalspec.assertions.builtin" not in sys.modules

        @assertion("测试-插件")
        def plugin(reply, value, ctx):
            \"\"\"A plugin's check: registered beside the built-in ones.\"\"\"
            return True

        @assertion("regex")
        def mine(reply, value, ctx):
            'a plugin of its own regex, registered before the first lookup: it wins, as it did before'  # noqa
            return True

        assert resolve_type("contains") is not None  # the first lookup registers the built-in checks
        assert {"contains", "测试-插件"} <= set(all_type_names())
        assert resolve_type("regex")[0].fn is mine
        from evalspec import Run, run, Suite, ConfigError
        from evalspec.app.api import Run as Home
        assert Run is Home and callable(run) and "Run" in dir(evalspec)
        assert resolve_type("regex")[0].fn is mine
        try:
            evalspec.no_such_name
        except AttributeError as exc:
            assert "no_such_name" in str(exc)
        else:
            raise AssertionError("an unknown name must raise AttributeError")
        print("ok")
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
