"""run.json on disk: written one record per line (readable with grep and a diff), read back checked."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from array import array
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, cast

from evalspec.config.paths import format_path
from evalspec.core.errors import ConfigError, Problem
from evalspec.results.journal import decode, encode
from evalspec.results.rundata import RunData
from evalspec.results.runshape import SHAPE_DEPTH, run_shape_problem, shape, shape_schema, shaped, top_problem
from evalspec.results.stream import DiskRows, JournalRecords, light

#: `schema/run.schema.json`, shipped inside the package (a test keeps the two the same)
RUN_SCHEMA_FILE = Path(__file__).resolve().parent.parent / "data" / "run.schema.json"


def read_run(path: str | Path, check: bool = False, stream: bool = False) -> RunData:
    """A run.json, checked: the one reader of run.json for every command
    (docs/en/troubleshooting.md#a-runjson-that-cannot-be-read).
    A file that is cut short, not UTF-8, not a JSON object or of the wrong shape is a ConfigError (exit 2)
    naming the file and what is wrong, so no command meets it half way. With `check` (a baseline,
    docs/en/rule-self-tests.md#verdicts-that-hold) it must validate against the whole run schema, so a file that cannot be compared is refused
    before the first call instead of failing the run after the last one.
    With `stream`, the `results` of a run.json written one record per line are a `JournalRecords` over the
    file itself: each record is checked as it is read (with `check`, against the whole schema, and so is
    the top level) and only its light form stays in memory (docs/en/scale-and-ray.md#memory); any other
    file is read whole, as without it."""
    if stream and (streamed := _read_streamed(Path(path), check)) is not None:
        return streamed
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError([Problem(str(path), None, "", f"cannot be read: {exc.strerror or exc}")]) from None
    data = parse_run(raw, str(path), shape=not check)  # the whole schema holds the shape's checks
    if check and (problem := run_schema_problem(data)) is not None:
        _refuse_schema(path, problem)
    return data


REFUSED = "; give a run.json written by evalspec run"  # how a refusal ends (`_refuse_schema`)


def _refuse_schema(path: str | Path, problem: str) -> None:
    """A baseline that breaks the run schema, refused (docs/en/rule-self-tests.md#verdicts-that-hold)."""
    raise ConfigError([Problem(str(path), None, "", f"does not validate against schema/run.schema.json: {problem}{REFUSED}")])


def untyped(run: Mapping[str, object]) -> dict[str, Any]:
    """`run` (or a part of it: a record, the baseline diff) for code that does not read `RunData` yet (it
    takes `dict[str, Any]`): the same object. Each call is a place still to type; none is left once the
    reporters, review and the CLI take `RunData`."""
    return cast(dict[str, Any], run)


def parse_run(raw: bytes, where: str, shape: bool = True) -> RunData:
    """The content of a run.json (`where` names it in the error), brought to today's shape (`migrate`) and
    checked as `read_run` says; without `shape`, only that it is a JSON object with a `results` list (the
    caller validates the whole schema)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([Problem(where, None, "", f"not a readable run.json: not UTF-8 text (byte {exc.start} is "
                                                    f"{raw[exc.start:exc.start + 1]!r}); give the run.json evalspec wrote")]) from None
    try:
        data = decode(text)
    except ValueError as exc:
        cut = " (the file looks cut short)" if not text.rstrip().endswith("}") else ""
        again = ("; `evalspec run … --resume` on its run folder writes it again from the journal, or run "
                 "`evalspec run` again")  # the next command (docs/en/troubleshooting.md#a-runjson-that-cannot-be-read)
        raise ConfigError([Problem(where, None, "", f"not a readable run.json: not valid JSON{cut}: {exc}{again}")]) from None
    if top_problem(data) is None:
        migrate(data)
    problem = run_shape_problem(data) if shape else top_problem(data)
    if problem is not None:
        raise ConfigError([Problem(where, None, "", f"not a run.json: {problem}; give a run.json written "
                                                    "by evalspec run (or delete this one)")])
    return cast(RunData, data)  # its shape is checked: RunData's schema is run.json's (results/schema.py)


def migrate(data: dict[str, Any]) -> None:
    """Bring a run.json written by an earlier evalspec to today's shape, in place, so that no reader
    special-cases old runs (docs/en/troubleshooting.md#a-runjson-that-cannot-be-read). `evalspec_version`
    has stayed 0.1.0, so each step recognises the old shape by the keys it lacks:
    - a record without `base_id` (a test without a matrix): its `test_id`;
    - a baseline row without a key every row has today (`name`, `draft`, ...): the value it meant (`_migrate_rows`);
    - a run written before the shared report vocabulary (no `slas`, no `summary.measured`, a verdict
      without `category`): its verdicts, curves, SLAs, summary and gate are worked out again from its
      records, as the run writes them (`aggregate.finalize`).
    A run whose records or suites are not shaped as a run's is left as it is: the shape check names what
    is wrong."""
    records, suites = data["results"], data.get("suites")
    if not isinstance(records, list) or not isinstance(suites, list) or _inputs_problem(records, suites):
        return
    for record in records:
        if "base_id" not in record:
            record["base_id"] = record["test_id"]
    _migrate_rows(data.get("baseline"))
    if _before_vocabulary(data):
        from evalspec.results.aggregate import finalize

        gate = data["gate"] if isinstance(data.get("gate"), dict) else {}
        fail_under = gate.get("fail_under")
        finalize(data, fail_under if isinstance(fail_under, (int, float)) else None, gate.get("include_drafts") is True)


def _migrate_rows(baseline: Any) -> None:
    """A baseline diff's rows from before each had every key the reports read (`rundata.BaselineRow`): the
    keys a row without them would have been written with."""
    rows = baseline.get("rows") if isinstance(baseline, dict) else None
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("test_id"), str):
            for key, value in (("name", row["test_id"]), ("score_delta", None), ("draft", False), ("measured", False),
                               ("critical_new", False), ("critical_newly_failed", []), ("problem", "")):
                row.setdefault(key, value)


def _inputs_problem(records: list[Any], suites: list[Any]) -> str | None:
    """What is wrong with the records and suites `migrate` works from (the shape check says it again)."""
    schema = shape_schema()
    defs, props = schema["$defs"], schema["properties"]
    return shape(records, props["results"], defs, ("results",), SHAPE_DEPTH - 1) or \
        shape(suites, props["suites"], defs, ("suites",), SHAPE_DEPTH - 1)


def _before_vocabulary(data: Mapping[str, Any]) -> bool:
    """Written before the shared report vocabulary: its summary, verdicts and gate are there (a file without
    them, or with one of another kind, is not an older run.json but a broken one)."""
    summary, verdicts, gate = data.get("summary"), data.get("verdicts"), data.get("gate")
    if not isinstance(summary, dict) or not isinstance(verdicts, list) or not isinstance(gate, dict):
        return False
    return "slas" not in data or "measured" not in summary or \
        any(isinstance(v, dict) and "category" not in v for v in verdicts)


RESULTS_LINE = b'"results": [\n'  # how write_json opens a non-empty `results` list: one record per line follows
VERDICTS_LINE = b'"verdicts": [\n'  # and a non-empty `verdicts` list: one verdict per line
BASELINE_LINE = (b'"baseline": {', b'"rows": [\n')  # and `baseline` with rows on disk (`run --baseline`): a row a line


def _items_of(schema: Mapping[str, Any], key: str) -> Any:
    """The schema of one item of the one-item-per-line list `key`: `results`, `verdicts`, or `baseline`
    (the diff's rows)."""
    if key == "baseline":
        return schema["$defs"]["baseline"]["properties"]["rows"]["items"]
    return schema["properties"][key]["items"]


_PLACES: dict[str, tuple[str, ...]] = {"results": ("results",), "verdicts": ("verdicts",), "baseline": ("baseline", "rows")}


class _Rows:
    """The one-item-per-line lists `_read_streamed` leaves out of memory: `results` (offsets into run.json,
    each record's light form in a DiskRows) and `verdicts` (a DiskRows of their own)."""

    def __init__(self) -> None:
        self.offsets = array("q")
        self.lights = DiskRows()  # on disk: memory that does not grow with the run (docs/en/scale-and-ray.md#memory)
        self.verdicts = DiskRows()
        self.baseline = DiskRows()  # the rows of `baseline`, the diff `run --baseline` made
        schema = shape_schema()
        self.defs = schema["$defs"]
        self.items = {key: _items_of(schema, key) for key in _PLACES}
        self.kept = {"results": self.lights, "verdicts": self.verdicts, "baseline": self.baseline}  # by list

    def take(self, key: str, line: bytes, at: int, check: bool) -> str | None:
        """Keep one item of list `key` (its line starts at byte `at`): None, or "" when the file is of an
        earlier shape (the whole-file reader migrates it), or the schema problem `check` found."""
        item = decode(line.rstrip(b"\r\n").removesuffix(b","))
        kept = self.kept[key]
        index = len(kept)
        if key != "baseline" and ("base_id" if key == "results" else "category") not in item:
            return ""  # an earlier shape: `migrate` it, whole
        if not (check and item_valid(key, item)):  # a valid item is of today's shape: no shape check needed
            if not shaped(item, self.items[key], self.defs, SHAPE_DEPTH - 2):
                return ""  # an earlier shape: `migrate` it, whole
            if check and (problem := item_schema_problem(key, item, index)) is not None:
                return problem
        if key == "results":
            self.offsets.append(at)
            self.lights.append(light(item))
        else:
            kept.append(item)
        return None


#: a run.json read one record at a time stays open for its records (one put in its place is another file);
#: where an open file cannot be replaced (Windows: a triage's write would fail), they open it by name each time
KEEP_OPEN = os.name == "posix"


def _read_streamed(path: Path, check: bool = False) -> RunData | None:
    """The run.json at `path` with its results and verdicts left on disk (see `read_run`), or None when it
    is not laid out one item per line, anything in it is wrong or it is of an earlier shape: the whole-file
    reader then reads it, brings it to today's shape and names any problem in its own words. With `check`, a
    record, verdict or top level that breaks the whole run schema is refused here, naming its place."""
    try:
        fh = path.open("rb")  # kept open by the records: a file put in its place is not the one read here
    except OSError:
        return None
    data: RunData | None = None
    try:
        data = _streamed_from(fh, path, check)
        return data
    finally:
        if data is None or not KEEP_OPEN:  # not read streamed, or refused: nothing keeps the file
            fh.close()


def _streamed_from(fh: IO[bytes], path: Path, check: bool) -> RunData | None:
    """`_read_streamed` of the open file `fh` (`path`): the records it gives are read from `fh`."""
    rows = _Rows()
    head: list[bytes] = []
    opening = {RESULTS_LINE: "results", VERDICTS_LINE: "verdicts"}
    try:
        inside: str | None = None
        while line := fh.readline():
            if inside is None:
                inside = opening.get(line) or \
                    ("baseline" if line.startswith(BASELINE_LINE[0]) and line.endswith(BASELINE_LINE[1]) else None)
                head.append(line if inside is None else line.rstrip(b"\n"))
                continue
            if line.startswith(b"]"):  # the list ends: the rest of the file is top-level keys
                inside = None
                head.append(line)
                continue
            problem = rows.take(inside, line, fh.tell() - len(line), check)
            if problem == "":
                return None
            if problem is not None:
                _refuse_schema(path, problem)
        if not rows.offsets or inside is not None:
            return None
        data = decode(b"".join(head))
    except (OSError, ValueError):
        return None
    verdicts = data.get("verdicts")
    if rows.verdicts and verdicts != []:  # a second `verdicts` key, or another layout
        return None
    if rows.verdicts:
        data["verdicts"] = []  # checked here as an empty list; its items were checked as they were read
    baseline = data.get("baseline")
    if rows.baseline and not (isinstance(baseline, dict) and baseline.get("rows") == []):
        return None  # a second `baseline` key, or another layout
    if run_shape_problem(data) is not None or _before_vocabulary(data):
        return None
    if check and (problem := run_schema_problem({**data, "results": []})) is not None:  # its items are checked
        _refuse_schema(path, problem)
    data["results"] = JournalRecords(path, rows.offsets, rows.lights, fh if KEEP_OPEN else None)
    if rows.verdicts:
        data["verdicts"] = rows.verdicts
    if rows.baseline:
        data["baseline"]["rows"] = rows.baseline
    return cast(RunData, data)


def run_schema_problem(data: Any) -> str | None:
    """The first way `data` breaks the run schema (where, and what), or None."""
    return _schema_problem(_validator(None), data, ())


def record_schema_problem(record: Any, index: int) -> str | None:
    """The first way one record (`results[index]`) breaks the run schema, or None: a baseline read one
    record at a time (docs/en/scale-and-ray.md#memory)."""
    return item_schema_problem("results", record, index)


def item_schema_problem(key: str, item: Any, index: int) -> str | None:
    """The first way one item of a one-item-per-line list (`results[index]`, `verdicts[index]`,
    `baseline.rows[index]`) breaks the run schema, or None."""
    return _schema_problem(_validator(key), item, (*_PLACES[key], index))


def item_valid(key: str, item: Any) -> bool:
    """Whether one item of a top-level list (`results`, `verdicts`) meets the run schema, by the schema
    compiled to Python (fastjsonschema, ~10× faster than jsonschema: `diff` checks every record of two runs).
    False decides nothing: `item_schema_problem` then asks jsonschema, which names the problem (or finds
    none: the compiled schema reads it as draft 7, whose `integer` refuses 1.0)."""
    fast = _compiled(key)
    if fast is None:
        return False
    try:
        fast(item)
    except Exception:  # noqa: BLE001  (fastjsonschema's refusal, or a value it cannot read: jsonschema decides)
        return False
    return True


@functools.cache
def _compiled(item: str) -> Callable[[Any], object] | None:
    """The run schema of one item of top-level list `item`, compiled to Python (None without fastjsonschema).
    The schema keeps to keywords that mean the same in draft 7 and 2020-12 (no `$ref` beside others),
    tests/results/test_run_schema_fast.py pins that."""
    try:
        import fastjsonschema
    except ImportError:
        return None
    own = {**_item_schema(item), "$schema": "http://json-schema.org/draft-07/schema#"}
    own.pop("$id", None)
    compiled: Callable[[Any], object] = fastjsonschema.compile(own)
    return compiled


def _item_schema(item: str) -> dict[str, Any]:
    """The run schema of one item of the one-item-per-line list `item`, with the definitions it refers to."""
    schema = json.loads(RUN_SCHEMA_FILE.read_text(encoding="utf-8"))
    return {"$schema": schema.get("$schema"), "$defs": schema["$defs"], **_items_of(schema, item)}


@functools.cache
def _validator(item: str | None) -> Any:
    """The whole run schema's validator, or (`item`: a top-level list) that of one of its items."""
    import jsonschema

    schema = _item_schema(item) if item is not None else json.loads(RUN_SCHEMA_FILE.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _schema_problem(validator: Any, data: Any, at: tuple[str | int, ...]) -> str | None:
    import jsonschema

    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return None
    where = format_path((*at, *error.absolute_path)) or "the top level"
    message = error.message if len(error.message) <= 200 else error.message[:200] + "…"
    return f"{where}: {message}"


def _text(value: object) -> bytes:
    """A top-level key or value of run.json as the standard encoder writes it (UTF-8, not escaped)."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _write_items(fh: IO[bytes], items: list[Any] | JournalRecords | DiskRows) -> None:
    """A list, one item a line: item by item, never the whole file as one string."""
    lines = items.lines() if isinstance(items, (JournalRecords, DiskRows)) else map(encode, items)
    for j, text in enumerate(lines):
        fh.write((b"[\n" if j == 0 else b",\n") + text)
    fh.write(b"\n]")


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """One top-level key per line and one list item (a record, a verdict) per line, each as the
    journal encodes it: readable with grep and a diff, and fast (`indent=2` goes through the
    pure-Python encoder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        with tmp.open("wb") as fh:  # bytes: the records' lines are copied as the journal holds them
            fh.write(b"{")
            for i, (key, value) in enumerate(data.items()):
                fh.write((b"," if i else b"") + b"\n" + _text(key) + b": ")
                if isinstance(value, (list, JournalRecords, DiskRows)) and value:
                    _write_items(fh, value)
                elif isinstance(value, Mapping) and any(isinstance(v, DiskRows) for v in value.values()):
                    for j, (inner, item) in enumerate(value.items()):  # `baseline`, whose rows are on disk
                        fh.write((b"{" if j == 0 else b", ") + _text(inner) + b": ")
                        if isinstance(item, DiskRows) and item:
                            _write_items(fh, item)
                        else:
                            fh.write(_text(list(item) if isinstance(item, DiskRows) else item))
                    fh.write(b"}")
                else:
                    fh.write(_text(value))
            fh.write(b"\n}\n")
        tmp.replace(path)
    except OSError as exc:  # a full disk: the error names run.json (a failed write names no file), the part goes
        with contextlib.suppress(OSError):
            tmp.unlink()
        if exc.filename is None:
            exc.filename = str(path)
        raise
