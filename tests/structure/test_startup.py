"""What `evalspec run` imports: a python-provider run loads no HTTP stack and no litellm, and a run that
calls over HTTP loads its transport before its first call, never on the event loop mid-run.

Each run is a real `python -m evalspec run` in a subprocess, started through a small probe that notes,
for the watched modules, when they were first imported (how many tasks the event loop had then, and
the functions on the stack) and, at exit, every module the process had loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

from tests.servers import ChatbotServer, OpenAIServer, Reply, chat_body

# modules a python-provider run without templates never needs: the HTTP stack (~0.5 s to import),
# litellm (seconds), jinja2 (templates) and the progress bar (a terminal's)
NOT_FOR_PYTHON = ("aiohttp", "httpx_aiohttp", "httpx", "litellm", "openai", "jinja2", "rich.progress")
TRANSPORT = ("httpx_aiohttp", "aiohttp", "httpx")
# check modules a suite of `contains` and `not-regex` never needs (docs/en/scale-and-ray.md#start-up)
NOT_FOR_TEXT_CHECKS = ("evalspec.assertions.session", "evalspec.assertions.memory", "evalspec.assertions.world",
                       "evalspec.assertions.tools", "evalspec.assertions.sql", "evalspec.assertions.javascript",
                       "evalspec.assertions.pii", "evalspec.assertions.state")
# modules a passing plain run never needs, each imported where it is used (docs/en/scale-and-ray.md#start-up):
# Ray's executor (`--executor ray`), the diff of two runs (a baseline), fillers, coverage and milestones (a
# suite that has them), node (JavaScript checks), what failed (`findings`: a failure or a red line), the
# HTML report's escaping (markupsafe, with the reporters' HTML sections) and, without HTTP, the email parser
# (a `Retry-After` written as a date)
NOT_FOR_A_PLAIN_RUN = ("evalspec.play.ray_executor", "evalspec.play.cluster", "evalspec.results.compare",
                       "evalspec.plan.fillers", "evalspec.results.coverage", "evalspec.assertions.journey",
                       "evalspec.core.node", "evalspec.results.findings", "evalspec.reporters.state", "markupsafe",
                       "email.utils")

PROBE = '''
import asyncio, atexit, json, os, runpy, sys, traceback

seen = {}
watched = set(os.environ["PROBE_WATCH"].split(","))


class Probe:
    def find_spec(self, name, path=None, target=None):
        if name in watched and name not in seen:
            try:
                tasks = len(asyncio.all_tasks())
            except RuntimeError:  # no event loop running
                tasks = 0
            seen[name] = {"tasks": tasks, "stack": [f.name for f in traceback.extract_stack()]}
        return None


def dump():
    with open(os.environ["PROBE_OUT"], "w") as out:
        json.dump({"modules": sorted(sys.modules), "imports": seen}, out)


sys.meta_path.insert(0, Probe())
atexit.register(dump)
sys.argv = ["evalspec", *sys.argv[1:]]
runpy.run_module("evalspec", run_name="__main__", alter_sys=True)
'''

BOT = '''
def respond(messages, context):
    return "收到：" + messages[-1]["content"]
'''


def probe_run(folder: Path, suite: str, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """`evalspec run suite.yaml` in a subprocess: (what the probe saw, run.json)."""
    (folder / "probe.py").write_text(PROBE, encoding="utf-8")
    (folder / "bot.py").write_text(BOT, encoding="utf-8")
    (folder / "suite.yaml").write_text(suite, encoding="utf-8")
    env = {**os.environ, "EVALSPEC_SUPERVISE": "0",  # the probe looks at the process that plays the run
           "PROBE_OUT": str(folder / "probe.json"),
           "PROBE_WATCH": ",".join(sorted({*NOT_FOR_PYTHON, *TRANSPORT}))}
    done = subprocess.run([sys.executable, "probe.py", "run", "suite.yaml", "-q", "-o", "run.json",
                           "--no-cache", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads((folder / "probe.json").read_text(encoding="utf-8"))
    return seen, json.loads((folder / "run.json").read_text(encoding="utf-8"))


PYTHON_SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: greeting
    repeat: 3
    conversation:
      - user: 你好
      - user: 续航多少？
        assert:
          - contains: 收到
          - not-regex: "1[3-9]\\\\d{9}"
"""


def test_a_python_provider_run_loads_no_http_stack_and_no_litellm(tmp_path: Path) -> None:
    seen, run = probe_run(tmp_path, PYTHON_SUITE)
    assert [r["status"] for r in run["results"]] == ["passed"] * 3
    assert "evalspec.play.runner" in seen["modules"]  # the probe saw the whole run
    assert [m for m in NOT_FOR_PYTHON if m in seen["modules"]] == []
    assert "evalspec.assertions.text" in seen["modules"]
    assert [m for m in NOT_FOR_TEXT_CHECKS if m in seen["modules"]] == []


def test_a_plain_run_loads_no_ray_no_diff_and_no_html(tmp_path: Path) -> None:
    seen, run = probe_run(tmp_path, PYTHON_SUITE)
    assert [r["status"] for r in run["results"]] == ["passed"] * 3
    assert "evalspec.play.runner" in seen["modules"]
    assert [m for m in NOT_FOR_A_PLAIN_RUN if m in seen["modules"]] == []


def test_the_run_types_are_evaluated_at_import() -> None:
    """run.json's types and the suite's nodes hold types, not strings that each cost a compile at import."""
    from evalspec.config import nodes
    from evalspec.results import rundata

    strings = [f"{module.__name__}.{name}.{key}" for module in (rundata, nodes) for name in dir(module)
               if isinstance(kind := getattr(module, name), type) and kind.__module__ == module.__name__
               for key, hint in kind.__dict__.get("__annotations__", {}).items()
               if isinstance(hint, (str, typing.ForwardRef))]
    assert strings == ["evalspec.config.nodes.AssertionKeys.scope"]  # (it names a type written after it)


def assert_loaded_before_the_first_call(seen: dict[str, Any], modules: tuple[str, ...] = TRANSPORT) -> None:
    for name in modules:
        first = seen["imports"].get(name)
        assert first is not None, f"{name} was never imported"
        # the run's own task at most: no conversation was being played
        assert first["tasks"] <= 1, f"{name} imported with {first['tasks']} tasks on the loop: {first['stack']}"
        assert "run_instance" not in first["stack"] and "respond" not in first["stack"], first["stack"]


def test_an_http_provider_run_loads_its_transport_before_the_first_call(tmp_path: Path) -> None:
    with ChatbotServer() as server:
        seen, run = probe_run(tmp_path, f"""\
providers:
  - id: bot
    http: {{url: "{server.url}/chat", body: {{session: "{{{{ thread_id }}}}", text: "{{{{ message }}}}"}},
            headers: {{x-turn: "turn {{{{ turn }}}}"}}, response: data.reply, stateful: true}}
tests:
  - id: t
    repeat: 4
    conversation:
      - user: 我叫张三
      - user: 还记得我吗？
        assert: [{{contains: 张三}}]
""", "-j", "4")
    assert [r["status"] for r in run["results"]] == ["passed"] * 4
    assert len(server.requests) == 8
    assert_loaded_before_the_first_call(seen, (*TRANSPORT, "jinja2"))  # a header is a template
    assert "pygments" not in seen["modules"] and "httpx._main" not in seen["modules"]  # httpx's command line


def test_a_judge_on_the_lean_client_loads_its_transport_before_the_first_call(tmp_path: Path) -> None:
    verdict = json.dumps({"reason": "polite", "pass": True})
    with OpenAIServer(lambda request, n: Reply(body=chat_body(verdict))) as server:
        seen, run = probe_run(tmp_path, f"""\
providers:
  - id: bot
    python: bot.py:respond
judge: {{model: openai/judge, api_base: "{server.base}", api_key: test}}
tests:
  - id: t
    repeat: 3
    conversation:
      - user: 你好
    assert:
      - llm-rubric: 回复有礼貌
""", "-j", "3")
    assert [r["status"] for r in run["results"]] == ["passed"] * 3
    assert len(server.chats()) == 3
    assert_loaded_before_the_first_call(seen)
    assert "litellm" not in seen["modules"]
