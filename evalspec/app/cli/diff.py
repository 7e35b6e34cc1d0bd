"""`evalspec diff`: read two run.json files, print and write the diff."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalspec.results.rundata import Baseline, RunData

from markupsafe import escape

from evalspec.reporters.diff import html_section_parts, markdown_lines, print_diff
from evalspec.results.compare import compare_runs
from evalspec.results.runjson import read_run

PAGE = """<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>evalspec diff</title><style>body{{font-family:system-ui,sans-serif;margin:16px;color:#1f2937}}
table{{border-collapse:collapse;width:100%}}td,th{{padding:4px 8px;border-bottom:1px solid #e5e7eb;text-align:left;font-size:14px}}
.failed{{color:#b91c1c;font-weight:bold}}.passed{{color:#15803d}}.skipped{{color:#6b7280}}.meta{{color:#6b7280;font-size:12px}}</style>
</head><body><h1>evalspec diff</h1><p class="meta">{base} → {head}</p>{section}</body></html>
"""




def write_diff_page(diff: Baseline, path: Path) -> None:
    """The diff as a self-contained page, written as its rows are read (a large diff's page is never held
    whole, docs/en/scale-and-ray.md#memory)."""
    names = {"base": escape(diff["base"].get("path") or diff["base"].get("run_id")),
             "head": escape(diff["head"].get("path") or diff["head"].get("run_id"))}
    before, after = (half.format(**names) for half in PAGE.split("{section}"))
    with path.open("w", encoding="utf-8") as out:
        out.write(before)
        for part in html_section_parts(diff):
            out.write(part)
        out.write(after)


def run_diff_command(base_path: str, head_path: str, md_path: str | None, html_path: str | None,
                     output: str | None, lang: str | None = None, max_failures: int = 50) -> int:
    """The diff in `lang` (None: the head run's language, docs/en/reports-and-gate.md#language)."""
    from evalspec.reporters.catalogue import choose_lang, speaking

    head = read_run(head_path, check=True, stream=True)  # one record at a time (docs/en/scale-and-ray.md#memory)
    problems = array("q")  # each row's HEAD record of its first problem, for the screen's words
    diff = compare_runs(read_run(base_path, check=True, stream=True), head, base_path, head_path,
                        rows_on_disk=True, problems=problems)
    with speaking(choose_lang(head, lang)):
        return _write_diff(diff, md_path, html_path, output, head, problems, max_failures)


def _write_diff(diff: Baseline, md_path: str | None, html_path: str | None, output: str | None,
                head: RunData | None = None, problems: array[int] | None = None, max_failures: int = 50) -> int:
    from evalspec.reporters.console import make_console
    from evalspec.reporters.diffwords import spoken
    from evalspec.results.runjson import write_json

    shown = spoken(diff, head, problems) if head is not None else diff  # the JSON keeps run.json's English words
    print_diff(make_console(), shown, max_failures)
    if md_path:
        Path(md_path).parent.mkdir(parents=True, exist_ok=True)
        Path(md_path).write_text("\n".join(markdown_lines(shown, max_failures)) + "\n", encoding="utf-8")
    if html_path:
        Path(html_path).parent.mkdir(parents=True, exist_ok=True)
        write_diff_page(shown, Path(html_path))
    if output:
        write_json(Path(output), diff)
    return int(diff["exit_code"])
