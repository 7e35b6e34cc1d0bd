"""Persona presets (docs/en/agents.md#persona-presets): `persona: {preset, text}` adds a tested description
of that kind of user, in the suite's language, to the persona the simulator is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec import load_suite, run
from evalspec.config.personas import PRESETS, preset_text
from evalspec.core.text import chinese_turn
from evalspec.play.runner import RunOptions
from tests import ROOT
from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body

SCHEMA = json.loads((ROOT / "schema" / "suite.schema.json").read_text(encoding="utf-8"))


def write(tmp_path: Path, persona: str, goal: str = "问清分期", head: str = "") -> Path:
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '好的'\n", encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: "bot.py:respond"}}]
{head}tests:
  - id: buyer
    simulate:
      persona: {persona}
      goal: {goal}
      max_turns: 1
""", encoding="utf-8")
    return path


def persona_of(path: Path) -> str:
    sim = load_suite(path).tests[0].simulate
    assert sim is not None
    return sim.persona


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_each_preset_has_a_chinese_and_an_english_text(name: Any) -> None:
    zh, en = preset_text(name, "zh"), preset_text(name, "en")
    assert chinese_turn(zh) and not chinese_turn(en)
    assert len(zh) >= 30 and len(en.split()) >= 15  # a description of the behaviour, not a label


def test_the_schema_names_exactly_the_presets() -> None:
    persona = SCHEMA["$defs"]["test"]["properties"]["simulate"]["properties"]["persona"]
    enums = [o["properties"]["preset"]["enum"] for o in persona["anyOf"] if o.get("type") == "object"]
    assert enums == [list(PRESETS)]


def test_a_preset_is_added_to_the_persona_text_in_the_suites_language(tmp_path: Path) -> None:
    assert persona_of(write(tmp_path, "{preset: impatient, text: 想买二手车的年轻人}")) == \
        "想买二手车的年轻人\n" + PRESETS["impatient"]["zh"]
    assert persona_of(write(tmp_path, "{preset: elderly}", goal="ask about financing")) == PRESETS["elderly"]["en"]
    # `report: {lang}` decides over the texts
    assert persona_of(write(tmp_path, "{preset: vague}", head="report: {lang: en}\n")) == PRESETS["vague"]["en"]


def test_an_unknown_preset_is_a_config_error_with_its_line_and_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "{preset: impatiant, text: 年轻人}")
    code, out = invoke("validate", str(path))
    assert code == 2
    assert f"{path}:5: tests[0].simulate.persona.preset" in out
    assert "'impatiant' is not one of impatient, vague, changes_mind, code_switch, pushy, elderly" in out
    assert "(did you mean 'impatient'?)" in out


def test_the_simulator_is_given_the_presets_text(tmp_path: Path) -> None:
    def simulator(request: dict[str, Any], n: int) -> Reply:
        return Reply(body=chat_body(json.dumps({"message": "能分期吗？"}, ensure_ascii=False)))

    with OpenAIServer(simulator) as server:
        head = f'simulator: {{model: openai/sim, api_base: "{server.base}", api_key: x}}\n'
        path = write(tmp_path, "{preset: pushy, text: 想买车的顾客}", head=head)
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
        system = server.chats()[0]["messages"][0]["content"]
    assert data["results"][0]["stop_reason"] == "max_turns"
    assert f"Persona: 想买车的顾客\n{PRESETS['pushy']['zh']}" in system
