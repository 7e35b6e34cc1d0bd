"""Console output: a live progress bar on a terminal, one line per finished test otherwise, then a summary."""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evalspec.config.model import describe_provider
from evalspec.providers.limits import LIMITED
from evalspec.reporters.attacks import print_attacks
from evalspec.reporters.catalogue import choose_lang, current, reason_text, speaking, word, words
from evalspec.reporters.judging import print_judging
from evalspec.reporters.spread import print_spread
from evalspec.reporters.tools import failed_teardowns
from evalspec.reporters.verdict_records import records_of
from evalspec.reporters.vocabulary import (
    MAX_FAILURES,
    blocking_listed,
    conversations_text,
    count_keys,
    curve_text,
    ensure_current,
    failing_count,
    failing_stream,
    first_problem,
    gate_line,
    judge_text,
    metric_cells,
    metric_columns,
    one_line,
    pass_rate_text,
    repeats_text,
    score_text,
    shown_facts,
    suite_gate_word,
    where_text,
)
from evalspec.results.rundata import Metric, RunData
from evalspec.results.verdict import CATEGORIES, record_category

if TYPE_CHECKING:
    from rich.progress import Progress

    from evalspec.results.findings import Excerpt, Finding

STYLE = {"passed": "green", "failed": "red", "error": "yellow", "skipped": "dim", "xfailed": "magenta",
         "xpassed": "cyan", "measured": "grey50", "drafts": "dim"}


class ConsoleReporter:
    def __init__(self, console: Console | None = None, quiet: bool = False, include_drafts: bool = False,
                 lang: str = "en", max_failures: int = MAX_FAILURES) -> None:
        """`lang`: the language of the progress lines (the summary chooses its own from the finished run);
        `max_failures`: how many failing verdicts the summary lists."""
        self.max_failures = max_failures
        self.console = console or make_console()
        self.lang = lang
        self.quiet = quiet
        self.include_drafts = include_drafts
        self.live = self.console.is_terminal and not quiet
        self.counts = {c: 0 for c in CATEGORIES}
        self.calls = self.cached = self.tokens = 0
        self.cost = 0.0
        self.progress: Progress | None = None
        self.task: Any = None
        self.started = time.monotonic()

    def _stats(self) -> str:
        with speaking(self.lang):
            shown = [f"[{STYLE[c]}]{n} {words(c)}[/]" for c, n in self.counts.items()
                     if n or c in ("passed", "failed", "error")]
            limited = "".join(f" · {escape(one_line(a.shown()))}" for a in LIMITED.values())  # docs/en/rate-limits.md
            return " ".join(shown) + words("live_stats", calls=self.calls, cached=self.cached, tokens=self.tokens,
                                           cost=f"{self.cost:.4f}") + limited

    def on_start(self, total: int, already_done: int) -> None:
        self.started = time.monotonic()
        if already_done and not self.quiet:
            with speaking(self.lang):
                self.console.print(words("resuming", done=already_done, total=total))
        if self.live:  # a terminal only: rich.progress is not imported otherwise
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("[bold]evalspec"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.description}"), TimeElapsedColumn(),
                                     console=self.console, transient=True)
            self.progress.start()
            self.task = self.progress.add_task(self._stats(), total=total, completed=already_done)

    def on_result(self, record: Mapping[str, Any]) -> None:  # a Record, as the runner hands it over
        shown = record_category(record, self.include_drafts)
        self.counts[shown] += 1
        self.calls += record.get("calls", 0)  # completed calls; cached answers are counted apart
        self.cached += record.get("cached_calls", 0)
        self.tokens += record.get("tokens") or 0
        self.cost += record.get("cost") or 0.0
        if self.progress is not None:
            self.progress.update(self.task, advance=1, description=self._stats())
        elif not self.quiet:
            with speaking(self.lang):
                self._print_line(record, shown)

    def _print_line(self, record: Mapping[str, Any], shown: str) -> None:
        score = score_text(record.get("score"), shown)
        extra = ""
        if shown in ("failed", "error", "xfailed"):
            first = first_problem(record)
            extra = " — " + escape(first) if first else ""
        elif shown == "drafts":
            extra = f" [dim]({word(record['status'])})[/]"
        label = words("draft" if shown == "drafts" else shown)
        label += " " * max(0, 8 - cell_len(label))  # by display width: 预期失败 takes eight columns
        self.console.print(f"[{STYLE[shown]}]{label}[/] {escape(one_line(record['test_id']))} "
                           f"[dim]@ {escape(one_line(record['provider']))} {'' if score is None else words('score') + ' ' + score + ' '}"
                           f"{record.get('duration_ms', 0) / 1000:.2f}s[/]{extra}")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def on_finish(self, run: RunData, paths: dict[str, str], lang: str | None = None) -> None:
        self.stop()
        print_summary(self.console, run, paths, self.quiet, lang, self.max_failures)


def make_console() -> Console:
    """A terminal gets its own width; logs (CI) get 120 columns instead of 80."""
    probe = Console()
    return Console(highlight=False, soft_wrap=True, width=None if probe.is_terminal else 120)


def _excerpt_markup(x: Excerpt) -> str:
    return (escape(one_line(x.before)) + (f"[bold]{escape(one_line(x.match))}[/]" if x.match else "")
            + escape(one_line(x.after)))


def print_finding(console: Console, f: Finding) -> None:
    critical = f" [red bold]{words('critical')}[/]" if f.critical else ""
    rule = f" · {escape(one_line(f.rule))}" if f.rule else ""
    console.print(f"    {escape(where_text(f.where))}{rule}{critical}")
    if f.description:
        console.print(f"      [italic]{words('why')} {escape(one_line(f.description))}[/]")
    if f.error:
        console.print(f"      [yellow]{words('error_colon')}[/] {escape(one_line(f.error))}")
    elif f.facts:
        for fact in shown_facts(f):
            found = escape(one_line(fact.found)) if fact.found else f"[red]{words('nothing')}[/]"
            console.print("      " + words("expected_found", key=escape(one_line(fact.key)),
                                              expected=escape(one_line(fact.expected)), found=found))
    elif f.reason:
        console.print(f"      [dim]{escape(one_line(reason_text(f.reason, f.reason_zh)))}[/]")
    for x in f.excerpts:
        console.print(f"      [dim]{words('reply_turn', turn=x.turn)}[/] {_excerpt_markup(x)}")


def print_failures(console: Console, run: RunData, limit: int = MAX_FAILURES) -> None:
    """The failing verdicts, at most `limit` of them and how many more (docs/en/scale-and-ray.md#memory),
    then the known failures (as many)."""
    total = failing_count(run)
    if total:
        console.print()
        console.print(f"[bold]{words('failures_and_errors')}[/]")
    for v, recs in failing_stream(run, limit):
        category = v["category"]
        critical = f" [red bold]{words('critical')}[/]" if v["critical_failed"] else ""
        console.print(f"[{STYLE[category]}]{words(category)}[/]{critical} [bold]{escape(one_line(v['name']))}[/] "
                      f"[dim]{escape(one_line(v['test_id']))} @ {escape(one_line(v['provider']))}"
                      f"{repeats_text(v)}[/]")
        from evalspec.results.findings import findings  # (docs/en/scale-and-ray.md#start-up)

        for f in findings(recs[0]) if recs else []:
            print_finding(console, f)
        from evalspec.reporters.state import failing_state_text  # (docs/en/scale-and-ray.md#start-up)

        for line in failing_state_text(recs[0]) if recs else []:
            console.print(f"    [dim]{escape(one_line(line))}[/]")
    if total > limit:
        console.print(f"[dim]{escape(words('more_failing', n=total - limit))}[/]")
    known = [(i, v) for i, v in itertools.islice(
        ((i, v) for i, v in enumerate(run["verdicts"]) if v["category"] == "xfailed"), limit)]
    if known:
        console.print()
        console.print(f"[bold]{words('known_failures')}[/]")
    found = records_of(run, known, ("xfailed",))
    for i, v in known:
        recs = found[i]
        reason = one_line(recs[0]["xfail"]) if recs and recs[0].get("xfail") else ""
        console.print(f"[magenta]{words('xfailed')}[/] [bold]{escape(one_line(v['name']))}[/] [dim]{escape(one_line(v['test_id']))}"
                      f" @ {escape(one_line(v['provider']))} — {escape(reason)}[/]")
        from evalspec.results.findings import findings

        for f in findings(recs[0])[:1] if recs else []:
            print_finding(console, f)
    if known and (more := sum(1 for v in run["verdicts"] if v["category"] == "xfailed") - len(known)) > 0:
        console.print(f"[dim]{escape(words('more_known', n=more))}[/]")


def summary_table(run: RunData) -> Table:
    table = Table(title=words("summary_title"), box=box.SIMPLE_HEAD, show_lines=False)
    labels = [words(key) for key, _ in count_keys(run["summary"])]
    table.add_column(words("suite"), no_wrap=True)
    for col in (*labels, words("pass_rate"), words("gate")):  # a rate with its interval stays on one line
        # a header's width in cells (a Chinese character takes two), so 预期失败 is not cut to 预 …
        table.add_column(col, justify="right", min_width=min(cell_len(col), 8), no_wrap=col == words("pass_rate"))
    for s in run["gate"]["suites"]:
        table.add_row(escape(one_line(s["suite"])), *[str(n) for _, n in count_keys(s["counts"])],
                      pass_rate_text(s["pass_rate"], s), words(suite_gate_word(s)))
    if len(run["gate"]["suites"]) > 1:
        table.add_row(f"[bold]{words('total')}[/]", *[str(n) for _, n in count_keys(run["summary"])],
                      pass_rate_text(run["gate"]["pass_rate"], run["gate"]), "")
    return table


def metrics_table(metrics: list[Metric]) -> Table:
    """The `metric:` scoreboard (docs/en/reports-and-gate.md#outputs)."""
    table = Table(title=words("metrics_title"), box=box.SIMPLE_HEAD, show_lines=False)
    for i, col in enumerate(metric_columns()):
        table.add_column(col, no_wrap=i < 3, justify="right" if i >= 3 else "left")
    for m in metrics:
        table.add_row(*[escape(one_line(cell)) for cell in metric_cells(m)])
    return table


def print_summary(console: Console, run: RunData, paths: dict[str, str], quiet: bool = False,
                  lang: str | None = None, max_failures: int = MAX_FAILURES) -> None:
    """The run's summary in `lang` (None: the run's own language, docs/en/reports-and-gate.md#language)."""
    run = ensure_current(run)
    with speaking(choose_lang(run, lang)):
        _print_summary(console, run, paths, quiet, max_failures)


def print_blocking(console: Console, run: RunData, limit: int = MAX_FAILURES) -> None:
    """What blocks the release, first (docs/en/reports-and-gate.md#language): critical failures, missed SLAs, gated regressions."""
    items = blocking_listed(run, limit)
    if not items:
        return
    console.print()
    console.print(f"[red bold]{words('blocks_release')}[/]")
    for item in items:
        console.print(f"  [red]✗[/] {escape(one_line(item))}")


def print_red_lines(console: Console, run: RunData) -> None:
    """`summary.red_lines` as bounds (docs/en/statistics.md#red-lines-as-bounds): a line per critical rule
    that was breached, and one for those that never were, with the weakest of their 95 % upper bounds."""
    from evalspec.results.stats import conversations_to_bound

    lines = [(x, upper) for x in (run["summary"].get("red_lines") or []) if (upper := x.get("upper")) is not None]
    for x, upper in lines:
        if x["breaches"]:
            console.print("[red]" + escape(one_line(words(
                "red_line_breached", rule=x["rule"], suite=x["suite"], breaches=x["breaches"], n=x["n"],
                rate=f"{x['rate'] * 100:.1f}%", upper=f"{upper * 100:.1f}%"))) + "[/]")
    clear = [(x, upper) for x, upper in lines if not x["breaches"]]
    if clear:
        weakest, top = max(clear, key=lambda pair: pair[1])
        rules = words("red_lines_rule" if len(clear) == 1 else "red_lines_rules", n=len(clear))
        console.print(escape(one_line(words("red_lines_clear", rules=rules, upper=f"{top * 100:.1f}%",
                                            n=weakest["n"], rule=weakest["rule"], suite=weakest["suite"],
                                            need=conversations_to_bound(0.01)))))


def _print_summary(console: Console, run: RunData, paths: dict[str, str], quiet: bool,
                   max_failures: int) -> None:
    print_blocking(console, run, max_failures)
    if not quiet:
        print_failures(console, run, max_failures)
    console.print(summary_table(run))
    if run.get("baseline"):
        from evalspec.reporters.diff import print_diff
        from evalspec.reporters.diffwords import spoken

        print_diff(console, spoken(run["baseline"], run), max_failures)
    configs = {(s["path"], p["id"]): p for s in run["suites"] for p in s["providers"]}
    described = list(dict.fromkeys((c["suite"], c["provider"]) for c in run.get("curves", [])))
    for key in described:
        if key in configs:
            console.print(f"[dim]{escape(one_line(key[1]))}: {escape(one_line(describe_provider(configs[key])))}[/]")
    for c in run.get("curves", []):
        console.print(f"{words('curve')} [bold]{escape(one_line(c['test']))}[/] @ {escape(one_line(c['provider']))}: "
                      f"{escape(one_line(curve_text(c)))}")
    for sla in run["slas"]:
        style = {"met": "green", "missed": "red"}.get(sla["status"], "yellow")
        console.print(f"{escape(one_line(sla['id']))}: [{style}]{word(sla['status'])}[/] — {escape(one_line(sla['text']))}")
    if run["summary"].get("metrics"):
        console.print(metrics_table(run["summary"]["metrics"]))
    print_red_lines(console, run)
    print_attacks(console, run)
    print_spread(console, run)
    for r, text in failed_teardowns(run):
        console.print(f"[yellow]{escape(one_line(text))}[/] · {escape(one_line(r['test_id']))} @ "
                      f"{escape(one_line(r['provider']))} {words('teardown_stands')}")
    print_judging(console, run)
    summ = run["summary"]
    for warning in summ.get("warnings") or []:
        console.print(f"[yellow]{words('warning', text=escape(one_line(warning)))}[/]")
    if summ.get("rate_limited"):
        console.print(words("rate_limited", providers=", ".join(
            f"{escape(one_line(p))} {n}" for p, n in summ["rate_limited"].items())))
    console.print(words("totals_console", conversations=conversations_text(summ["records"]), calls=summ["calls"],
                        cached=summ["cached_calls"], tokens=summ["tokens"], cost=f"{summ['cost']:.4f}")
                  + (f" · {judge_text(summ)}" if summ.get("judge_calls") else "")
                  + f" · {run.get('duration_s', 0):.2f}s")
    gate = run["gate"]
    style = {0: "green", 1: "red"}.get(gate["exit_code"], "yellow")
    console.print(f"[{style}]{gate_line(gate)}[/]"
                  # gate.reasons are run.json's English sentences; "阻断发布" above says the same in Chinese
                  + (": " + escape(one_line("; ".join(gate["reasons"]))) if gate["reasons"] and current() == "en" else ""))
    for kind, path in paths.items():
        console.print(f"[dim]{kind}: {escape(path)}[/]")
