"""MT-Bench-101 data becomes one golden-history suite per task, every judged turn graded, the lowest one scoring."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalspec import run
from evalspec.app.cli.main import main
from evalspec.authoring.importers.mtbench101 import import_mtbench101, judged_turns
from evalspec.config import load_suites
from evalspec.play.runner import RunOptions
from tests import TESTS
from tests.servers import OpenAIServer, Reply, chat_body

DATA = TESTS / "data" / "mtbench101-sample.jsonl"


def test_one_test_per_dialogue_judged_per_turn_scored_by_its_lowest_turn(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    gr2 = next(r for r in rows if r["task"] == "GR" and r["id"] == 2)
    judged: list[str] = []

    def script(request: dict[str, Any], n: int) -> Reply:
        if request["model"] == "judge":
            prompt = request["messages"][-1]["content"]
            judged.append(prompt)
            low = gr2["history"][2]["user"] in prompt and gr2["history"][3]["user"] not in prompt
            return Reply(body=chat_body(json.dumps({"reason": "checked", "level": "3" if low else "9"})))
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
        test = gr.tests[0]
        assert test.matrix == {"turn": [1, 2, 3]} and test.reduce == "min"
        assert [t.kind for t in test.conversation] == ["user", "assistant"] * 3
        rubric = test.conversation[4].asserts[0]
        assert rubric.type == "llm-rubric" and rubric.options["reference"] == rows[0]["history"][2]["bot"]
        assert list(rubric.options["levels"]) == [str(n) for n in range(10, 0, -1)]
        data = run([gr.path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    calls = [c for c in server.chats() if c["model"] == "under-test"]
    assert len(calls) == 3 + 4 + 3 and len(judged) == 10  # every turn of every dialogue, one verdict each
    sent = [[m["content"] for m in c["messages"]] for c in calls]
    h = rows[0]["history"]
    assert [h[0]["user"], h[0]["bot"], h[1]["user"]] in sent  # [turn=2]: the golden turn 1, then turn 2
    assert len(data["results"]) == 10  # each instance is listed
    assert [(v["test_id"], v["status"], v["n"]) for v in data["verdicts"]] == [
        ("GR-1", "passed", 3), ("GR-2", "failed", 4), ("GR-3", "passed", 3)]
    assert data["verdicts"][1]["score_mean"] == 0.2222  # the lowest turn's level ("3")
    assert data["gate"]["suites"][0]["passed"] == 2 and data["gate"]["suites"][0]["failed"] == 1
    assert any(h[2]["bot"] in prompt for prompt in judged)  # a reasoning task's judge sees the golden reply


def test_the_benchmark_rules_pick_the_judged_turns_and_the_reference() -> None:
    suites = {s.filename: s.data["tests"] for s in import_mtbench101(DATA)}
    ar = suites["mtbench101-AR.yaml"][0]  # anaphora resolution: the first turn only sets up the dialogue
    assert ar["matrix"] == {"turn": [2, 3, 4]} and "assert" not in ar["conversation"][0]
    assert all("reference" not in e["assert"][0] for e in ar["conversation"] if "assert" in e)
    mr = suites["mtbench101-MR.yaml"][0]  # mathematical reasoning: every turn, against the golden reply
    assert mr["matrix"] == {"turn": [1, 2]} and mr["conversation"][0]["assert"][0]["reference"]
    assert judged_turns("SC", 1) == [] and judged_turns("PI", 3) == [1, 2, 3]


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
    sent = [[m["content"] for m in c["messages"]] for c in server.chats() if c["model"] == "under-test"]
    assert sorted(sent, key=len) == [[history[0]["user"]], [history[0]["user"], history[0]["bot"], history[1]["user"]]]
    assert any(history[1]["bot"] in j for j in judged) and not any("sk-never-sent" in j for j in judged)
