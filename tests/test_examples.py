"""The example suites (which need a model or a server) validate offline, and stop before any call
with a message naming the missing setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_validates(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-example-not-used")  # validate checks a key is there, as run does
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output


def test_model_examples_need_a_key_and_say_so(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name, missing in (("simulated_users.yaml", "simulator 'simulator'"), ("context_strategies.yaml", "provider 'window-4'")):
        result = CliRunner().invoke(main, ["run", str(ROOT / "examples" / name)])
        assert result.exit_code == 2, result.output
        assert missing in result.output and "OPENAI_API_KEY" in result.output
