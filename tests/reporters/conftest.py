from __future__ import annotations

from typing import Any

import pytest

from tests.reporters.golden import fixed, sections


@pytest.fixture
def fixed_run() -> dict[str, Any]:
    return fixed()


@pytest.fixture
def sections_run() -> dict[str, Any]:
    return sections()
