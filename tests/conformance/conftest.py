from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.bots import Bots


@pytest.fixture(scope="session")
def bots() -> Iterator[Bots]:
    """The loopback http bot, model, Rasa assistant and judge, one per session (tests/conformance/bots.py)."""
    with Bots() as server:
        yield server


@pytest.fixture(scope="session")
def cells_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("conformance")
