"""Console output: a live progress bar on a terminal, one line per finished test otherwise, then a summary."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evalspec.config.model import describe_provider
from evalspec.reporters.attacks import print_attacks
from evalspec.reporters.judging import print_judging
from evalspec.reporters.tools import failed_teardowns
from evalspec.reporters.vocabulary import (
    METRIC_COLUMNS,
    conversations_text,
    count_items,
    curve_text,
    ensure_current,
    failing,
    gate_line,
    judge_text,
    metric_cells,
    one_line,
    pass_rate_text,
    repeats_text,
    suite_gate_word,
    verdict_records,
)
from evalspec.results.findings import Excerpt, Finding, findings, first_failure
from evalspec.results.verdict import CATEGORIES, record_category

if TYPE_CHECKING:
    from rich.progress import Progress

STYLE = {"passed": "green", "failed": "red", "error": "yellow", "skipped": "dim", "xfailed": "magenta",
         "xpassed": "cyan", "measured": "grey50", "drafts": "dim"}
WORD = {"drafts": "draft"}


class ConsoleReporter:
    def __init__(self, console: Console | None = None, quiet: bool = False, include_drafts: bool = False) -> None:
        self.console = console or make_console()
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
        shown = [f"[{STYLE[c]}]{n} {c}[/]" for c, n in self.counts.items()
                 if n or c in ("passed", "failed", "error")]
        return (" ".join(shown) + f" · calls {self.calls} (+{self.cached} cached) · tokens {self.tokens}"
                f" · ${self.cost:.4f}")

    def on_start(self, total: int, already_done: int) -> None:
        self.started = time.monotonic()
        if already_done and not self.quiet:
            self.console.print(f"resuming: {already_done} of {total} already finished")
        if self.live:  # a terminal only: rich.progress is not imported otherwise
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("[bold]evalspec"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.description}"), TimeElapsedColumn(),
                                     console=self.console, transient=True)
            self.progress.start()
            self.task = self.progress.add_task(self._stats(), total=total, completed=already_done)

    def on_result(self, record: dict[str, Any]) -> None:
        shown = record_category(record, self.include_drafts)
        self.counts[shown] += 1
        self.calls += record.get("calls", 0)  # completed calls; cached answers are counted apart
        self.cached += record.get("cached_calls", 0)
        self.tokens += record.get("tokens") or 0
        self.cost += record.get("cost") or 0.0
        if self.progress is not None:
            self.progress.update(self.task, advance=1, description=self._stats())
        elif not self.quiet:
            score = f"{record['score']:.2f}" if record.get("score") is not None else "—"
            extra = ""
            if shown in ("failed", "error", "xfailed"):
                first = first_failure(record)
                extra = " — " + escape(first) if first else ""
            elif shown == "drafts":
                extra = f" [dim]({record['status']})[/]"
            self.console.print(f"[{STYLE[shown]}]{WORD.get(shown, shown):8}[/] {escape(one_line(record['test_id']))} "
                               f"[dim]@ {escape(one_line(record['provider']))} score {score} "
                               f"{record.get('duration_ms', 0) / 1000:.2f}s[/]{extra}")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def on_finish(self, run: dict[str, Any], paths: dict[str, str]) -> None:
        self.stop()
        print_summary(self.console, run, paths, self.quiet)


def make_console() -> Console:
    """A terminal gets its own width; logs (CI) get 120 columns instead of 80."""
    probe = Console()
    return Console(highlight=False, soft_wrap=True, width=None if probe.is_terminal else 120)


def _excerpt_markup(x: Excerpt) -> str:
    return (escape(one_line(x.before)) + (f"[bold]{escape(one_line(x.match))}[/]" if x.match else "")
            + escape(one_line(x.after)))


def print_finding(console: Console, f: Finding) -> None:
    critical = " [red bold]critical[/]" if f.critical else ""
    rule = f" · {escape(one_line(f.rule))}" if f.rule else ""
    console.print(f"    {escape(f.where)}{rule}{critical}")
    if f.error:
        console.print(f"      [yellow]error:[/] {escape(one_line(f.error))}")
    elif f.facts:
        for fact in f.facts:
            found = escape(one_line(fact.found)) if fact.found else "[red]nothing[/]"
            console.print(f"      {escape(one_line(fact.key))}: expected {escape(one_line(fact.expected))}, found {found}")
    elif f.reason:
        console.print(f"      [dim]{escape(one_line(f.reason))}[/]")
    for x in f.excerpts:
        console.print(f"      [dim]reply, turn {x.turn}:[/] {_excerpt_markup(x)}")


def print_failures(console: Console, run: dict[str, Any]) -> None:
    problems = failing(run)
    known = [v for v in run["verdicts"] if v["category"] == "xfailed"]
    if problems:
        console.print()
        console.print("[bold]Failures and errors[/]")
    for v, recs in problems:
        word = v["category"]
        critical = " [red bold]critical[/]" if v["critical_failed"] else ""
        console.print(f"[{STYLE[word]}]{word}[/]{critical} [bold]{escape(one_line(v['name']))}[/] "
                      f"[dim]{escape(one_line(v['test_id']))} @ {escape(one_line(v['provider']))}"
                      f"{repeats_text(v)}[/]")
        for f in findings(recs[0]) if recs else []:
            print_finding(console, f)
    if known:
        console.print()
        console.print("[bold]Known failures (xfail)[/]")
    for v in known:
        recs = [r for r in verdict_records(run, v) if r["status"] == "xfailed"]
        reason = one_line(recs[0]["xfail"]) if recs and recs[0].get("xfail") else ""
        console.print(f"[magenta]xfailed[/] [bold]{escape(one_line(v['name']))}[/] [dim]{escape(one_line(v['test_id']))}"
                      f" @ {escape(one_line(v['provider']))} — {escape(reason)}[/]")
        for f in findings(recs[0])[:1] if recs else []:
            print_finding(console, f)


def summary_table(run: dict[str, Any]) -> Table:
    table = Table(title="evalspec summary", box=box.SIMPLE_HEAD, show_lines=False)
    labels = [label for label, _ in count_items(run["summary"])]
    table.add_column("suite", no_wrap=True)
    for col in (*labels, "pass rate", "gate"):
        table.add_column(col, justify="right", min_width=min(len(col), 8))
    for s in run["gate"]["suites"]:
        table.add_row(escape(one_line(s["suite"])), *[str(n) for _, n in count_items(s["counts"])],
                      pass_rate_text(s["pass_rate"]), suite_gate_word(s))
    if len(run["gate"]["suites"]) > 1:
        table.add_row("[bold]total[/]", *[str(n) for _, n in count_items(run["summary"])],
                      pass_rate_text(run["gate"]["pass_rate"]), "")
    return table


def metrics_table(metrics: list[dict[str, Any]]) -> Table:
    """The `metric:` scoreboard (SPEC §9)."""
    table = Table(title="metrics", box=box.SIMPLE_HEAD, show_lines=False)
    for col in METRIC_COLUMNS:
        table.add_column(col, no_wrap=col in ("metric", "suite", "provider"),
                         justify="right" if col in METRIC_COLUMNS[3:] else "left")
    for m in metrics:
        table.add_row(*[escape(one_line(cell)) for cell in metric_cells(m)])
    return table


def print_summary(console: Console, run: dict[str, Any], paths: dict[str, str], quiet: bool = False) -> None:
    run = ensure_current(run)
    if not quiet:
        print_failures(console, run)
    console.print(summary_table(run))
    if run.get("baseline"):
        from evalspec.diff.render import print_diff

        print_diff(console, run["baseline"])
    configs = {(s["path"], p["id"]): p for s in run["suites"] for p in s["providers"]}
    described = list(dict.fromkeys((c["suite"], c["provider"]) for c in run.get("curves", [])))
    for key in described:
        if key in configs:
            console.print(f"[dim]{escape(one_line(key[1]))}: {escape(one_line(describe_provider(configs[key])))}[/]")
    for c in run.get("curves", []):
        console.print(f"curve [bold]{escape(one_line(c['test']))}[/] @ {escape(one_line(c['provider']))}: "
                      f"{escape(one_line(curve_text(c)))}")
    for sla in run["slas"]:
        style = {"met": "green", "missed": "red"}.get(sla["status"], "yellow")
        console.print(f"{escape(one_line(sla['id']))}: [{style}]{sla['status']}[/] — {escape(one_line(sla['text']))}")
    if run["summary"].get("metrics"):
        console.print(metrics_table(run["summary"]["metrics"]))
    print_attacks(console, run)
    for r, text in failed_teardowns(run):
        console.print(f"[yellow]{escape(one_line(text))}[/] · {escape(one_line(r['test_id']))} @ "
                      f"{escape(one_line(r['provider']))} (the verdict stands; what the test did may still be in place)")
    print_judging(console, run)
    summ = run["summary"]
    for warning in summ.get("warnings") or []:
        console.print(f"[yellow]warning: {escape(one_line(warning))}[/]")
    console.print(f"{conversations_text(summ['records'])} · {summ['calls']} calls + {summ['cached_calls']} from cache · "
                  f"{summ['tokens']} tokens · ${summ['cost']:.4f}"
                  + (f" · {judge_text(summ)}" if summ.get("judge_calls") else "")
                  + f" · {run.get('duration_s', 0):.2f}s")
    gate = run["gate"]
    style = {0: "green", 1: "red"}.get(gate["exit_code"], "yellow")
    console.print(f"[{style}]{gate_line(gate)}[/]"
                  + (": " + escape(one_line("; ".join(gate["reasons"]))) if gate["reasons"] else ""))
    for kind, path in paths.items():
        console.print(f"[dim]{kind}: {escape(path)}[/]")
