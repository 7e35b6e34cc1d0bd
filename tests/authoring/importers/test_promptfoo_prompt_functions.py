"""promptfoo's prompt functions (`prompts: [file://prompt.js:fn]`, `file://prompt.py:fn`): called at import for
each test and provider with `{vars, provider, config}`, as promptfoo calls them; text and text-only chat
messages become the turn, anything else is listed as not converted or refuses the import naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.authoring.importers.helpers import import_config, written

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")

FILES = {
    "prompt.js": "module.exports.ask = ({vars, provider}) => `Tell me about ${vars.topic} ({{ tone }})`;\n"
                 "module.exports.chat = async ({vars, config}) => [\n"
                 "  {role: 'system', content: config.persona},\n"
                 "  {role: 'user', content: [{type: 'text', text: 'About ' + vars.topic}]}];\n"
                 "module.exports.image = ({vars}) => [{role: 'user', content: [\n"
                 "  {type: 'text', text: 'What is this?'}, {type: 'image_url', image_url: {url: vars.topic}}]}];\n"
                 "module.exports.each = ({provider}) => 'Hello ' + provider.id;\n"
                 "module.exports.fails = () => { throw new Error('no template'); };\n",
    "esm.mjs": "export default ({vars}) => ({prompt: 'Short: ' + vars.topic, config: {temperature: 0}});\n",
    "prompt.py": "import json\n\n"
                 "def ask(context):\n    print('noise')\n    return 'Py about ' + context['vars']['topic']\n\n"
                 "class Prompt:\n    @staticmethod\n    def chat(context):\n"
                 "        return [{'role': 'user', 'content': 'Chat about ' + context['vars']['topic']}]\n",
}


def project(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    for name, text in FILES.items():
        (tmp_path / "pf" / name).write_text(text, encoding="utf-8")


def config(prompt: Any, providers: list[str] | None = None) -> dict[str, Any]:
    return {"prompts": [prompt], "providers": providers or ["openai:gpt-4o-mini"],
            "tests": [{"vars": {"topic": "猫", "tone": "calm"}, "assert": [{"type": "contains", "value": "x"}]},
                      {"vars": {"topic": "dogs", "tone": "wild"}, "assert": [{"type": "contains", "value": "y"}]}]}


@pytest.mark.parametrize(("prompt", "turns", "system"), [
    ("file://prompt.js:ask", ["Tell me about 猫 (calm)", "Tell me about dogs (wild)"], None),
    ({"id": "file://prompt.js:chat", "config": {"persona": "A vet."}}, ["About 猫", "About dogs"], "A vet."),
    ("file://esm.mjs", ["Short: 猫", "Short: dogs"], None),
    ("file://prompt.py:ask", ["Py about 猫", "Py about dogs"], None),
    ("file://prompt.py:Prompt.chat", ["Chat about 猫", "Chat about dogs"], None),
])
def test_a_prompt_function_is_called_for_each_test(tmp_path: Path, prompt: Any, turns: list[str],
                                                    system: str | None) -> None:
    project(tmp_path)
    code, _, err = import_config(tmp_path, config(prompt))
    assert code == 0, err
    suite = written(tmp_path)
    assert [t["conversation"][0]["user"] for t in suite["tests"]] == turns
    assert suite["providers"][0].get("system") == system
    if prompt == "file://esm.mjs":
        assert "prompt file://esm.mjs: the provider settings it returns (config: temperature)" in err


@pytest.mark.parametrize(("prompt", "said"), [
    ("file://prompt.js:fails", "prompt file://prompt.js:fails gave no prompt: Error: no template"),
    ("file://prompt.js:none", "prompt file://prompt.js:none gave no prompt: no export 'none'"),
    ("file://prompt.py:none", "prompt file://prompt.py:none gave no prompt: AttributeError"),
])
def test_a_prompt_function_that_fails_refuses_the_import_naming_it(tmp_path: Path, prompt: str, said: str) -> None:
    project(tmp_path)
    code, _, err = import_config(tmp_path, config(prompt))
    assert code == 2 and said in err and "Traceback" not in err, err


def test_a_prompt_that_differs_between_providers_is_not_one_suite(tmp_path: Path) -> None:
    project(tmp_path)
    code, _, err = import_config(tmp_path, config("file://prompt.js:each", ["openai:gpt-4o-mini", "openai:gpt-4o"]))
    assert code == 2 and "gives each provider a different prompt (openai:gpt-4o-mini, openai:gpt-4o)" in err
    code, _, err = import_config(tmp_path, config("file://prompt.js:each"))
    assert code == 0, err
    assert written(tmp_path)["tests"][0]["conversation"][0]["user"] == "Hello openai:gpt-4o-mini"


def test_multimodal_messages_from_a_prompt_function_are_not_converted(tmp_path: Path) -> None:
    project(tmp_path)
    code, _, err = import_config(tmp_path, config("file://prompt.js:image"))
    assert code == 2
    assert "prompt file://prompt.js:image: gives messages that are not text (images, audio, several parts)" in err


def test_a_prompt_function_that_gives_nothing_is_reported_once(tmp_path: Path) -> None:
    project(tmp_path)
    (tmp_path / "pf" / "odd.js").write_text("module.exports.nothing = () => undefined;\n", encoding="utf-8")
    code, _, err = import_config(tmp_path, config("file://odd.js:nothing"))
    assert code == 2 and err.count("prompt file://odd.js:nothing gave nothing, not a text or messages") == 1, err
