"""What a python provider's function is handed: its own copy of the history, tool results named."""

from __future__ import annotations

import os
from pathlib import Path

from evalspec.extend.transcript import ChatMessage
from evalspec.providers.python_provider import PythonProvider, named_results


def test_a_history_without_tool_results_is_handed_as_a_list_of_its_own() -> None:
    history: list[ChatMessage] = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "收到"}]
    sent = named_results(history)
    assert sent == history and sent is not history  # the function may append to it: the transcript stays


def test_tool_results_are_named_by_the_call_they_answer() -> None:
    history: list[ChatMessage] = [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                            "function": {"name": "lookup", "arguments": "{}"}}]},
        {"role": "tool", "content": "查到", "tool_call_id": "c1"}]
    assert named_results(history)[1]["name"] == "lookup"
    assert "name" not in history[1]


def test_the_suite_folder_is_fixed_when_the_provider_is_built(tmp_path: Path) -> None:
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        provider = PythonProvider("p", "bot.py:respond", Path("."))
    finally:
        os.chdir(here)
    # a function that changes directory later does not move the folder its files are kept relative to
    assert provider.base_dir == tmp_path.resolve() or provider.base_dir == Path(os.path.abspath(tmp_path))
