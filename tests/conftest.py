from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# reports in English unless a test asks for another language: most fixtures are Chinese conversations,
# whose reports would otherwise be Chinese (SPEC §21); tests of the language choice remove it
os.environ["EVALSPEC_LANG"] = "en"


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run with the working directory in a temporary folder (runs and cache land there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
