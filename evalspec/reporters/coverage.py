"""The coverage matrix on screen (docs/en/coverage.md): `evalspec coverage` as text and Markdown, and the matrix of
a run in the HTML and Markdown reports (with the run's pass rate per cell)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from evalspec.reporters.catalogue import word, words
from evalspec.reporters.vocabulary import pass_rate_text
from evalspec.results.coverage import VERDICTS, run_matrices
from evalspec.results.rundata import RunData

EMPTY = "—"


def columns(with_run: bool) -> list[str]:
    return ["tests", "approved", *(VERDICTS if with_run else ())]


def mark_word(cell: Mapping[str, Any] | None) -> str:
    """A run's cell marked by its interval: untested, thin or stable (docs/en/coverage.md#marks); "" for
    a cell of a matrix without a run (or of an older report)."""
    found = (cell or {}).get("mark")
    return words(f"coverage_{found}") if found in ("untested", "thin", "stable") else ""


def cell_text(cell: Mapping[str, Any] | None, with_run: bool) -> str:
    """A grid cell: `tests / approved`, with a run `· passed / failed / error · mark`; `—` when no test
    covers it."""
    if not cell:
        return EMPTY
    text = f"{cell['tests']} / {cell['approved']}"
    return text + (f" · {cell['passed']} / {cell['failed']} / {cell['error']} · {mark_word(cell)}" if with_run else "")


def _table(head: list[str], rows: list[list[str]], right: int, md: bool) -> list[str]:
    """A Markdown table (`md`) or an aligned text one; columns from `right` on are numbers."""
    if md:
        esc = [[c.replace("|", "\\|") for c in r] for r in [head, *rows]]
        return [f"| {' | '.join(esc[0])} |", "|" + "|".join("---" if i < right else "---:" for i in range(len(head))) + "|",
                *(f"| {' | '.join(r)} |" for r in esc[1:])]
    from rich.cells import cell_len

    widths = [max(cell_len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(r: list[str]) -> str:
        return "  ".join((" " * (w - cell_len(c)) + c) if i >= right else (c + " " * (w - cell_len(c)))
                         for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()

    return ["  " + line(head), *("  " + line(r) for r in rows)]


def dimension_lines(result: Mapping[str, Any], with_run: bool, md: bool, rate: bool = False) -> list[str]:
    cols = columns(with_run)
    out: list[str] = []
    for d in result["dimensions"]:
        marks = with_run and any("mark" in v for v in d["values"])
        head = [d["name"], *(words(c) for c in cols), *([words("pass_rate")] if rate else []),
                *([words("coverage_mark")] if marks else [])]
        rows = [[v["value"], *(str(v[c]) for c in cols), *([pass_rate_text(v["pass_rate"])] if rate else []),
                 *([mark_word(v)] if marks else [])] for v in d["values"]]
        out += [f"#### {d['name']}", ""] if md else [f"{words('dimension')}: {d['name']}"]
        out += _table(head, rows, 1, md) + [""]
    return out


def grid_lines(grid: Mapping[str, Any], with_run: bool, md: bool, cell: Callable[[Any], str] | None = None,
               legend: str | None = None) -> list[str]:
    show = cell or (lambda c: cell_text(c, with_run))
    head = [f"{grid['rows']} \\ {grid['columns']}", *grid["column_values"]]
    rows = [[a, *(show(c) for c in cells)] for a, cells in zip(grid["row_values"], grid["cells"], strict=True)]
    legend = legend or words("coverage_cell_run" if with_run else "coverage_cell")
    return [f"{grid['rows']} × {grid['columns']} ({legend})", "", *_table(head, rows, 1, md), ""]


def rule_lines(rules: Sequence[Mapping[str, Any]], md: bool) -> list[str]:
    if not rules:
        return []
    head = [words("rule"), words("where"), words("tests"), words("examples")]
    rows = [[f"{r['rule']} ({word(str(r['severity']))})", r["where"], str(r["tests"]), words("yes" if r["examples"] else "no")]
            for r in rules]
    return [f"### {words('coverage_rules')}" if md else words("coverage_rules"), *([""] if md else []),
            *_table(head, rows, 2, md), ""]


def seen_lines(report: Mapping[str, Any], md: bool) -> list[str]:
    out: list[str] = []
    state = report.get("state")
    if state:
        out += [f"### {words('coverage_state')}" if md else words("coverage_state"), *([""] if md else [])]
        out += [f"- {k}: {', '.join(v)}" if md else f"  {k}: {', '.join(v)}" for k, v in state.items()] + [""]
    unused = report.get("tools_never_called")
    if unused:
        out += [f"### {words('coverage_tools_unused')}" if md else words("coverage_tools_unused"),
                *([""] if md else []), ("" if md else "  ") + ", ".join(unused), ""]
    return out


def report_lines(report: Mapping[str, Any], md: bool) -> list[str]:
    """What `evalspec coverage` prints (text) or writes with `--md`."""
    with_run = report.get("run") is not None
    out = [f"## {words('coverage_title')}", ""] if md else []
    if not report["dimensions"]:
        out += [words("coverage_none"), ""]
    out += dimension_lines(report, with_run, md)
    if report.get("grid"):
        out += grid_lines(report["grid"], with_run, md)
    out += rule_lines(report["rules"], md)
    out += seen_lines(report, md)
    if report.get("min") is not None:
        low = report["below_min"]
        out.append(words("coverage_below", n=len(low), min=report["min"],
                         list=", ".join(f"{x['dimension']}={x['value']} ({x['approved']})" for x in low))
                   if low else words("coverage_min_ok", min=report["min"]))
    while out and not out[-1]:
        out.pop()
    return out


def _rate_cell(cell: Mapping[str, Any] | None) -> str:
    if not cell:
        return EMPTY
    verdicts = sum(cell.get(k, 0) for k in VERDICTS)
    marked = f" · {mark_word(cell)}" if mark_word(cell) else ""
    if not verdicts:  # covered, but no verdict passed, failed or errored (an xfail, a draft)
        return f"{EMPTY} ({cell['tests']} {words('tests')}){marked}"
    return f"{pass_rate_text(cell.get('pass_rate'))} ({cell['passed']}/{verdicts}){marked}"


def markdown_lines(run: RunData) -> list[str]:
    """The run's matrix in the Markdown summary: for each suite that declares `coverage:`."""
    out: list[str] = []
    for m in run_matrices(run):
        out += ["", f"### {words('coverage_title')} · {m['suite']}", ""]
        if m.get("grid"):
            out += grid_lines(m["grid"], True, True, _rate_cell, words("coverage_cell_rate"))
        out += dimension_lines(m, True, True, rate=True)
    while out and not out[-1]:
        out.pop()
    return out


CSS = """.coverage table.grid td,.coverage table.grid th{text-align:center}.coverage table.grid th:first-child,
.coverage table.grid td:first-child{text-align:left}.coverage td.none{color:#9ca3af;background:#f9fafb}
.coverage td.low{background:#fef2f2}.coverage td.mid{background:#fffbeb}.coverage td.high{background:#f0fdf4}
.coverage .legend{font-size:12px;color:#6b7280}.coverage h3{font-size:15px;margin:14px 0 4px}
@media (max-width:600px){.coverage td,.coverage th{padding:4px 3px;font-size:12px}}"""


def _shade(cell: Mapping[str, Any] | None) -> str:
    if not cell:
        return "none"
    rate = cell.get("pass_rate")
    return "" if rate is None else "high" if rate >= 0.9 else "mid" if rate >= 0.5 else "low"


def html_section(run: RunData) -> Markup:
    """The run's matrix per suite that declares `coverage:`: a grid of its first two dimensions, each
    cell the pass rate (passed / verdicts), and one table per dimension; nothing otherwise."""
    matrices = run_matrices(run)
    if not matrices:
        return Markup("")
    parts = [f"<section id='coverage' class='coverage'><style>{CSS}</style><h2>{escape(words('coverage_title'))}</h2>"]
    for m in matrices:
        parts.append(f"<h3>{escape(m['suite'])}</h3>")
        grid = m.get("grid")
        if grid:
            head = "".join(f"<th>{escape(v)}</th>" for v in grid["column_values"])
            body = "".join(
                f"<tr><th scope='row'>{escape(a)}</th>"
                + "".join(f"<td class='{_shade(c)}' data-label='{escape(b)}' data-mark='{escape((c or {}).get('mark', ''))}'>"
                          f"{escape(_rate_cell(c))}</td>"
                          for b, c in zip(grid["column_values"], cells, strict=True)) + "</tr>"
                for a, cells in zip(grid["row_values"], grid["cells"], strict=True))
            parts.append(f"<div class='scroll'><table class='grid'><thead><tr><th>{escape(grid['rows'])} \\ "
                         f"{escape(grid['columns'])}</th>{head}</tr></thead><tbody>{body}</tbody></table></div>")
        for d in m["dimensions"]:
            heads = [d["name"], *(words(c) for c in columns(True)), words("pass_rate"), words("coverage_mark")]
            head = "".join(f"<th{'' if i == 0 else ' class=n'}>{escape(h)}</th>" for i, h in enumerate(heads))
            rows = []
            for v in d["values"]:
                cells = [v["value"], *(str(v[c]) for c in columns(True)),
                         pass_rate_text(v["pass_rate"]) if v["tests"] else words("coverage_uncovered"), mark_word(v)]
                rows.append("<tr>" + "".join(
                    f"<td data-label='{escape(h)}'{'' if i == 0 else ' class=n'}>{escape(c)}</td>"
                    for i, (h, c) in enumerate(zip(heads, cells, strict=True))) + "</tr>")
            parts.append(f"<div class='scroll'><table class='values'><thead><tr>{head}</tr></thead>"
                         f"<tbody>{''.join(rows)}</tbody></table></div>")
    parts.append(f"<p class='legend'>{escape(words('coverage_cell_rate'))}</p></section>")
    return Markup("".join(parts))
