"""`evalspec plan SUITE... [--baseline RUN.json] [--detect D] [--power P] [--alpha A] [-o P]`: how much a
plan can show before anything is called (docs/en/statistics.md#how-much-is-enough-evalspec-plan).

A pair is a gated instance's verdict in two runs (its repeats combined by its repeat rule), as the paired gate
compares them: repeats add no pair, they make each verdict steadier. The paired test's power follows Connor
(1987), the discordance being how often an instance's verdict flips between two runs with no change, plus the
drop; a red line's bound is what the planned conversations show when none of them breaches it."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import click

from evalspec.core.exitcodes import ExitCode


def _same_file(a: str, b: str) -> bool:
    return a == b or Path(a).resolve() == Path(b).resolve()


def _gated(test: Any) -> bool:
    """Whether a test's verdicts can regress or breach a gated red line (drafts, xfails and curves cannot)."""
    return not (test.draft or test.xfail or test.curve)


def _rule_text(spec: Any) -> str:
    value = spec.value if isinstance(spec.value, (str, int, float)) else None
    return f"{spec.name}: {value}" if value is not None else spec.name


def verdict_pass_chance(p: float, repeats: int, rule: str | float) -> float:
    """The chance that an instance whose plays pass with probability `p` gets a passing verdict from
    `repeats` plays under its repeat rule (results/verdict.py `combine_repeats`): all, majority (more than
    half), any, or a share of the plays."""
    if rule == "all":
        return float(p ** repeats)
    if rule == "any":
        return 1 - float((1 - p) ** repeats)
    least = repeats // 2 + 1 if rule == "majority" else math.ceil(float(rule) * repeats - 1e-9)
    return sum(math.comb(repeats, i) * p ** i * (1 - p) ** (repeats - i) for i in range(max(0, least), repeats + 1))


def verdict_flip(n: int, c: int, repeats: int, rule: str | float) -> float:
    """The chance that an instance's verdict differs between two runs of `repeats` plays each, c of its n
    baseline plays having passed. With n ≥ 2 × repeats: the chance that two runs drawn from those n plays
    without replacement differ (unbiased; at 1 repeat 2c(n − c)/(n(n − 1))); else 2q(1 − q) with q the
    verdict's pass chance at p = c/n (a little low when n is small)."""
    from evalspec.results.verdict import rule_passes

    if n < 2 * repeats:
        q = verdict_pass_chance(c / n, repeats, rule)
        return 2 * q * (1 - q)
    fails, ways, differ = n - c, math.comb(n, repeats) * math.comb(n - repeats, repeats), 0
    for x in range(max(0, repeats - fails), min(c, repeats) + 1):  # x passes in the first run's plays
        first = math.comb(c, x) * math.comb(fails, repeats - x)
        for y in range(max(0, repeats - (fails - repeats + x)), min(c - x, repeats) + 1):
            if rule_passes(x, repeats, rule) != rule_passes(y, repeats, rule):
                differ += first * math.comb(c - x, y) * math.comb(fails - repeats + x, repeats - y)
    return differ / ways


def verdict_discordance(instances: Iterable[tuple[int, int, int, str | float]]) -> float | None:
    """How often an instance's verdict flips between two runs with no change: the mean `verdict_flip` over
    `(n, c, repeats, rule)` — c of n plays passed in the baseline, the instance planned with `repeats` under
    `rule` — of the instances that repeated (n ≥ 2); None when none did."""
    flips = [verdict_flip(n, c, repeats, rule) for n, c, repeats, rule in instances if n >= 2]
    return sum(flips) / len(flips) if flips else None


class _RedLine(TypedDict):
    rule: str
    where: str  # FILE:LINE
    n: int  # the planned conversations that check it


@dataclass
class _Planned:
    """What a suite plans: its instances (test, provider), the gated ones with their planned repeats and
    repeat rule, the repeats of each test, the conversations, and its critical rules (by where they are
    written: the rule, its file and line, how many conversations check it)."""

    instances: set[tuple[str, str]] = field(default_factory=set)
    gated: dict[tuple[str, str], tuple[int, str | float]] = field(default_factory=dict)
    repeats: list[int] = field(default_factory=list)
    conversations: int = 0
    rules: dict[Any, _RedLine] = field(default_factory=dict)


def _planned(suite: Any, selection: Any) -> _Planned:
    from evalspec.plan.build import plan_slots

    planned = _Planned()
    for slot in plan_slots([suite], selection):
        test, provider, k, base = slot.test, slot.provider, slot.repeat, slot.base
        planned.conversations += 1
        planned.instances.add((base, provider.id))
        n = 1 if test.recorded else selection.repeat or test.repeat.n
        if k == 1:
            planned.repeats.append(n)
        if not _gated(test):
            continue
        planned.gated[(base, provider.id)] = (n, test.repeat.rule)
        for spec in [*(a for t in test.conversation for a in t.asserts), *test.asserts]:
            if spec.severity != "critical":
                continue
            line = suite.lines.line(spec.where) if suite.lines else None
            rule = planned.rules.setdefault(spec.where, {"rule": _rule_text(spec), "where": f"{suite.path}:{line}"
                                                         if line else str(suite.path), "n": 0})
            rule["n"] += 1
    return planned


def _repeated_verdicts(baseline: dict[str, Any] | None, suite: Any,
                       gated: Container[tuple[str, str]]) -> list[tuple[int, int, tuple[str, str]]]:
    """(n, c, instance) of the baseline's repeated verdicts of this suite's gated instances."""
    seen = []
    for v in (baseline or {}).get("verdicts") or []:
        if not (isinstance(v, dict) and _same_file(str(v.get("suite")), str(suite.path)) and v.get("gated")):
            continue
        n, c, key = v.get("n"), v.get("passed"), (str(v.get("test_id")), str(v.get("provider")))
        if isinstance(n, int) and isinstance(c, int) and 0 <= c <= n and n >= 2 and key in gated:
            seen.append((n, c, key))
    return seen


def suite_plan(suite: Any, selection: Any, baseline: dict[str, Any] | None, detect: float, power: float,
               alpha: float) -> dict[str, Any]:
    """One suite's figures: what it plans, what the paired test can detect, the instances it needs, and each
    critical rule's bound. A pair is a gated instance (its verdict in two runs)."""
    from evalspec.results import stats

    planned = _planned(suite, selection)
    gated, repeats = planned.gated, planned.repeats
    pairs = len(gated)
    seen = _repeated_verdicts(baseline, suite, gated)

    def discordance(repeat: int | None) -> float | None:
        return verdict_discordance((n, c, repeat or gated[key][0], gated[key][1]) for n, c, key in seen)

    noise = discordance(None)
    source = "assumed" if baseline is None else "baseline" if noise is not None else "missing"
    needed = stats.mcnemar_pairs(stats.assumed_discordance(detect, noise), detect, alpha, power)
    with_repeats = []
    if noise is not None:
        for r in (1, 3, 5, 10):
            if {n for n, _ in gated.values()} != {r}:
                flips = discordance(r)
                with_repeats.append({"repeat": r, "noise": flips, "instances": stats.mcnemar_pairs(
                    stats.assumed_discordance(detect, flips), detect, alpha, power)})
    return {
        "suite": str(suite.path), "instances": len(planned.instances), "repeats": [min(repeats), max(repeats)]
        if repeats else [0, 0], "conversations": planned.conversations, "pairs": pairs,
        "discordance": {"source": source, "noise": noise},
        "detectable_drop": stats.detectable_drop(pairs, alpha, power, noise),
        "needed": {"detect": detect, "instances": needed, "enough": pairs >= needed},
        "with_repeats": with_repeats,
        "red_lines": [{**rule, "upper": stats.clopper_pearson_upper(0, rule["n"])} for rule in planned.rules.values()],
    }


def _count(key: str, n: int) -> str:
    return _w(key if n == 1 else key + "s", n=f"{n:,}")


def _w(key: str, **fields: Any) -> str:
    """A word of `plan` in the language being spoken (the catalogue's `plan_` keys)."""
    from evalspec.reporters.catalogue import words

    return words("plan_" + key, **fields)


def _points(x: float | None) -> str:
    return "—" if x is None else _w("points", n=f"{x * 100:.3g}")


def _share(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 100:.2g}%" if x < 0.1 else f"{x * 100:.1f}%"


def plan_lines(report: dict[str, Any]) -> Iterable[str]:
    """What the command prints, in the language being spoken."""
    power, alpha = f"{report['power']:.0%}", f"{report['alpha']:g}"
    for s in report["suites"]:
        yield s["suite"]
        lo, hi = s["repeats"]
        reps = _count("repeat", lo) if lo == hi else _w("repeats_range", lo=lo, hi=hi)
        yield "  " + _w("planned", instances=_count("instance", s["instances"]), repeats=reps,
                        conversations=_count("conversation", s["conversations"]), pairs=f"{s['pairs']:,}")
        drop = s["detectable_drop"]
        yield "  " + (_w("drop", drop=_points(drop), power=power, alpha=alpha) if drop is not None
                      else _w("drop_none"))
        noise = s["discordance"]["noise"]
        yield "  " + _w({"baseline": "noise_base", "assumed": "noise_assumed", "missing": "noise_missing"}
                        [s["discordance"]["source"]], noise=_share(noise))
        need = s["needed"]
        detect = _points(need["detect"])
        if need["enough"]:
            yield "  " + _w("enough", detect=detect, needed=f"{need['instances']:,}", pairs=f"{s['pairs']:,}")
        elif not s["pairs"]:
            yield "  " + _w("need_none", detect=detect, needed=f"{need['instances']:,}")
        else:
            yield "  " + _w("need", detect=detect, needed=f"{need['instances']:,}", pairs=f"{s['pairs']:,}",
                            more=_count("instance", need["instances"] - s["pairs"]))
        for option in s["with_repeats"]:
            yield "  " + _w("with_repeats", repeats=_count("repeat", option["repeat"]), noise=_share(option["noise"]),
                            needed=f"{option['instances']:,}")
        if not s["red_lines"]:
            yield "  " + _w("no_red_lines")
            continue
        yield "  " + _w("red_lines")
        for rule in s["red_lines"]:
            if rule["upper"] is None:
                yield "  " + _w("red_line_none", rule=rule["rule"], where=rule["where"])
            else:
                yield "  " + _w("red_line", rule=rule["rule"], where=rule["where"], upper=_share(rule["upper"]),
                                n=_count("conversation", rule["n"]))


_OPEN = click.FloatRange(0, 1, min_open=True, max_open=True)  # a share: 0 < x < 1


@click.command("plan")
@click.argument("paths", nargs=-1, required=True, metavar="SUITE...")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              help="a run.json: its repeats give each instance's pass chance, hence how often its verdict "
                   "flips between two runs (default: the discordance is 2 × the drop)")
@click.option("--detect", type=_OPEN, default=0.10, show_default=True,
              help="the drop of the pass rate to detect (0..1)")
@click.option("--power", type=_OPEN, default=0.8, show_default=True,
              help="the chance of detecting that drop")
@click.option("--alpha", type=_OPEN, default=0.05, show_default=True,
              help="the paired test's one-sided significance level")
@click.option("--repeat", type=click.IntRange(min=1), help="plan every test with this repeat count (as run --repeat)")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="also write the figures as JSON")
@click.option("--lang", type=click.Choice(["zh", "en"]),
              help="the language of the output (default: the suite's report.lang, else the user turns')")
def plan_command(paths: tuple[str, ...], baseline_path: str | None, detect: float, power: float, alpha: float,
                 repeat: int | None, output: str | None, lang: str | None) -> None:
    """How much the planned conversations can show, before any call: per suite the instances, repeats and
    conversations planned; the smallest drop of the pass rate the paired regression test detects; the
    instances (pairs of verdicts) needed to detect --detect; and, per critical rule, the breach-rate bound
    the planned conversations show when none breaches. Exit 0 (2 on a usage error or a bad suite)."""
    from evalspec.app.api import expand_paths
    from evalspec.plan.build import Selection
    from evalspec.plan.preflight import prepare
    from evalspec.reporters.catalogue import choose_lang, speaking
    from evalspec.results.runjson import read_run, untyped

    selection = Selection(repeat=repeat)
    suites, _plan = prepare(list(expand_paths(list(paths))), {}, selection)  # a ConfigError: exit 2
    baseline = untyped(read_run(baseline_path, check=True, stream=True)) if baseline_path else None  # exit 2 naming what is wrong
    report = {"alpha": alpha, "power": power, "detect": detect, "baseline": baseline_path,
              "suites": [suite_plan(s, selection, baseline, detect, power, alpha) for s in suites]}
    with speaking(choose_lang(None, lang, suites=suites)):
        click.echo("\n".join(plan_lines(report)))
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    sys.exit(ExitCode.OK)
