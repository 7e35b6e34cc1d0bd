"""Benchmark the error bars (docs/en/statistics.md): does the paired gate alarm as rarely as it says, detect
what `plan` says it detects, and does the pass rate's interval cover the true rate? Prints figures.

A python bot whose tests pass with known probabilities: test i passes with p_i (seeded, 0.55–0.99, mean
about 0.8); each play draws from `random.Random(f"{seed}/{test}/{repeat}")`, so a run is reproducible.

1. False alarms: 200 simulated pull requests with no real change (base and head both draw with p_i):
   the share in which the paired gate (results/gate.py `paired_test`, alpha 0.05) blocks. Target ≤ 7 %.
   Beside it the v2 `regressions: each` gate's share on the same runs: it blocks on any regressed test.
2. Detection: 200 simulated pull requests whose head passes every test with p_i − 0.10: the share the
   gate blocks, with as many instances as `plan --baseline` asks for (app/cli/plan.py: each instance's
   pass chance from a 5-repeat baseline, its verdict's flip chance at the planned repeat 1, plus the
   drop). Target ≥ 80 %.
3. Coverage: over the 400 runs' heads and bases, the share whose 95 % Wilson interval holds the true pass
   rate (the mean of the p_i). Target ≥ 93 %.
4. Wiring: a few real `evalspec run --baseline --gate regressions-paired` pairs of the same bot; their
   `baseline.paired` must equal what the simulation computes from the same draws.

A pair is an instance's verdict in both runs (what the gate compares, and what `plan` counts): the simulated
runs play each instance once, as planned, so a verdict is one conversation.

    python bench/bench_stats.py            # this checkout
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from evalspec.app.cli.plan import verdict_discordance
from evalspec.results.gate import paired_test
from evalspec.results.stats import assumed_discordance, mcnemar_pairs, wilson

PRS, DROP, ALPHA, POWER, SEED = 200, 0.10, 0.05, 0.8, 20250101

BOT = '''
import os, random

def respond(messages, context):
    """Test t<i> passes with P[i] (minus DROP on the head side); each play draws its own seeded number."""
    probs = [float(x) for x in os.environ["BENCH_P"].split(",")]
    i = int(context["test_id"].split("#")[0][1:])
    p = probs[i] - float(os.environ.get("BENCH_DROP", "0"))
    draw = random.Random(f"{os.environ['BENCH_SEED']}/{context['test_id'].split('#')[0]}/{context['repeat']}").random()
    return "ok" if draw < p else "bad"
'''


def probabilities(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [round(rng.uniform(0.55, 0.99), 4) for _ in range(n)]


def played(probs: list[float], seed: str, drop: float = 0.0, repeat: int = 1) -> list[tuple[int, int]]:
    """(n, passes) per test, drawn as the bot draws them."""
    out = []
    for i, p in enumerate(probs):
        passes = sum(random.Random(f"{seed}/t{i}/{k}").random() < p - drop for k in range(1, repeat + 1))
        out.append((repeat, passes))
    return out


def verdicts(plays: list[tuple[int, int]]) -> list[str]:
    return ["passed" if 2 * c > n else "failed" for n, c in plays]  # repeat 1: the one play


def blocks(base: list[str], head: list[str]) -> bool:
    return bool(paired_test(list(zip(base, head, strict=True)), ALPHA)["significant"])


def each_blocks(base: list[str], head: list[str]) -> bool:
    """The v2 `regressions: each` gate: any test that passed in the base and fails in the head blocks."""
    return any(b == "passed" and h == "failed" for b, h in zip(base, head, strict=True))


def covers(vs: list[str], truth: float) -> bool:
    interval = wilson(sum(v == "passed" for v in vs), len(vs))
    return interval is not None and interval[0] <= truth <= interval[1]


def planned_instances(probs: list[float]) -> tuple[int, float]:
    """The instances `plan --baseline` asks for: the verdict discordance a 5-repeat baseline shows at the
    planned repeat 1 (rule `all`, which one play is under every rule), plus the drop."""
    noise = verdict_discordance((n, c, 1, "all") for n, c in played(probs, "baseline", repeat=5))
    return mcnemar_pairs(assumed_discordance(DROP, noise), DROP, ALPHA, POWER), noise or 0.0


def simulate() -> dict[str, float]:
    population = probabilities(2000, SEED)
    needed, noise = planned_instances(population)
    probs = population[:needed]
    truth = sum(probs) / len(probs)
    alarms = each_alarms = detected = covered = runs = 0
    for pr in range(PRS):
        base = verdicts(played(probs, f"base{pr}"))
        same = verdicts(played(probs, f"head{pr}"))
        worse = verdicts(played(probs, f"head{pr}", drop=DROP))
        alarms += blocks(base, same)
        each_alarms += each_blocks(base, same)
        detected += blocks(base, worse)
        covered += covers(base, truth) + covers(same, truth)
        runs += 2
    return {"instances": needed, "noise": noise, "false_alarms": alarms / PRS,
            "each_false_alarms": each_alarms / PRS, "detection": detected / PRS,
            "coverage": covered / runs}


def real_pair(folder: Path, probs: list[float], pr: int, drop: float) -> tuple[dict[str, object], dict[str, object]]:
    """One real base/head pair with `evalspec run`, and what the simulation says of the same draws."""
    tests = "".join(f"  - id: t{i}\n    conversation: [{{user: 你好, assert: [{{equals: ok}}]}}]\n"
                    for i in range(len(probs)))
    (folder / "s.yaml").write_text(f"options: {{cache: false}}\nproviders:\n  - id: bot\n    python: bot.py:respond\n"
                                   f"tests:\n{tests}", encoding="utf-8")
    env = {**os.environ, "BENCH_P": ",".join(map(str, probs)), "EVALSPEC_LANG": "en"}
    for side, seed, lost in (("base", f"base{pr}", 0.0), ("head", f"head{pr}", drop)):
        subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "-o", f"{side}.json", "-q",
                        "--confirm", "0", *(["--baseline", "base.json", "--gate", "regressions-paired"]
                                            if side == "head" else ["--fail-under", "0"])],
                       cwd=folder, env={**env, "BENCH_SEED": seed, "BENCH_DROP": str(lost)},
                       capture_output=True, check=False)
    got = json.loads((folder / "head.json").read_text(encoding="utf-8"))["baseline"]["paired"]
    base = verdicts(played(probs, f"base{pr}"))
    head = verdicts(played(probs, f"head{pr}", drop=drop))
    return got, paired_test(list(zip(base, head, strict=True)), ALPHA)


def main() -> None:
    figures = simulate()
    print(f"plan: {figures['instances']} instances × 1 repeat to detect a drop of {DROP:.2f} at power {POWER:.0%} "
          f"(verdicts flip {figures['noise']:.3f} of the time, from a 5-repeat baseline, + the drop)")
    for key, label, target, ok in (("false_alarms", "false alarms (no change)", "≤ 7%", figures["false_alarms"] <= 0.07),
                                   ("detection", f"detection (drop {DROP:.2f})", "≥ 80%", figures["detection"] >= 0.80),
                                   ("coverage", "interval covers the true rate", "≥ 93%", figures["coverage"] >= 0.93)):
        print(f"{label:32} {figures[key]:6.1%}   target {target}   {'ok' if ok else 'MISSED'}")
    print(f"{'v2 `each` gate, false alarms':32} {figures['each_false_alarms']:6.1%}   (blocks on any regressed test)")
    probs = probabilities(2000, SEED)[:40]
    agree = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bot.py").write_text(BOT, encoding="utf-8")
        for pr, drop in ((0, 0.0), (1, 0.0), (2, DROP), (3, 0.3)):
            got, simulated = real_pair(folder, probs, pr, drop)
            same = got == simulated
            agree += same
            print(f"real pair {pr} (drop {drop:.2f}): evalspec b={got['b']} c={got['c']} p={got['p']} "
                  f"significant={got['significant']} · simulation b={simulated['b']} c={simulated['c']} "
                  f"{'agrees' if same else 'DIFFERS'}")
    print(f"wiring: {agree}/4 real pairs agree with the simulation")


if __name__ == "__main__":
    main()
