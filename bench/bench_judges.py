"""Judges as measured instruments (docs/en/judges.md#a-worked-example): loopback judges that err at known rates,
graded through evalspec's own code, 200 trials; prints a figures table.

    python bench/bench_judges.py [--trials 200] [--seed 7]

The judges are one OpenAI-compatible loopback server (aiohttp, its own process: `--serve PORT`), a judge per
model name. The bot's reply carries its case and the truth (`[case t3c7 pass]`); a judge answers the truth,
flipped when a hash of (model, case) falls below its error rate for that truth (`answer`): the errors are
random, fixed by the seed, and at known rates.

(a) The corrected pass rate. A lenient judge (sensitivity 0.95, specificity 0.70: it leans to "yes") grades a
    bot whose true pass rate is 0.60 in a real `evalspec run` (one run; trial t is its cases `t…`, 50 each).
    Each trial has its own 200 human labels in a `.evalspec/labels.jsonl` written as `evalspec view` writes
    them: conversations the person labelled earlier, the person's `label` the truth and `verdict` whether
    the judge's answer (`answer`, the function the server answers with) was right. The trial's corrected
    rate and interval are `summary.corrected` (evalspec/results/corrected.py, `corrected_summary`); the raw
    interval is the Wilson interval of the same records. Counted: trials whose interval holds 0.60.
(b) A jury. Three judges that err 15 %, 20 % and 25 % of the time (on pass and fail alike) grade 200 trials
    of 5 conversations in a real run with `judge: [a, b, c]` (majority); counted: how often each member and
    the jury disagree with the truth (the jury's verdict is the assertion's `pass`, each member's its entry
    in `jury`).
(c) Pairwise with swaps. A judge that always answers `A` (model `first`) compares, in a real run, each of
    `--trials` tests' replies of two bots (`pairwise: {against: plain}`), asked in both orders: every
    comparison must be a `tie (position-inconsistent)` in `summary.pairwise`, none a win, a loss or a tie.
Cost: the calls and tokens one judge, a three-member jury, and `--check-judges` (each with one judge and
    with the jury) spend on a small suite with two judged rules and six examples (`COST_SUITE`), counted by
    the server; its usage is a rough token count (CJK characters and words).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUBRIC = "回答礼貌，且回答了用户的问题"  # the judged rule of (a) and (b)
TRUE_RATE = 0.60  # (a): the bot's true pass rate
CASES_A, LABELS_A = 50, 200  # (a): conversations a trial, human labels a trial
CASES_B = 5  # (b): conversations a trial
# model -> (sensitivity, specificity): the chance it passes a good reply / fails a bad one
JUDGES = {"lenient": (0.95, 0.70), "a": (0.85, 0.85), "b": (0.80, 0.80), "c": (0.75, 0.75),
          "first": (1.0, 1.0)}
CASE = re.compile(r"\[case (\w+) (pass|fail)\]")
BOT = 'def respond(messages, context):\n    return "您好，答复如下：" + messages[-1]["content"]\n'


def draw(*key: object) -> float:
    """A uniform number in [0, 1) fixed by `key` (the same in the server and the bench)."""
    digest = hashlib.blake2b("|".join(map(str, key)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def answer(model: str, case: str, truth: bool, seed: int) -> bool:
    """What judge `model` answers on case `case` whose right answer is `truth`."""
    sensitivity, specificity = JUDGES[model]
    wrong = draw(seed, model, case) >= (sensitivity if truth else specificity)
    return truth != wrong


def tokens(text: str) -> int:
    """A rough token count: each CJK character, each other word."""
    return len(re.findall(r"[\u3400-\u9fff]", text)) + len(re.findall(r"[A-Za-z0-9_]+", text))


# ---- the loopback judge server (`--serve PORT SEED`) -------------------------------------------------------

def serve(port: int, seed: int) -> None:
    from aiohttp import web

    stats: dict[str, dict[str, int]] = {}

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        model = str(body.get("model"))
        prompt = "\n".join(str(m.get("content") or "") for m in body["messages"])
        if model == "first":  # pairwise: always the first position
            content = json.dumps({"reason": "A 在前", "winner": "A"}, ensure_ascii=False)
        else:
            found = CASE.findall(body["messages"][-1]["content"])
            case, truth = found[-1] if found else ("none", "fail")  # the reply graded is the last one shown
            passed = answer(model, case, truth == "pass", seed)
            content = json.dumps({"reason": f"{model}: {'礼貌' if passed else '不礼貌'}", "pass": passed},
                                 ensure_ascii=False)
        used = stats.setdefault(model, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        used["calls"] += 1
        used["prompt_tokens"] += tokens(prompt)
        used["completion_tokens"] += tokens(content)
        return web.json_response({
            "id": "bench", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": tokens(prompt), "completion_tokens": tokens(content),
                      "total_tokens": tokens(prompt) + tokens(content)}})

    async def get_stats(request: web.Request) -> web.Response:
        return web.json_response(stats)

    async def reset(request: web.Request) -> web.Response:
        stats.clear()
        return web.json_response({})

    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/stats", get_stats), web.post("/reset", reset)])
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, backlog=512)


class Server:
    """The judge server in its own process (it does not share a core's GIL with the run)."""

    def __init__(self, seed: int) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", str(self.port), str(seed)])
        for _ in range(200):
            try:
                self.stats()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the loopback judge server did not start")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, dict[str, int]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=5) as r:
            out: dict[str, dict[str, int]] = json.load(r)
            return out

    def reset(self) -> None:
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{self.port}/reset", data=b"{}"), timeout=5)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# ---- the suites --------------------------------------------------------------------------------------------

def judge_yaml(server: Server, models: Iterable[str]) -> str:
    members = [f'{{model: openai/{m}, api_base: "{server.base}", api_key: bench, retries: 0}}' for m in models]
    return members[0] if len(members) == 1 else f"[{', '.join(members)}]"


def suite_yaml(server: Server, models: list[str], cases: Iterable[tuple[str, bool]], bot: Path) -> str:
    tests = "".join(f"\n  - id: {case}\n    conversation:\n      - user: '您好，请问能分期吗？[case {case} "
                    f"{'pass' if truth else 'fail'}]'" for case, truth in cases)
    return (f"providers: [{{id: bot, python: '{bot}:respond'}}]\njudge: {judge_yaml(server, models)}\n"
            f"options: {{cache: false}}\ndefaults:\n  assert:\n    - llm-rubric: {RUBRIC}\ntests:{tests}\n")


def truths(trial: int, n: int, seed: int, part: str) -> list[tuple[str, bool]]:
    rate = TRUE_RATE if part == "a" else 0.5
    return [(f"{part}{trial}c{i}", draw(seed, "truth", part, trial, i) < rate) for i in range(n)]


Record = Mapping[str, Any]  # a run.json result, as evalspec wrote it


@dataclass
class Coverage:
    """(a) over the trials: intervals that hold the true rate, and the means of the rates and widths."""

    covered: int
    raw_covered: int
    raw: float
    corrected: float
    width: float


@dataclass
class JuryErrors:
    """(b): conversations, each member's and the jury's disagreements with the truth, members' verdicts that
    differ from the server's rule (0: the run recorded what the judges said), `summary.juries`."""

    n: int
    wrong: dict[str, int]
    mismatched: int
    juries: list[Record] = field(default_factory=list)


def run_suites(paths: list[Path], run_dir: Path) -> Mapping[str, Any]:
    from evalspec import run
    from evalspec.play.runner import RunOptions

    data: Mapping[str, Any] = run(paths, options=RunOptions(run_dir=run_dir, use_cache=False, concurrency=32)).data
    return data


def label_lines(trial: int, seed: int) -> list[str]:
    """Trial `trial`'s labels as `evalspec view` writes them: earlier conversations a person labelled."""
    lines = []
    for case, truth in truths(trial, LABELS_A, seed, "label"):
        reply = f"您好，答复如下：您好，请问能分期吗？[case {case} {'pass' if truth else 'fail'}]"
        judged = answer("lenient", case, truth, seed)
        lines.append(json.dumps({"assert": {"llm-rubric": RUBRIC}, "label": truth,
                                 "verdict": "right" if judged == truth else "wrong",
                                 "transcript": [{"role": "user", "content": "您好，请问能分期吗？"},
                                                {"role": "assistant", "content": reply}]}, ensure_ascii=False))
    return lines


def part_a(records: list[Record], trials: int, seed: int, folder: Path) -> Coverage:
    from evalspec.results.corrected import corrected_summary
    from evalspec.results.stats import wilson

    by_trial: dict[int, list[Record]] = {}
    for r in records:
        m = re.fullmatch(r"a(\d+)c\d+", str(r["test_id"]))
        if m:
            by_trial.setdefault(int(m.group(1)), []).append(r)
    covered = raw_covered = 0
    raws, corrected, widths = [], [], []
    for t in range(trials):
        labels = folder / f"labels-{t}.jsonl"
        labels.write_text("\n".join(label_lines(t, seed)) + "\n", encoding="utf-8")
        [line] = corrected_summary(by_trial[t], labels)
        low, high = line["interval"]
        covered += low <= TRUE_RATE <= high
        raw_low, raw_high = wilson(line["passed"], line["n"]) or (0.0, 1.0)
        raw_covered += raw_low <= TRUE_RATE <= raw_high
        raws.append(line["raw"])
        corrected.append(line["corrected"])
        widths.append(high - low)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return Coverage(covered, raw_covered, mean(raws), mean(corrected), mean(widths))


def part_b(records: list[Record], seed: int) -> JuryErrors:
    wrong = {"openai/a": 0, "openai/b": 0, "openai/c": 0, "jury": 0}
    n = mismatched = 0
    for r in records:
        m = re.fullmatch(r"(b\d+c\d+)", str(r["test_id"]))
        if not m:
            continue
        [a] = r["assertions"]
        truth = dict(truths(int(m.group(1)[1:].split("c")[0]), CASES_B, seed, "b"))[m.group(1)]
        n += 1
        wrong["jury"] += a["pass"] is not truth
        for member in a["jury"]:
            wrong[member["judge"]] += member["pass"] is not truth
            mismatched += member["pass"] is not answer(member["judge"].split("/")[1], m.group(1), truth, seed)
    return JuryErrors(n, wrong, mismatched)


PAIRWISE_BOTS = """\
def plain(messages, context):
    return "可以分期。"

def better(messages, context):
    return "您好，可以分期：首付两成起，最长 36 期，" + messages[-1]["content"]
"""


@dataclass
class FirstPosition:
    """(c): the always-first judge's comparisons in `summary.pairwise`."""

    n: int
    wins: int
    ties: int
    inconsistent: int
    losses: int

    @property
    def ok(self) -> bool:
        return self.n > 0 and self.inconsistent == self.n


def pairwise_first_position(server: Server, folder: Path, trials: int) -> FirstPosition:
    """(c): `trials` tests, each compared once (bot `better` against bot `plain`) by the always-`A` judge."""
    bots = folder / "pairwise_bots.py"
    bots.write_text(PAIRWISE_BOTS, encoding="utf-8")
    tests = "".join(f"\n  - id: p{i}\n    conversation:\n      - user: '第 {i} 位客户：能分期吗？'" for i in range(trials))
    suite = folder / "c.yaml"
    suite.write_text(f"providers:\n  - {{id: plain, python: '{bots}:plain'}}\n  - {{id: better, python: '{bots}:better'}}\n"
                     f"judge: {judge_yaml(server, ['first'])}\noptions: {{cache: false}}\n"
                     f"defaults:\n  assert:\n    - pairwise: {{against: plain}}\ntests:{tests}\n", encoding="utf-8")
    data = run_suites([suite], folder / "run_c")
    [line] = data["summary"].get("pairwise") or [{"n": 0, "wins": 0, "ties": 0, "inconsistent": 0, "losses": 0}]
    return FirstPosition(line["n"], line["wins"], line["ties"], line["inconsistent"], line["losses"])


# ---- cost ---------------------------------------------------------------------------------------------------

COST_SUITE = """\
providers: [{{id: bot, python: '{bot}:respond'}}]
judge: {judge}
options: {{cache: false}}
tests:
  - id: finance
    conversation:
      - user: 您好，请问能分期吗？[case k1 pass]
      - user: 首付多少？[case k2 pass]
    assert:
      - llm-rubric: 回答礼貌，且回答了用户的问题
        examples:
          pass: ['您好，可以分期，首付两成起。[case e1 pass]', '可以的，三年免息。[case e2 pass]']
          fail: ['问这个干嘛？[case e3 fail]', '不知道。[case e4 fail]']
  - id: invite
    conversation:
      - user: 我周六想去看车 [case k3 pass]
    assert:
      - llm-rubric: 邀约自然，没有强迫用户
        scope: conversation
        examples:
          pass: ['好的，周六上午恭候您。[case e5 pass]']
          fail: ['必须今天来，不然没优惠！[case e6 fail]']
"""


def cost(server: Server, folder: Path, bot: Path) -> list[tuple[str, int, int]]:
    from evalspec.app.api import load
    from evalspec.review.judged_examples import check_judges

    rows = []
    for name, models in (("one judge", ["a"]), ("jury of three", ["a", "b", "c"])):
        path = folder / f"cost-{len(models)}.yaml"
        path.write_text(COST_SUITE.format(bot=bot, judge=judge_yaml(server, models)), encoding="utf-8")
        server.reset()
        run_suites([path], folder / f"cost-run-{len(models)}")
        rows.append((f"run, {name}", *used(server.stats())))
        server.reset()
        asyncio.run(check_judges(load([path]), None))
        rows.append((f"--check-judges, {name}", *used(server.stats())))
    return rows


def used(stats: Mapping[str, Mapping[str, int]]) -> tuple[int, int]:
    return (sum(s["calls"] for s in stats.values()),
            sum(s["prompt_tokens"] + s["completion_tokens"] for s in stats.values()))


# ---- main ---------------------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    started = time.monotonic()
    server = Server(args.seed)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            bot = folder / "bot.py"
            bot.write_text(BOT, encoding="utf-8")
            suite_a, suite_b = folder / "a.yaml", folder / "b.yaml"
            suite_a.write_text(suite_yaml(server, ["lenient"], (c for t in range(args.trials)
                                                                for c in truths(t, CASES_A, args.seed, "a")), bot),
                               encoding="utf-8")
            suite_b.write_text(suite_yaml(server, ["a", "b", "c"], (c for t in range(args.trials)
                                                                    for c in truths(t, CASES_B, args.seed, "b")), bot),
                               encoding="utf-8")
            data = run_suites([suite_a, suite_b], folder / "run")
            played = time.monotonic() - started
            errors = [r["test_id"] for r in data["results"] if r["status"] == "error"]
            if errors:
                raise SystemExit(f"{len(errors)} conversations errored, e.g. {errors[0]}")
            a = part_a(data["results"], args.trials, args.seed, folder)
            b = part_b(data["results"], args.seed)
            b.juries = data["summary"].get("juries") or []
            c = pairwise_first_position(server, folder, args.trials)
            rows = cost(server, folder, bot)
    finally:
        server.close()
    t = args.trials
    best = min(v for k, v in b.wrong.items() if k != "jury")
    print(f"bench_judges: {t} trials, seed {args.seed}; {len(data['results'])} conversations played and judged "
          f"in {played:.0f} s; {time.monotonic() - started:.0f} s in all\n")
    print("| figure | value | target |")
    print("|---|---|---|")
    print(f"| (a) lenient judge (sens 0.95, spec 0.70), true pass rate {TRUE_RATE:.2f}: mean raw rate | "
          f"{a.raw:.3f} | — |")
    print(f"| (a) mean corrected rate ({LABELS_A} labels a trial) | {a.corrected:.3f} | ≈ {TRUE_RATE:.2f} |")
    print(f"| (a) corrected interval covers the true rate | {a.covered}/{t} = {a.covered / t:.1%} "
          f"(mean width {a.width:.3f}) | ≥ 90 % |")
    print(f"| (a) raw Wilson interval covers the true rate | {a.raw_covered}/{t} = {a.raw_covered / t:.1%} | "
          f"fewer than corrected |")
    for k, v in b.wrong.items():
        label = "jury (majority of a, b, c)" if k == "jury" else \
            f"member {k} (errs {1 - JUDGES[k.split('/')[1]][0]:.0%})"
        print(f"| (b) {label}: disagrees with the truth | {v}/{b.n} = {v / b.n:.1%} | "
              f"{'below best member' if k == 'jury' else '—'} |")
    for line in b.juries:  # summary.juries: what run.json and the reports show
        shown = ", ".join(f"{k.split('/')[1]} {v:.1%}" for k, v in line["disagreement"].items())
        print(f"| (b) summary.juries: Fleiss' kappa over {line['n']} conversations; each member's disagreement "
              f"with the jury | kappa {line['kappa']:.3f}; {shown} | — |")
    print(f"| (c) always-first judge in pairwise mode, asked in both orders: win / tie / tie (position-inconsistent) "
          f"/ loss | {c.wins} / {c.ties} / {c.inconsistent} / {c.losses} of {c.n} | all position-inconsistent |")
    for name, calls, tokens_ in rows:
        print(f"| cost: {name} (2 judged rules, 2 conversations; 6 examples) | {calls} calls, ~{tokens_} tokens | — |")
    ok_a = a.covered >= 0.9 * t and a.raw_covered < a.covered
    ok_b = b.wrong["jury"] < best and b.mismatched == 0
    print(f"\n(a) {'ok' if ok_a else 'MISSED'}; (b) {'ok' if ok_b else 'MISSED'} "
          f"(members' recorded verdicts that differ from the server's rule: {b.mismatched}); "
          f"(c) {'ok' if c.ok else 'MISSED'}")
    if not (ok_a and ok_b and c.ok):
        raise SystemExit(1)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
