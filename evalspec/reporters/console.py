"""Console output: a live progress bar on a terminal, one line per finished test otherwise, then a summary."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from evalspec.config.model import describe_provider

STYLE = {"passed": "green", "failed": "red", "error": "yellow", "skipped": "dim", "xfailed": "magenta",
         "xpassed": "cyan"}
SYMBOL = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP", "xfailed": "XFAIL",
          "xpassed": "XPASS"}


class ConsoleReporter:
    def __init__(self, console: Console | None = None, quiet: bool = False) -> None:
        self.console = console or make_console()
        self.quiet = quiet
        self.live = self.console.is_terminal and not quiet
        self.counts = {s: 0 for s in STYLE}
        self.calls = self.tokens = 0
        self.cost = 0.0
        self.progress: Progress | None = None
        self.task: Any = None
        self.started = time.monotonic()

    def _stats(self) -> str:
        c = self.counts
        return (f"[green]{c['passed']} passed[/] [red]{c['failed']} failed[/] [yellow]{c['error']} error[/] "
                f"· calls {self.calls} · tokens {self.tokens} · ${self.cost:.4f}")

    def on_start(self, total: int, already_done: int) -> None:
        self.started = time.monotonic()
        if already_done and not self.quiet:
            self.console.print(f"resuming: {already_done} of {total} already finished")
        if self.live:
            self.progress = Progress(TextColumn("[bold]evalspec"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.description}"), TimeElapsedColumn(),
                                     console=self.console, transient=True)
            self.progress.start()
            self.task = self.progress.add_task(self._stats(), total=total, completed=already_done)

    def on_result(self, record: dict[str, Any]) -> None:
        self.counts[record["status"]] += 1
        self.calls += record.get("calls", 0) - record.get("cached_calls", 0)
        self.tokens += record.get("tokens") or 0
        self.cost += record.get("cost") or 0.0
        if self.progress is not None:
            self.progress.update(self.task, advance=1, description=self._stats())
        elif not self.quiet:
            status = record["status"]
            score = f"{record['score']:.2f}" if record.get("score") is not None else "-"
            extra = " [dim](curve point, not gated)[/]" if record.get("curve") else ""
            if status in ("failed", "error", "xfailed"):
                extra += " — " + escape(first_problem(record))
            self.console.print(f"[{STYLE[status]}]{SYMBOL[status]:5}[/] {escape(record['test_id'])} "
                               f"[dim]@ {escape(record['provider'])} score {score} "
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


def first_problem(record: dict[str, Any]) -> str:
    if record.get("error"):
        return str(record["error"])
    for a in record.get("assertions", []):
        if a["pass"] is False:
            turns = sorted({e["turn"] for e in a.get("evidence", []) if e.get("turn") is not None})
            where = f"turn {', '.join(map(str, turns))}: " if turns else ""
            return f"{where}{a['type']}: {a['reason']}"
    return ""


def print_summary(console: Console, run: dict[str, Any], paths: dict[str, str], quiet: bool = False) -> None:
    records = run["results"]
    if not quiet:
        problems = [r for r in records if r["status"] in ("failed", "error", "xfailed")
                    and not (r.get("curve") and r["status"] != "error")]
        if problems:
            console.print()
            console.print("[bold]Failures and errors[/]")
        for r in problems:
            console.print(f"[{STYLE[r['status']]}]{SYMBOL[r['status']]}[/] [bold]{escape(r['test_id'])}[/] @ "
                          f"{escape(r['provider'])}" + (f"  [dim](xfail: {escape(str(r['xfail']))})[/]" if r.get("xfail") else ""))
            if r.get("error"):
                console.print(f"    [yellow]error:[/] {escape(str(r['error']))}")
            for a in r["assertions"]:
                if a["pass"] is not False and not a.get("error"):
                    continue
                label = a["type"] + (f" (turn {a['turn']})" if a.get("turn") else "")
                console.print(f"    {escape(label)}: {escape(a.get('error') or a['reason'])}")
                for e in a.get("evidence", [])[:3]:
                    if e.get("text"):
                        note = f" [dim]({escape(e['note'])})[/]" if e.get("note") else ""
                        console.print(f"      [dim]turn {e.get('turn')}:[/] {escape(str(e['text'])[:120])}{note}")
    table = Table(title="evalspec summary", show_lines=False)
    for col in ("suite", "pass", "fail", "error", "xfail", "xpass", "not gated", "pass rate", "gate"):
        table.add_column(col, justify="left" if col == "suite" else "right", overflow="fold")
    for s in run["gate"]["suites"]:
        mine = [v for v in run["verdicts"] if v["suite"] == s["suite"]]
        loose = [v for v in mine if v["curve"] or v["draft"]]
        counts = Counter(v["status"] for v in mine if v not in loose)
        table.add_row(escape(s["suite"]), str(counts["passed"]), str(counts["failed"]),
                      str(counts["error"]), str(counts["xfailed"]), str(counts["xpassed"]), str(len(loose)),
                      f"{s['pass_rate']:.0%}",
                      "[green]ok[/]" if s["ok"] and not s["errors_exceeded"] else "[red]FAIL[/]" if not s["ok"] else "[yellow]errors[/]")
    console.print(table)
    if run.get("baseline"):
        from evalspec.diff.render import print_diff

        print_diff(console, run["baseline"])
    configs = {(s["path"], p["id"]): p for s in run["suites"] for p in s["providers"]}
    for c in run.get("curves", []):
        config = configs.get((c["suite"], c["provider"]))
        if config:
            console.print(f"[dim]{escape(c['provider'])}: {escape(describe_provider(config))}[/]")
        pts = ", ".join(f"{p['value']}: {p['mean']:.2f}" if p["mean"] is not None else f"{p['value']}: -" for p in c["points"])
        sla = "; ".join(f"SLA at {x['at']} ≥ {x['min_score']}: {'met' if x['passed'] else 'no data' if x['no_data'] else 'MISSED'}"
                        for x in c["sla"])
        console.print(f"curve [bold]{escape(c['test'])}[/] @ {escape(c['provider'])} by {c['variable']}: {pts}"
                      f" · half-life {c['half_life']} · failure point {c['failure_point']}" + (f" · {sla}" if sla else ""))
    summ = run["summary"]
    console.print(f"{summ['records']} conversations · {summ['calls']} calls + {summ['cached_calls']} from cache · "
                  f"{summ['tokens']} tokens · ${summ['cost']:.4f}"
                  + (f" · {summ['judge_calls']} judge calls ${summ['judge_cost']:.4f}" if summ.get("judge_calls") else "")
                  + f" · {run['duration_s']:.2f}s")
    gate = run["gate"]
    verdict = {0: "[green]gate passed[/]", 1: "[red]gate FAILED[/]", 3: "[yellow]gate: too many errors[/]"}[gate["exit_code"]]
    console.print(verdict + (": " + escape("; ".join(gate["reasons"])) if gate["reasons"] else ""))
    for kind, path in paths.items():
        console.print(f"[dim]{kind}: {escape(path)}[/]")
