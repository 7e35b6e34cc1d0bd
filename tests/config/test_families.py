"""`validate` warns when a judge and a system under test share a model family (docs/en/judges.md#same-family-judges)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.config.families import model_family
from tests.helpers import invoke


@pytest.mark.parametrize(("model", "family"), [
    ("openai/gpt-4o", "gpt"), ("gpt-4o-mini", "gpt"), ("openai/qwen2.5-7b", "qwen"), ("dashscope/qwen-plus", "qwen"),
    ("deepseek/deepseek-chat", "deepseek"), ("ollama/Llama3.1:8b", "llama"), ("openai/4o", ""),
])
def test_a_models_family_is_its_name_up_to_the_first_non_letter(model: str, family: str) -> None:
    assert model_family(model) == family


LOCAL = "api_base: 'http://127.0.0.1:9/v1'"


def write(tmp_path: Path, system: str, judge: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers: [{{id: bot, model: {system}, api_base: "http://127.0.0.1:9/v1"}}]
judge: {judge}
tests:
  - conversation: [{{user: 你好}}]
    assert: [{{llm-rubric: 礼貌}}]
""", encoding="utf-8")
    return path


def test_a_judge_of_the_systems_family_is_warned_and_strict_makes_it_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "openai/gpt-4o", f"{{model: openai/gpt-4o-mini, {LOCAL}}}")
    code, output = invoke("validate", str(path))
    assert code == 0
    assert (f"warning {path}:2: judge: the judge 'openai/gpt-4o-mini' and the system under test 'bot' (openai/gpt-4o) "
            "are both of the 'gpt' family") in output
    code, output = invoke("validate", "--strict", str(path))
    assert code == 2 and "'gpt' family" in output


def test_each_jury_member_is_compared_whatever_the_provider_prefix(tmp_path: Path) -> None:
    path = write(tmp_path, "openai/qwen-plus",
                 f"[{{model: deepseek/deepseek-chat, {LOCAL}}}, {{model: openai/qwen2.5-7b, {LOCAL}}}]")
    code, output = invoke("validate", str(path))
    assert code == 0 and "judge[1]: the judge 'openai/qwen2.5-7b'" in output and "'qwen' family" in output
    assert "deepseek-chat' and" not in output


def test_judges_of_other_families_are_not_warned(tmp_path: Path) -> None:
    code, output = invoke("validate", str(write(tmp_path, "openai/gpt-4o", f"{{model: deepseek/deepseek-chat, {LOCAL}}}")))
    assert code == 0 and "family" not in output
