"""Imported text is text (SPEC §17, §26 "Identity and layout"): whatever an importer copies from its source
is sent as written — `{{ x }}` is not rendered as a template, `${HOME}` is not read from the environment.
One row per importer: its source holds the text as a user message, the imported suite is played against
a python bot, and the message the bot received equals the source text."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import invoke
from tests.servers import OpenAIServer

TEXT = "价格 {{ x }} 在 ${HOME} 里 {% if a %}b{% endif %}"

BOT = '''
def echo(messages, context):
    return messages[-1]["content"]
'''


def _csv(d: Path, bot: str, judge: str) -> list[str]:
    (d / "src.csv").write_text("test_id,user,contains\nt1," + json.dumps(TEXT, ensure_ascii=False) + "," + json.dumps(TEXT, ensure_ascii=False) + "\n",
                               encoding="utf-8")
    return ["csv", str(d / "src.csv"), "--provider", bot]


def _promptfoo(d: Path, bot: str, judge: str) -> list[str]:
    (d / "promptfooconfig.yaml").write_text(
        "prompts: ['{{ q }}']\ntests:\n  - vars: {q: " + json.dumps(TEXT, ensure_ascii=False) + "}\n"
        "    assert: [{type: contains, value: '{{ q }}'}]\n", encoding="utf-8")
    return ["promptfoo", str(d / "promptfooconfig.yaml"), "--provider", bot]


def _deepeval(d: Path, bot: str, judge: str) -> list[str]:
    goldens = [{"scenario": "询价", "expected_outcome": "报价", "turns": [{"role": "user", "content": TEXT}]}]
    (d / "goldens.json").write_text(json.dumps(goldens, ensure_ascii=False), encoding="utf-8")
    return ["deepeval", str(d / "goldens.json"), "--provider", bot, "--judge", judge]


def _mtbench101(d: Path, bot: str, judge: str) -> list[str]:
    row = {"task": "GR", "id": 1, "history": [{"user": TEXT, "bot": "20万"}]}
    (d / "mt.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    return ["mtbench101", str(d / "mt.jsonl"), "--provider", bot, "--judge", judge]


def _rasa(d: Path, bot: str, judge: str) -> list[str]:
    (d / "tests.yml").write_text("test_cases:\n  - test_case: 询价\n    steps:\n      - user: "
                                 + json.dumps(TEXT, ensure_ascii=False) + "\n      - bot: " + json.dumps(TEXT, ensure_ascii=False) + "\n", encoding="utf-8")
    return ["rasa", str(d / "tests.yml"), "--provider", bot]


def _botium(d: Path, bot: str, judge: str) -> list[str]:
    (d / "ask.convo.txt").write_text(f"询价\n\n#me\n{TEXT}\n\n#bot\n{TEXT}\n", encoding="utf-8")
    return ["botium", str(d / "ask.convo.txt"), "--provider", bot]


def _transcripts(d: Path, bot: str, judge: str) -> list[str]:
    row = {"id": "c1", "messages": [{"role": "user", "content": TEXT}, {"role": "assistant", "content": "20万"}]}
    (d / "logs.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    return ["transcripts", str(d / "logs.jsonl"), "--expect-state", "intent"]


CHECKED = ("csv", "promptfoo", "rasa", "botium")  # sources whose check holds the text too

IMPORTERS: dict[str, Callable[[Path, str, str], list[str]]] = {
    "csv": _csv, "promptfoo": _promptfoo, "deepeval": _deepeval, "mtbench101": _mtbench101, "rasa": _rasa,
    "botium": _botium, "transcripts": _transcripts,
}


@pytest.mark.parametrize("importer", list(IMPORTERS))
def test_an_imported_user_message_is_sent_exactly_as_the_source_wrote_it(
        importer: str, tmp_path: Path, echo_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/should-not-appear")
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    bot = f"python:{(tmp_path / 'bot.py').as_posix()}:echo"
    judge = f"{{model: openai/judge, api_base: '{echo_server.base}', api_key: k}}"
    args = IMPORTERS[importer](tmp_path, bot, judge)
    out = tmp_path / "out"
    target = [str(out / "s.yaml")] if importer == "transcripts" else [str(out)]
    code, output = invoke("import", *args, "-o", *target)
    assert code == 0, output
    suites = sorted(out.rglob("*.yaml"))
    assert suites, output
    if importer == "transcripts":  # a stub provider is written: point the suite at the bot instead
        text = suites[0].read_text(encoding="utf-8").replace("provider_stub.py:respond", bot.split(":", 1)[1])
        suites[0].write_text(text, encoding="utf-8")
    data = run(suites, options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    sent = [m["content"] for r in data["results"] for m in r["transcript"] if m["role"] == "user"]
    assert sent and sent[0] == TEXT, (sent, [r.get("error") for r in data["results"]])
    if importer in CHECKED:  # the source's check on that text is copied as written too: it passes on the echo
        assert [r["status"] for r in data["results"]] == ["passed"], data["results"][0]["assertions"]


def test_a_run_json_source_keeps_its_text_literal(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(
        "providers: [{id: bot, python: bot.py:echo}]\ntests:\n  - id: t\n    vars: {raw: " +
        json.dumps(TEXT.replace("${", "$${"), ensure_ascii=False) + "}\n    conversation:\n      - user: '{{ raw }}'\n"
        "    assert: [{contains: '{{ raw }}'}]\n", encoding="utf-8")
    played = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert played["results"][0]["transcript"][0]["content"] == TEXT
    code, output = invoke("import", "transcripts", str(tmp_path / "run" / "run.json"), "-o", str(tmp_path / "n.yaml"))
    assert code == 0, output
    data = run([tmp_path / "n.yaml"], options=RunOptions(run_dir=tmp_path / "replay", use_cache=False)).data
    assert data["results"][0]["transcript"][0]["content"] == TEXT and data["results"][0]["status"] == "passed"
