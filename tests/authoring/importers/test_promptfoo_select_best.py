"""promptfoo's `select-best` (a judge picks the best of one test case's outputs, every prompt × provider)
becomes one evalspec test whose matrix is the rendered prompt, on the same providers; what would change
the outputs compared is listed as not converted."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from evalspec import run
from evalspec.config import load_suite
from evalspec.play.runner import RunOptions
from tests.authoring.importers.helpers import import_config
from tests.helpers import LITELLM
from tests.servers import OpenAIServer, Reply, chat_body, echo


def config(base: str, **extra: Any) -> dict[str, Any]:
    model = {"apiBaseUrl": base, "apiKey": "sk-test-1234567"}
    return {
        "prompts": ["Write a tweet about {{topic}}", "Write a very concise, funny tweet about {{topic}}"],
        "providers": [{"id": "openai:chat:gpt-4o-mini", "config": model},
                      {"id": "openai:chat:gpt-4o", "config": model}],
        "defaultTest": {"options": {"provider": {"id": "openai:chat:gpt-4o-mini", "config": model}}},
        "tests": [{"vars": {"topic": "bananas"},
                   "assert": [{"type": "contains", "value": "bananas"},
                              {"type": "select-best", "value": "choose the funniest tweet"}]}],
        **extra,
    }


def imported(tmp_path: Path) -> dict[str, Any]:
    return yaml.safe_load(next((tmp_path / "out").glob("*.yaml")).read_text(encoding="utf-8"))


def bots_and_judge(request: dict[str, Any], n: int) -> Reply:
    """Echoes the prompt to the systems under test, naming the model; as the judge, picks the funny candidate
    of gpt-4o (one candidate, whichever order the judge is shown them in)."""
    if "strict, impartial evaluator" not in request["messages"][0]["content"]:
        said = echo(request, n).body["choices"][0]["message"]["content"]
        return Reply(body=chat_body(f"[{request['model']}] {said}"))
    blocks = re.findall(r'<candidate index="(\d+)">\n(.*?)\n</candidate>', request["messages"][-1]["content"], re.S)
    best = next(int(i) for i, text in blocks if "funny" in text and text.startswith("[gpt-4o]"))
    return Reply(body=chat_body(json.dumps({"reason": "funnier", "best": best})))


@LITELLM
def test_the_prompts_become_a_matrix_and_every_prompt_and_provider_is_a_candidate(tmp_path: Path) -> None:
    with OpenAIServer(bots_and_judge) as server:
        code, out, err = import_config(tmp_path, config(server.base))
        assert code == 0, out + err
        suite = imported(tmp_path)
        [test] = suite["tests"]
        assert test["matrix"] == {"prompt": ["Write a tweet about bananas",
                                             "Write a very concise, funny tweet about bananas"]}
        assert test["conversation"] == [{"user": "{{ prompt }}", "assert": [{"contains": "bananas"}]}]
        assert test["assert"] == [{"select-best": "choose the funniest tweet"}]
        assert "select-best" not in out + err  # converted, not listed
        path = next((tmp_path / "out").glob("*.yaml"))
        load_suite(path)  # validates as written
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    judged = [c for c in server.chats() if "strict, impartial" in c["messages"][0]["content"]]
    assert len(judged) == 2 and all(c["messages"][-1]["content"].count("<candidate index=") == 4 for c in judged)
    won = [(r["test_id"], r["provider"]) for r in data["results"] if r["status"] == "passed"]
    assert len(data["results"]) == 4 and len(won) == 1
    assert "funny" in won[0][0]


def test_prompts_bound_to_providers_are_not_converted(tmp_path: Path) -> None:
    source = config("http://127.0.0.1:9/v1")
    source["prompts"] = [{"raw": p, "label": f"p{k}"} for k, p in enumerate(source["prompts"])]
    source["providers"][0]["prompts"] = ["p0"]
    source["providers"][1]["prompts"] = ["p1"]
    code, out, err = import_config(tmp_path, source)
    assert code == 0, out + err
    assert "tests[0].assert[1]: assertion type 'select-best' (prompts bound to providers" in out + err
    assert all("select-best" not in json.dumps(t) for t in imported(tmp_path)["tests"])


def test_one_output_or_a_transformed_one_is_not_converted(tmp_path: Path) -> None:
    source = config("http://127.0.0.1:9/v1")
    source["prompts"] = source["prompts"][:1]
    source["providers"] = source["providers"][:1]
    code, out, err = import_config(tmp_path, source)
    assert "assertion type 'select-best' (with one output to compare (promptfoo refuses it))" in out + err
    source = config("http://127.0.0.1:9/v1")
    source["tests"][0]["options"] = {"transform": "output.toUpperCase()"}
    code, out, err = import_config(tmp_path, source)
    assert "assertion type 'select-best' (on the output transformed by `options.transform`)" in out + err


def test_a_select_best_test_beside_other_tests_is_written_and_counts_as_checked(tmp_path: Path) -> None:
    source = config("http://127.0.0.1:9/v1")
    source["tests"] = [{"vars": {"topic": "香蕉"}, "assert": [{"type": "select-best", "value": "最好笑"}]},
                       {"vars": {"topic": "苹果"}, "assert": [{"type": "contains", "value": "苹果"}]}]
    code, out, err = import_config(tmp_path, source)
    assert code == 0, out + err
    tests = imported(tmp_path)["tests"]
    assert [t["id"] for t in tests] == ["test-1", "test-2-prompt-1", "test-2-prompt-2"]
    assert tests[0]["assert"] == [{"select-best": "最好笑"}] and len(tests[0]["matrix"]["prompt"]) == 2
    assert "left out" not in err
