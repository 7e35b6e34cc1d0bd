"""Provider keys nothing reads are refused, not silently ignored (strict YAML)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.config import load_suite
from evalspec.errors import ConfigError


def test_provider_vars_are_an_unknown_key(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: bot\n    python: bot.py:respond\n    vars: {x: 1}\n"
                    "tests:\n  - conversation:\n      - user: hi\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"s.yaml:4.*unknown key 'vars'"):
        load_suite(path)
