"""The Python API: run/arun over paths or loaded suites, inside a running loop, without touching its inputs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import evalspec
from evalspec import Run, arun, load_suite, run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions

SUITE = """
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: greets
    conversation:
      - user: 你好
        assert:
          - contains: 你好
  - id: fails
    conversation:
      - user: hello
        assert:
          - contains: bye
"""


@pytest.fixture
def suite_path(tmp_path: Path) -> Path:
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return 'echo ' + messages[-1]['content']\n")
    path = tmp_path / "s.yaml"
    path.write_text(SUITE, encoding="utf-8")
    return path


def test_run_takes_paths_or_loaded_suites_and_returns_a_typed_run(suite_path: Path, tmp_path: Path) -> None:
    by_path = run([suite_path], run_dir=tmp_path / "a", use_cache=False)
    by_suite = run(load_suite(suite_path), run_dir=tmp_path / "b", use_cache=False)
    for result in (by_path, by_suite):
        assert isinstance(result, Run)
        assert [r["status"] for r in result.records] == ["passed", "failed"]
        assert result.summary["by_status"]["passed"] == 1 and result.gate["passed"] is False and result.exit_code == 1
    assert by_suite.path == tmp_path / "b" / "run.json"


def test_a_run_reads_back_from_its_json(suite_path: Path, tmp_path: Path) -> None:
    result = run([suite_path], run_dir=tmp_path / "r", use_cache=False)
    assert result.path is not None
    again = Run.from_json(result.path)
    assert again.to_json() == result.to_json() and again.exit_code == 1
    copy = again.to_json()
    copy["results"].clear()
    assert len(again.records) == 2  # to_json hands out a copy
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ConfigError, match="not a run.json"):
        Run.from_json(tmp_path / "bad.json")


def test_arun_and_run_work_inside_a_running_event_loop(suite_path: Path, tmp_path: Path) -> None:
    async def main() -> tuple[Run, Run]:
        awaited = await arun([suite_path], run_dir=tmp_path / "x", use_cache=False)
        nested = run([suite_path], run_dir=tmp_path / "y", use_cache=False)  # a sync call from async code
        return awaited, nested

    awaited, nested = asyncio.run(main())
    assert awaited.exit_code == nested.exit_code == 1


def test_options_given_are_never_changed(suite_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    options = RunOptions(use_cache=False)
    result = run([suite_path], options=options, concurrency=2)
    assert options.run_dir is None and options.concurrency == 8
    assert result.path is not None and result.path.parent.parent == Path(".evalspec/runs")


def test_an_unknown_option_names_the_valid_ones(suite_path: Path) -> None:
    with pytest.raises(TypeError, match="unknown run option.*concurency.*valid: concurrency"):
        run([suite_path], concurency=2)


def test_the_public_api_is_small() -> None:
    assert evalspec.RunResult is Run
