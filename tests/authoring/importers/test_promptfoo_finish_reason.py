"""promptfoo's `finish-reason` imported with its meaning: the same verdicts against a loopback model; what
promptfoo reads otherwise (`not-finish-reason`, whose `not-` it ignores; a provider's own word) is listed
as not converted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.authoring.importers.helpers import import_config
from tests.servers import OpenAIServer, Reply, chat_body


def cut_when_long(request: dict[str, Any], n: int) -> Reply:
    """A model that is cut at its token limit when asked for something long, and stops otherwise."""
    asked = request["messages"][-1]["content"]
    body = chat_body(f"answer to {asked}")
    body["choices"][0]["finish_reason"] = "length" if "long" in asked else "stop"
    return Reply(body=body)


def config(base: str) -> dict[str, Any]:
    return {"prompts": ["Tell me {{ what }}"],
            "providers": [{"id": "openai:chat:test-model", "config": {"apiBaseUrl": base, "apiKey": "sk-test"}}],
            "tests": [
                {"description": "short", "vars": {"what": "a joke"},
                 "assert": [{"type": "finish-reason", "value": "stop", "threshold": 0.5}]},
                {"description": "long", "vars": {"what": "a long story"},
                 "assert": [{"type": "finish-reason", "value": "LENGTH"}]},
                {"description": "expects-tools", "vars": {"what": "the weather"},
                 "assert": [{"type": "finish-reason", "value": "tool_calls"}]},
                {"description": "not-converted", "vars": {"what": "a joke"},
                 "assert": [{"type": "not-finish-reason", "value": "length"},
                            {"type": "finish-reason", "value": "end_turn"},
                            {"type": "contains", "value": "joke"}]}]}


def test_finish_reason_checks_import_and_give_promptfoos_verdicts(tmp_path: Path) -> None:
    with OpenAIServer(cut_when_long) as server:
        code, _, err = import_config(tmp_path, config(server.base))
        assert code == 0, err
        path = tmp_path / "out" / "promptfooconfig.yaml"
        tests = {t["id"]: t for t in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]}
        assert tests["short"]["conversation"][0]["assert"] == [{"finish-reason": "stop"}]  # no threshold
        assert tests["not-converted"]["conversation"][0]["assert"] == [{"contains": "joke"}]
        results = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data["results"]
    verdicts = {r["test_id"]: [a["pass"] for a in r["assertions"]] for r in results}
    assert verdicts == {"short": [True], "long": [True], "expects-tools": [False], "not-converted": [True]}
    assert "tests[3].assert[0]: assertion 'not-finish-reason' (promptfoo ignores its `not-`" in err
    assert "tests[3].assert[1]: assertion 'finish-reason' value 'end_turn'" in err
