"""Provider keys nothing reads are refused, not silently ignored (strict YAML)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.config import load_suite
from evalspec.core.errors import ConfigError


def test_provider_vars_are_an_unknown_key(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: bot\n    python: bot.py:respond\n    vars: {x: 1}\n"
                    "tests:\n  - conversation:\n      - user: hi\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"s.yaml:4.*unknown key 'vars'"):
        load_suite(path)


@pytest.mark.parametrize(("provider", "line", "message"), [
    ("http: {url: 'http://127.0.0.1:1/chat'}\n    system: 你是客服", 4,
     "'system' is for model: providers; http: providers do not read it"),
    ("python: bot.py:respond\n    api_base: http://127.0.0.1:1/v1", 4,
     "'api_base' is for model: providers; python: providers do not read it"),
])
def test_a_key_only_another_kind_reads_is_named_with_its_line(tmp_path: Path, provider: str, line: int,
                                                               message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"providers:\n  - id: bot\n    {provider}\ntests:\n  - conversation:\n      - user: hi\n",
                    encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_suite(path)
    assert f"s.yaml:{line}: providers[0]" in str(err.value) and message in str(err.value)


def test_history_keeps_its_own_rule_on_kinds_without_a_strategy(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: bot\n    http: {url: 'http://127.0.0.1:1/chat'}\n    history: {mode: full}\n"
                    "tests:\n  - conversation:\n      - user: hi\n", encoding="utf-8")
    assert load_suite(path).providers[0].kind == "http"
