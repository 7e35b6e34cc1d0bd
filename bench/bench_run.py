"""Benchmark: 100 conversations × 5 turns against a loopback OpenAI-compatible server (50 ms latency), -j 50.

Prints wall time, calls, calls/s, CPU time and peak RSS of the whole `evalspec run` process, the ideal
(5 turns × 50 ms × ceil(100/50) = 0.5 s), and the same job with the cache warm.

    python bench/bench_run.py [--client lean|litellm] [--kind model|http] [--conversations 100] [--turns 5]
                              [--tool-rounds N]   (model: N tool rounds per turn, answered from tool_results)
                              [--promptfoo PATH/TO/promptfoo]

With `--promptfoo`, the same job is run by promptfoo in the same session against the same server: one
test per turn, the turns of a conversation tied by `metadata.conversationId` and the history given to the
model through `_conversation` (promptfoo's multi-turn form), `contains: 收到` on every reply; its wall time
is printed beside evalspec's cold run and the ratio. `npm install promptfoo@0.121.20` runs on Node 20.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from loopback_server import serving  # bench/: the directory of the script

HERE = Path(__file__).resolve().parent


TOOLS = ("    tools: [{type: function, function: {name: lookup, parameters: {type: object, required: [query],"
         " properties: {query: {type: string}}}}}]\n"
         "    tool_results: {lookup: '查到：{{ args.query }}'}\n")


def write_suite(path: Path, base: str, kind: str, client: str, conversations: int, turns: int,
                tool_rounds: int = 0) -> None:
    if kind == "model":
        provider = f"  - id: m\n    model: openai/bench-model\n    client: {client}\n    api_base: {base}/v1\n"
        if tool_rounds:
            provider += TOOLS + f"    max_tool_rounds: {tool_rounds}\n"
    else:
        provider = f"  - id: m\n    http: {{url: '{base}/bot', response: reply}}\n"
    lines = ["providers:", provider.rstrip("\n"), "tests:"]
    for i in range(conversations):
        lines.append(f"  - id: c{i}")
        lines.append("    conversation:")
        lines.extend(f"      - user: 第{i}段对话的第{t}个问题" for t in range(1, turns + 1))
        lines.append("    assert:")
        lines.append("      - {contains: 收到, scope: each_turn}")
        if kind == "model" and tool_rounds:
            lines.append(f"      - tool-called: {{name: lookup, count: {{min: {turns * tool_rounds}}}}}")
            lines.append("      - type: tool-args-valid")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


PROMPTFOO_PROMPT = ('[{% for c in _conversation %}{"role": "user", "content": {{ c.input | dump }}}, '
                    '{"role": "assistant", "content": {{ c.output | dump }}}, {% endfor %}'
                    '{"role": "user", "content": {{ question | dump }}}]')


def write_promptfoo(path: Path, base: str, conversations: int, turns: int) -> None:
    """The evalspec job as a promptfoo config: a test per turn, a conversation's turns tied by its id."""
    lines = ["description: evalspec bench_run", "prompts:", "  - id: conversation", "    raw: |",
             "      " + PROMPTFOO_PROMPT, "providers:", "  - id: openai:chat:bench-model",
             f"    config: {{apiBaseUrl: '{base}/v1', apiKey: bench}}", "defaultTest:", "  assert:",
             "    - {type: contains, value: 收到}", "tests:"]
    for i in range(conversations):
        for t in range(1, turns + 1):
            lines += [f"  - vars: {{question: 第{i}段对话的第{t}个问题}}", f"    metadata: {{conversationId: c{i}}}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def run_promptfoo(binary: str, work: Path, base: str, conversations: int, turns: int, jobs: int) -> float:
    """promptfoo's wall time on the same job; every reply checked, and a later turn's prompt must carry the
    earlier replies (else it did not play conversations)."""
    write_promptfoo(work / "promptfooconfig.yaml", base, conversations, turns)
    env = {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
           "PROMPTFOO_CACHE_ENABLED": "false", "PROMPTFOO_CONFIG_DIR": str(work / ".promptfoo")}
    started = time.perf_counter()
    subprocess.run([binary, "eval", "-c", "promptfooconfig.yaml", "--no-cache", "--no-write", "-j", str(jobs),
                    "-o", "promptfoo.json"], cwd=work, env=env, check=False, capture_output=True)
    wall = time.perf_counter() - started
    results = json.loads((work / "promptfoo.json").read_text(encoding="utf-8"))["results"]["results"]
    passed = sum(1 for r in results if r.get("success"))
    assert len(results) == conversations * turns, f"promptfoo played {len(results)} turns"
    assert passed == len(results), f"promptfoo: {len(results) - passed} turns failed"
    last = next(r for r in results if r["vars"]["question"] == f"第0段对话的第{turns}个问题")
    assert "收到：第0段对话的第1个问题" in last["prompt"]["raw"], "promptfoo's last turn did not carry the history"
    return wall


def server_calls(base: str) -> int:
    with urllib.request.urlopen(base + "/stats") as response:
        return int(json.loads(response.read())["calls"])


def timed_run(cmd: list[str], cwd: Path) -> dict[str, float]:
    """Wall, CPU (user+sys) and peak RSS of one child process."""
    script = ("import resource, subprocess, sys, time, json\n"
              "t = time.perf_counter(); p = subprocess.run(sys.argv[1:]); wall = time.perf_counter() - t\n"
              "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
              "print(json.dumps({'wall': wall, 'cpu': u.ru_utime + u.ru_stime, 'rss_mb': u.ru_maxrss / 1024,"
              " 'rc': p.returncode}))")
    out = subprocess.run([sys.executable, "-c", script, *cmd], cwd=cwd, capture_output=True, text=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", default="lean", choices=["lean", "litellm", "auto"])
    parser.add_argument("--kind", default="model", choices=["model", "http"])
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--tool-rounds", type=int, default=0, help="model provider: tool rounds per turn")
    parser.add_argument("--promptfoo", default=None, help="a promptfoo executable: run the same job with it")
    args = parser.parse_args()

    with serving(args.latency_ms, args.tool_rounds) as base, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_suite(work / "bench.yaml", base, args.kind, args.client, args.conversations, args.turns,
                    args.tool_rounds)
        evalspec = [sys.executable, "-m", "evalspec", "run", "bench.yaml", "-j", str(args.jobs), "-q",
                    "-o", "run.json"]
        calls_per_turn = 1 + (args.tool_rounds if args.kind == "model" else 0)
        ideal = args.turns * calls_per_turn * args.latency_ms / 1000 * math.ceil(args.conversations / args.jobs)
        print(f"job: {args.conversations} conversations x {args.turns} turns, -j {args.jobs}, "
              f"{args.latency_ms:g} ms latency, provider {args.kind}"
              + (f" (client {args.client})" if args.kind == "model" else " (httpx)")
              + (f", {args.tool_rounds} tool round(s) per turn" if args.tool_rounds and args.kind == "model" else ""))
        print(f"ideal (turns x calls per turn x latency x ceil(conversations/jobs)): {ideal:.2f} s")
        cold = 0.0
        version = timed_run([sys.executable, "-m", "evalspec", "--version"], work)["wall"]
        print(f"`evalspec --version`: {version:.2f} s; the SPEC's ideal (turns x latency + that): "
              f"{args.turns * args.latency_ms / 1000 + version:.2f} s")
        for label in ("cold cache", "warm cache"):
            before = server_calls(base)
            figures = timed_run(evalspec, work)
            calls = server_calls(base) - before
            data = json.loads((work / "run.json").read_text(encoding="utf-8"))
            assert figures["rc"] == 0, f"evalspec exited {figures['rc']}"
            rate = calls / figures["wall"] if figures["wall"] else 0.0
            print(f"{label}: wall {figures['wall']:.2f} s · calls {calls} ({data['summary']['cached_calls']} cached)"
                  f" · {rate:.0f} calls/s · CPU {figures['cpu']:.2f} s · peak RSS {figures['rss_mb']:.0f} MB")
            cold = cold or figures["wall"]
        if args.promptfoo:
            if args.kind != "model" or args.tool_rounds:
                raise SystemExit("--promptfoo compares the model kind without tool rounds")
            wall = run_promptfoo(args.promptfoo, work, base, args.conversations, args.turns, args.jobs)
            print(f"promptfoo (same job, same server): wall {wall:.2f} s · evalspec cold {cold:.2f} s · "
                  f"evalspec {wall / cold:.1f}x faster")


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    main()
