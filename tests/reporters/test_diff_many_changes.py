"""A diff with many changed tests (docs/en/scale-and-ray.md#memory): the console and the Markdown list the
first `--max-failures` and say how many more; the HTML lists every one, in the same order whether the
rows are in memory or on disk, and `evalspec diff --html` writes its page as the rows are read."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from markupsafe import escape
from rich.console import Console

from evalspec.app.cli.diff import PAGE, write_diff_page
from evalspec.reporters.catalogue import speaking
from evalspec.reporters.diff import html_section, markdown_lines, print_diff
from evalspec.results.compare import compare_runs
from evalspec.results.stream import DiskRows
from tests.helpers import invoke
from tests.results.helpers import rec, run

# a run where tests regress, get fixed, are new or removed: several kinds, blocking and not, interleaved
BASE = run(*[rec(f"旧{i}", "passed") for i in range(6)], *[rec(f"坏{i}", "passed" if i % 2 else "failed") for i in range(8)])
HEAD = run(*[rec(f"新{i}", "failed" if i % 3 else "passed") for i in range(7)],
           *[rec(f"坏{i}", "failed" if i % 2 else "passed") for i in range(8)])


def diffs() -> tuple[dict[str, Any], dict[str, Any]]:
    """The same diff with its rows in a list and on disk."""
    in_memory = dict(compare_runs(BASE, HEAD))
    on_disk = dict(compare_runs(BASE, HEAD, rows_on_disk=True))
    assert isinstance(on_disk["rows"], DiskRows) and list(on_disk["rows"]) == in_memory["rows"]
    return in_memory, on_disk


def test_rows_on_disk_are_listed_in_the_order_a_sort_gives() -> None:
    in_memory, on_disk = diffs()
    with speaking("zh"):
        assert html_section(on_disk) == html_section(in_memory)  # type: ignore[arg-type]
        assert markdown_lines(on_disk) == markdown_lines(in_memory)  # type: ignore[arg-type]
    shown = html_section(in_memory)  # type: ignore[arg-type]
    kinds = [k for k in ("regressed", "new failing", "fixed", "new", "removed") if f'data-change="{k}"' in shown]
    assert len(kinds) == 5 and shown.count("<tr data-change=") == sum(1 for r in in_memory["rows"] if r["category"] != "unchanged")


def screen(diff: dict[str, Any], limit: int) -> str:
    out = io.StringIO()
    with speaking("en"):
        print_diff(Console(file=out, width=200), diff, limit)  # type: ignore[arg-type]
    return out.getvalue()


def test_the_console_lists_the_first_n_changes_then_how_many_more() -> None:
    in_memory, on_disk = diffs()
    changed = sum(1 for r in in_memory["rows"] if r["category"] != "unchanged")
    for diff in (in_memory, on_disk):
        assert sum(1 for line in screen(diff, 3).splitlines() if line.startswith("│")) == 3  # three rows
        assert f"… and {changed - 3} more changes" in screen(diff, 3)
        assert "┃" not in screen(diff, 0) and f"… and {changed} more changes" in screen(diff, 0)
        assert "more changes" not in screen(diff, changed)


BOT = "def respond(messages, context):\n    return '坏' if context['test_id'] in BAD else '好'\n"


def side(folder: Path, name: str, ids: list[str], bad: set[str]) -> None:
    (folder / f"{name}.py").write_text(f"BAD = {sorted(bad)!r}\n" + BOT, encoding="utf-8")
    tests = "".join(f"  - {{id: {i}, conversation: [{{user: 你好, assert: [{{equals: 好}}]}}]}}\n" for i in ids)
    (folder / "s.yaml").write_text(f"providers: [{{id: bot, python: {name}.py:respond}}]\ntests:\n{tests}", encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-o", f"{name}.json", "--no-cache", "-q")
    assert code in (0, 1), out


def test_evalspec_diff_max_failures_and_its_page_written_as_read(in_tmp: Path) -> None:
    side(in_tmp, "base", [f"旧{i}" for i in range(6)] + [f"坏{i}" for i in range(8)], {f"坏{i}" for i in range(0, 8, 2)})
    side(in_tmp, "head", [f"新{i}" for i in range(7)] + [f"坏{i}" for i in range(8)],
         {f"坏{i}" for i in range(1, 8, 2)} | {f"新{i}" for i in range(7) if i % 3})
    code, out = invoke("diff", "base.json", "head.json", "--max-failures", "2", "--md", "d.md", "--html", "d.html",
                       "-o", "d.json", "--lang", "en")
    diff = json.loads((in_tmp / "d.json").read_text(encoding="utf-8"))
    changed = sum(1 for r in diff["rows"] if r["category"] != "unchanged")
    assert code == 1, out
    assert changed == 6 + 7 + 8 and f"… and {changed - 2} more changes" in out
    assert f"… and {changed - 2} more changes" in (in_tmp / "d.md").read_text(encoding="utf-8")
    page = (in_tmp / "d.html").read_text(encoding="utf-8")
    assert page.count("<tr data-change=") == changed  # the page lists every one
    with speaking("en"):
        write_diff_page(diff, in_tmp / "again.html")
        whole = PAGE.format(base=escape(diff["base"]["path"]), head=escape(diff["head"]["path"]),
                            section=html_section(diff))
    assert (in_tmp / "again.html").read_text(encoding="utf-8") == whole == page
