"""run.json on disk: written one record per line (readable with grep and a diff), read back checked."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalspec.config.paths import format_path
from evalspec.core.errors import ConfigError, Problem
from evalspec.results.journal import encode
from evalspec.results.stream import JournalRecords

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


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """One top-level key per line and one list item (a record, a verdict) per line, each as the
    journal encodes it: readable with grep and a diff, and fast (`indent=2` goes through the
    pure-Python encoder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write("{")
            for i, (key, value) in enumerate(data.items()):
                fh.write(("," if i else "") + "\n" + json.dumps(key, ensure_ascii=False) + ": ")
                if isinstance(value, (list, JournalRecords)) and value:
                    items = value.lines() if isinstance(value, JournalRecords) else \
                        (encode(item).decode("utf-8") for item in value)
                    for j, text in enumerate(items):  # item by item: never the whole file as one string
                        fh.write(("[\n" if j == 0 else ",\n") + text)
                    fh.write("\n]")
                else:
                    fh.write(json.dumps(value, ensure_ascii=False))
            fh.write("\n}\n")
        tmp.replace(path)
    except OSError as exc:  # a full disk: the error names run.json (a failed write names no file), the part goes
        with contextlib.suppress(OSError):
            tmp.unlink()
        if exc.filename is None:
            exc.filename = str(path)
        raise
