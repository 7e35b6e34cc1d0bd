"""`evalspec diff`: read two run.json files, print and write the diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from markupsafe import escape

from evalspec.config.yamlfile import format_path
from evalspec.diff.compare import compare_runs
from evalspec.diff.render import html_section, markdown_lines, print_diff
from evalspec.errors import ConfigError, Problem

PAGE = """<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>evalspec diff</title><style>body{{font-family:system-ui,sans-serif;margin:16px;color:#1f2937}}
table{{border-collapse:collapse;width:100%}}td,th{{padding:4px 8px;border-bottom:1px solid #e5e7eb;text-align:left;font-size:14px}}
.failed{{color:#b91c1c;font-weight:bold}}.passed{{color:#15803d}}.skipped{{color:#6b7280}}.meta{{color:#6b7280;font-size:12px}}</style>
</head><body><h1>evalspec diff</h1><p class="meta">{base} → {head}</p>{section}</body></html>
"""


#: `schema/run.schema.json`, shipped inside the package (a test keeps the two the same)
RUN_SCHEMA_FILE = Path(__file__).resolve().parent.parent / "data" / "run.schema.json"


def read_run(path: str, check: bool = False) -> dict[str, Any]:
    """A run.json, or exit 2 naming the file and what is wrong with it. With `check` (a baseline, SPEC
    §17) it must validate against the run schema, so a file that cannot be compared is refused before
    the first call instead of failing the run after the last one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError([Problem(path, None, "", f"not a readable run.json: {exc}")]) from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ConfigError([Problem(path, None, "", "not a run.json: it has no 'results' list")])
    if check and (problem := run_schema_problem(data)) is not None:
        raise ConfigError([Problem(path, None, "", f"does not validate against schema/run.schema.json: {problem}; "
                                                   "give a run.json written by evalspec run")])
    return data


def run_schema_problem(data: Any) -> str | None:
    """The first way `data` breaks the run schema (where, and what), or None."""
    import jsonschema

    schema = json.loads(RUN_SCHEMA_FILE.read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is None:
        return None
    where = format_path(tuple(error.absolute_path)) or "the top level"
    message = error.message if len(error.message) <= 200 else error.message[:200] + "…"
    return f"{where}: {message}"


def diff_page(diff: dict[str, Any]) -> str:
    return PAGE.format(base=escape(diff["base"].get("path") or diff["base"].get("run_id")),
                       head=escape(diff["head"].get("path") or diff["head"].get("run_id")),
                       section=html_section(diff))


def run_diff_command(base_path: str, head_path: str, md_path: str | None, html_path: str | None,
                     output: str | None, lang: str | None = None) -> int:
    """The diff in `lang` (None: the head run's language, SPEC §21)."""
    from evalspec.reporters.catalogue import choose_lang, speaking

    head = read_run(head_path, check=True)
    diff = compare_runs(read_run(base_path, check=True), head, base_path, head_path)
    with speaking(choose_lang(head, lang)):
        return _write_diff(diff, md_path, html_path, output)


def _write_diff(diff: dict[str, Any], md_path: str | None, html_path: str | None, output: str | None) -> int:
    from evalspec.api import write_json
    from evalspec.reporters.console import make_console

    print_diff(make_console(), diff)
    if md_path:
        Path(md_path).parent.mkdir(parents=True, exist_ok=True)
        Path(md_path).write_text("\n".join(markdown_lines(diff)) + "\n", encoding="utf-8")
    if html_path:
        Path(html_path).parent.mkdir(parents=True, exist_ok=True)
        Path(html_path).write_text(diff_page(diff), encoding="utf-8")
    if output:
        write_json(Path(output), diff)
    return int(diff["exit_code"])
