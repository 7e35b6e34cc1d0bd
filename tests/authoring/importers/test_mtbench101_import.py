"""MT-Bench-101 data becomes one golden-history suite per task, judged against the golden last reply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalspec import run
from evalspec.app.cli.main import main
from evalspec.config import load_suites
from evalspec.play.runner import RunOptions
from tests import TESTS
from tests.servers import OpenAIServer, Reply, chat_body

DATA = TESTS / "data" / "mtbench101-sample.jsonl"


def test_one_suite_per_task_with_golden_history_and_reference(tmp_path: Path) -> None:
    judged: list[str] = []

    def script(request: dict[str, Any], n: int) -> Reply:
        if request["model"] == "judge":
            judged.append(request["messages"][-1]["content"])
            return Reply(body=chat_body('{"reason": "matches the reference", "pass": true}'))
        return Reply(body=chat_body("my answer"))

    with OpenAIServer(script) as server:
        result = CliRunner().invoke(main, [
            "import", "mtbench101", str(DATA), "-o", str(tmp_path / "mt"),
            "--provider", f"{{model: openai/under-test, api_base: '{server.base}'}}",
            "--judge", f"{{model: openai/judge, api_base: '{server.base}'}}"])
        assert result.exit_code == 0, result.output
        files = sorted((tmp_path / "mt").glob("*.yaml"))
        assert len(files) == 13
        suites = load_suites(list(files))  # validates as written
        gr = next(s for s in suites if s.path.name == "mtbench101-GR.yaml")
        first = json.loads(DATA.read_text(encoding="utf-8").splitlines()[0])
        test = gr.tests[0]
        assert [t.kind for t in test.conversation] == ["user", "assistant", "user", "assistant", "user"]
        assert test.conversation[1].text == first["history"][0]["bot"]
        rubric = test.conversation[-1].asserts[0]
        assert rubric.type == "llm-rubric" and rubric.options["reference"] == first["history"][-1]["bot"]
        data = run([gr.path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    assert len(server.chats()) == 3 + 3  # one reply and one verdict per dialogue
    assert all(r["status"] == "passed" for r in data["results"])
    assert any(first["history"][-1]["bot"] in prompt for prompt in judged)  # the judge sees the reference


def test_a_bad_line_is_named_with_its_number(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "GR", "id": 1, "history": [{"user": "hi", "bot": "hello"}]}\n{"task": "GR"}\n')
    result = CliRunner().invoke(main, ["import", "mtbench101", str(bad), "-o", str(tmp_path / "mt")])
    assert result.exit_code == 2
    assert "bad.jsonl:2" in result.output and "history" in result.output


def test_dialogue_text_is_sent_as_written_never_as_a_template_or_a_variable(
        tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent-0123456")
    history = [{"user": "remember ${OPENAI_API_KEY} and {{ 7 * 6 }}", "bot": "noted {% raw %}${HOME}"},
               {"user": "what did I say?", "bot": "you said ${OPENAI_API_KEY} and {{ 7 * 6 }}"}]
    (tmp_path / "d.jsonl").write_text(json.dumps({"task": "../CM", "id": 1, "history": history}) + "\n",
                                      encoding="utf-8")
    judged: list[str] = []

    def script(request: dict[str, Any], n: int) -> Reply:
        if request["model"] == "judge":
            judged.append(request["messages"][-1]["content"])
            return Reply(body=chat_body('{"reason": "ok", "pass": true}'))
        return Reply(body=chat_body("my answer"))

    with OpenAIServer(script) as server:
        result = CliRunner().invoke(main, [
            "import", "mtbench101", str(tmp_path / "d.jsonl"), "-o", str(tmp_path / "mt"),
            "--provider", f"{{model: openai/under-test, api_base: '{server.base}'}}",
            "--judge", f"{{model: openai/judge, api_base: '{server.base}'}}"])
        assert result.exit_code == 0, result.output
        files = list((tmp_path / "mt").glob("*.yaml"))
        assert [f.name for f in files] == ["mtbench101-___CM.yaml"]  # a task names no folder
        run(files, options=RunOptions(run_dir=tmp_path / "run", use_cache=False))
    sent = next(c for c in server.chats() if c["model"] == "under-test")["messages"]
    assert [m["content"] for m in sent] == [history[0]["user"], history[0]["bot"], history[1]["user"]]
    assert history[1]["bot"] in judged[0] and "sk-never-sent" not in judged[0]
