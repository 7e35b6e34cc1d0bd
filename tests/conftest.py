from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.servers import ChatbotServer, OpenAIServer

if TYPE_CHECKING:
    from tests.raycluster import LocalCluster

ROOT = Path(__file__).resolve().parent.parent
# Bytecode where the environment turns its caching off (PYTHONDONTWRITEBYTECODE): every xdist worker would
# compile evalspec and pytest's rewritten test modules from source, and every `evalspec` subprocess and Ray
# worker evalspec again (over a minute of CPU a run of the suite). So the process that starts the workers
# compiles evalspec's own modules once (compileall), and the workers start with caching on until their
# collection ends; then it is off again, for them and the processes they start: code that the tests write
# and run is never cached (an edit of the same size within the same second would run the stale bytecode).
NO_BYTECODE = "EVALSPEC_TESTS_NO_BYTECODE"
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) or os.environ.get(NO_BYTECODE):
    os.environ[NO_BYTECODE] = "1"  # the workers inherit this environment: caching on, and this note
    sys.dont_write_bytecode = False
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# reports in English unless a test asks for another language: most fixtures are Chinese conversations,
# whose reports would otherwise be Chinese (SPEC §21); tests of the language choice remove it
os.environ["EVALSPEC_LANG"] = "en"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: this process starts them, or runs alone
        import compileall

        compileall.compile_dir(str(ROOT / "evalspec"), quiet=1)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[object]:
    try:
        return (yield)
    finally:
        if os.environ.get(NO_BYTECODE):  # collected (or, in the xdist controller, the workers started)
            os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
            sys.dont_write_bytecode = True


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest first: the grouped tests (`xdist_group`: under pytest-xdist, --dist loadgroup, each
    group's worker starts on it at once while the others share the rest), the Ray group's first, so the
    cluster starts at once; then the other Ray tests, which spread over the workers."""
    def order(item: pytest.Item) -> int:
        ray, grouped = "ray_cluster" in getattr(item, "fixturenames", ()), item.get_closest_marker("xdist_group")
        return 0 if ray and grouped else 1 if grouped else 2 if ray else 3

    items.sort(key=order)
    if getattr(config.option, "loadgroup", False):  # an xdist worker, --dist loadgroup
        _suffix_groups(items)


def _suffix_groups(items: list[pytest.Item]) -> None:
    """pytest-xdist sends a grouped test to its group's worker by the `@group` suffix it gives the test's
    node id; on pytest 9.2 that suffix no longer takes (pytest-xdist#1386: the id is structured now) and
    the groups are scattered, so it is given here (the same string pytest-xdist makes)."""
    try:
        from _pytest.nodeid import coerce_node_id
    except ImportError:  # a pytest before structured ids: pytest-xdist's own suffix works
        return
    for item in items:
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                        for mark in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = coerce_node_id(item.nodeid + suffix)  # type: ignore[attr-defined]


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run with the working directory in a temporary folder (runs and cache land there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """A two-node Ray cluster on this machine (tests/raycluster.py), one for the whole run of the suite:
    under pytest-xdist the first worker that needs it starts it, every worker uses it (so the Ray tests
    spread over the workers) and the process that started the workers stops it (`pytest_sessionfinish`)."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install 'evalspec[ray]')")
    from tests import raycluster

    if hasattr(request.config, "workerinput"):  # an xdist worker: the workers' temp folders share a parent
        yield raycluster.shared(tmp_path_factory.getbasetemp().parent)
        return
    running = raycluster.LocalCluster().start()
    try:
        yield running
    finally:
        running.stop()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The process that started the xdist workers stops the Ray cluster they shared, once all are done."""
    config = session.config
    temp = getattr(config, "_tmp_path_factory", None)
    if not hasattr(config, "workerinput") and temp is not None:
        from tests import raycluster

        raycluster.stop_shared(temp.getbasetemp())


@pytest.fixture(scope="session")
def _echo_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def echo_server(_echo_server: OpenAIServer) -> OpenAIServer:
    """An OpenAI-compatible server answering `echo: <last user message>` (tests/servers.py echo), one per
    session, its recorded requests, calls and keys forgotten before each test."""
    _echo_server.reset()
    return _echo_server


@pytest.fixture(scope="session")
def _chatbot_server() -> Iterator[ChatbotServer]:
    with ChatbotServer() as server:
        yield server


@pytest.fixture
def chatbot_server(_chatbot_server: ChatbotServer) -> ChatbotServer:
    """The stateful loopback chatbot (tests/servers.py), one per session, its sessions and recorded
    requests forgotten before each test."""
    _chatbot_server.reset()
    return _chatbot_server


@pytest.fixture
def clean_registries() -> Iterator[None]:
    """A plugin registers into process-wide tables (checks, provider kinds): give them back as they were."""
    import sys

    from evalspec.extend.kinds import PROVIDER_KINDS, provider_kinds
    from evalspec.extend.registry import REGISTRY, load_installed_plugins

    load_installed_plugins()
    provider_kinds()
    assertions, kinds = dict(REGISTRY), dict(PROVIDER_KINDS)
    yield
    REGISTRY.clear()
    REGISTRY.update(assertions)
    PROVIDER_KINDS.clear()
    PROVIDER_KINDS.update(kinds)
    for name in [m for m in sys.modules if m.startswith("evalspec_plugin_")]:
        del sys.modules[name]
