"""Fixtures of the view tests: the project and its `evalspec view` once per module, one browser per session."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.app.view.project import CHROMIUM, REVIEWER, Chromium, Project, View, make_project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return make_project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
def view(project: Project) -> Iterator[View]:
    """`evalspec view DIR --port 0` in a subprocess; its first line is the address with the token. Without
    the suite-wide EVALSPEC_LANG: its pages speak the runs' language (Chinese), as a team's would."""
    env = {k: v for k, v in os.environ.items() if k != "EVALSPEC_LANG"}
    process = subprocess.Popen([sys.executable, "-m", "evalspec", "view", str(project.root), "--port", "0",
                                "--reviewer", REVIEWER], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               encoding="utf-8")
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    try:
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url, url + (process.stderr.read() if process.stderr else "")
        base, token = url.split("?token=")
        yield View(url, base, token, process)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[Chromium]:
    """One headless system Chromium for the session (never a downloaded one); skipped only without it."""
    if not CHROMIUM.exists():
        pytest.skip("needs /usr/bin/chromium (CI installs it)")
    chromium = Chromium()
    try:
        yield chromium
    finally:
        chromium.close()
