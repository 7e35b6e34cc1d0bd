"""The review actions of `evalspec view` (docs/en/review.md), each written to a file the command line also reads:

    triage   → run.json and .evalspec/triage.jsonl, through `evalspec triage`'s own writer
    label    → .evalspec/labels.jsonl, one `judge-eval` line: {transcript, assert, label} (+ who, when, note)
    approve  → the suite file without the test's `draft: true`, and a line in .evalspec/review.log
    make-test → a draft scripted test from a conversation, appended to (or starting) a suite, and a line
                in .evalspec/review.log (`evalspec import transcripts`' writer)

Nothing is written outside the project directory: a path that resolves outside it is refused, and a
run.json given on the command line from elsewhere keeps its content (the triage still goes to
triage.jsonl). A bad body is an ActionError whose message the server answers with 400.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from evalspec.app.view.panel import FailedCheck
from evalspec.app.view.runs import RunStore, UnknownRun, UnreadableRun
from evalspec.assertions.labels import LABELS_FILE, SCOPES_AS_WRITTEN  # one owner of the labels' form
from evalspec.core.errors import EvalspecError
from evalspec.core.portable import portable
from evalspec.results.rundata import Record, RunData, Triage

REVIEW_LOG = Path(".evalspec") / "review.log"
Body = Mapping[str, object]  # a POST's JSON object, as the page sent it: every field is checked before use


class TriagedRecord(TypedDict):
    test_id: str
    provider: str
    repeat: int
    status: str
    triage: Triage


class TriageAnswer(TypedDict):
    written: list[str]
    records: list[TriagedRecord]


class SaidMessage(TypedDict):
    role: str
    content: str


_LabelLine = TypedDict("_LabelLine", {"transcript": list[SaidMessage], "assert": dict[str, object],
                                      "label": bool | str})


class LabelLine(_LabelLine, total=False):
    """One line of labels.jsonl: what `judge-eval` reads (transcript, assert, label), then who said it, when
    and about which record (docs/en/review.md)."""

    verdict: str
    note: str | None
    who: str
    at: str
    run_id: str | None
    suite: str
    test_id: str
    provider: str
    assertion: int


class LabelAnswer(TypedDict):
    written: list[str]
    line: LabelLine


class ApproveAnswer(TypedDict):
    written: list[str]
    suite: str
    test: str
    line: int
    log: str


class MadeTest(TypedDict):
    written: list[str]
    suite: str
    path: str
    test: str
    notes: list[str]
    log: str


class ActionError(EvalspecError):
    """A review action's body names nothing it can act on."""


class NeedsConfirmation(ActionError):
    """Approving a draft that did not pass: `failed` lists its checks ([{assertion, reason}]); the server
    answers 409, and `force: true` approves it anyway."""

    def __init__(self, message: str, failed: list[FailedCheck]) -> None:
        super().__init__(message)
        self.failed = failed


@dataclass
class Reviewer:
    root: Path
    who: str
    store: RunStore

    def inside(self, path: Path) -> Path | None:
        """`path` resolved, when it lies inside the project directory; None otherwise."""
        resolved = (self.root / path).resolve()
        return resolved if resolved.is_relative_to(self.root.resolve()) else None

    def _file(self, relative: Path) -> Path:
        target = self.inside(relative)
        if target is None:  # .evalspec is a symlink out of the project
            raise ActionError(f"{relative} lies outside {self.root}: nothing written")
        return target


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def text_field(body: Body, key: str, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise ActionError(f"`{key}` must be a non-empty string, got {value!r}")
    return value


def _run(reviewer: Reviewer, body: Body) -> tuple[RunData, Path]:
    try:
        return reviewer.store.load(str(text_field(body, "run")))
    except (UnknownRun, UnreadableRun) as exc:
        raise ActionError(str(exc)) from None


def record_triage(reviewer: Reviewer, body: Body) -> TriageAnswer:
    """POST /api/triage {run, test, provider, attribution, note}."""
    from evalspec.core.errors import ConfigError
    from evalspec.results.runjson import read_run, write_json
    from evalspec.review.triage import TriageError, triage

    _, path = _run(reviewer, body)
    try:  # read whole and afresh: the attribution is written into its records (a large run is served streamed)
        data = read_run(path)
    except ConfigError as exc:
        raise ActionError("; ".join(str(p) for p in exc.problems)) from None
    test, cls = str(text_field(body, "test")), str(text_field(body, "attribution"))
    provider, note = text_field(body, "provider", False), text_field(body, "note", False)
    triage_file = reviewer._file(Path(".evalspec") / "triage.jsonl")
    try:
        records = triage(data, test, provider, cls, note or None, path=triage_file, who=reviewer.who)
    except TriageError as exc:
        raise ActionError(str(exc)) from None
    written = [str(triage_file)]
    if reviewer.inside(path) is not None:
        write_json(path, data)
        written.append(str(path))
    return {"written": written, "records": [{"test_id": r["test_id"], "provider": r["provider"],
                                             "repeat": r["repeat"], "status": r["status"], "triage": r["triage"]}
                                            for r in records]}


def _record(data: RunData, test: str, provider: str | None, repeat: object) -> Record:
    for r in data["results"]:
        if r["test_id"] == test and (provider is None or r["provider"] == provider) and \
                (repeat is None or r.get("repeat") == repeat):
            return r.copy()
    where = f" @ {provider}" if provider else ""
    raise ActionError(f"no record {test}{where} in run {data.get('run_id')}")


def label_line(record: Record, index: int, right: bool, level: str | None) -> LabelLine:
    """The `judge-eval` line for assertion `index` of `record`: its transcript (up to its turn), the
    assertion as a suite writes it, and the label a person gave (the judge's answer, or its opposite)."""
    assertions = record.get("assertions") or []
    if not 0 <= index < len(assertions):
        raise ActionError(f"`assertion` must be an index of the record's {len(assertions)} assertions, got {index}")
    a = assertions[index]
    details = a.get("details") or {}
    if not details.get("verdicts") or a.get("error") or a.get("pass") is None:
        raise ActionError(f"assertion {index} ({a.get('type')}) has no judge verdict to mark")
    rule: dict[str, object] = {str(a["type"]): a.get("value")}
    found = details.get("levels")
    levels: dict[str, Any] = found if isinstance(found, dict) else {}
    if levels:
        rule["levels"] = levels
    if isinstance(a.get("threshold"), (int, float)):
        rule["threshold"] = a["threshold"]
    transcript = [m for m in record.get("transcript") or [] if m.get("role") in ("user", "assistant", "system")]
    if a.get("turn") is not None:  # graded at its turn: the transcript up to it, graded as its last reply
        transcript = [m for m in transcript if m.get("turn") is None or m["turn"] <= a["turn"]]
        rule["scope"] = "last_response"
    elif a.get("scope") in SCOPES_AS_WRITTEN:
        rule["scope"] = a["scope"]
    rule = _as_judge_eval_reads(rule)
    answer: bool | str = details["level"] if levels and "level" in details else bool(a["pass"])
    if right:
        label: bool | str = answer
    elif isinstance(answer, bool):
        label = not answer
    elif level is None or level not in levels or level == answer:
        others = ", ".join(k for k in levels if k != answer)
        raise ActionError(f"the judge answered {answer!r}; a wrong level needs `level`, the right one: {others}")
    else:
        label = level
    return {"transcript": [{"role": m["role"], "content": m.get("content") or ""} for m in transcript],
            "assert": rule, "label": label}


def _as_judge_eval_reads(rule: dict[str, object]) -> dict[str, object]:
    """The assertion as `judge-eval` will parse it: without `scope` for a type that always reads the whole
    transcript; a rule it would still reject is an ActionError, so labels.jsonl only gets lines it reads."""
    from evalspec.config.asserts import parse_assertion
    from evalspec.config.paths import LineMap
    from evalspec.core.errors import Problem

    for candidate in (rule, {k: v for k, v in rule.items() if k != "scope"}):
        problems: list[Problem] = []
        parse_assertion(candidate, ("assert",), LineMap(str(LABELS_FILE)), problems, None)
        if not problems:
            return candidate
    raise ActionError(f"judge-eval could not read this assertion back: {problems[0].message}")


def record_label(reviewer: Reviewer, body: Body) -> LabelAnswer:
    """POST /api/label {run, test, provider, assertion, verdict: right|wrong, note} (+ `level` for a rubric)."""
    data, _ = _run(reviewer, body)
    verdict = body.get("verdict")
    if verdict not in ("right", "wrong"):
        raise ActionError(f"`verdict` must be 'right' or 'wrong', got {verdict!r}")
    index = body.get("assertion")
    if not isinstance(index, int) or isinstance(index, bool):
        raise ActionError(f"`assertion` must be the assertion's index in the record, got {index!r}")
    record = _record(data, str(text_field(body, "test")), text_field(body, "provider", False), body.get("repeat"))
    line = label_line(record, index, verdict == "right", text_field(body, "level", False))
    line.update({"verdict": verdict, "note": text_field(body, "note", False) or None, "who": reviewer.who, "at": now(),
                 "run_id": data.get("run_id"), "suite": portable(record["suite"], reviewer.root),
                 "test_id": record["test_id"], "provider": record["provider"], "assertion": index})
    target = reviewer._file(LABELS_FILE)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return {"written": [str(target)], "line": line}


def _holding(reviewer: Reviewer, data: RunData, path: Path, test: str) -> list[Record]:
    """The records of `test` of the suite at `path` in the run `data`."""
    return [r for r in data["results"] if test in (r.get("base_id"), r.get("test_id"))
            and reviewer.inside(Path(str(r.get("suite")))) == path]


def failed_in_run(reviewer: Reviewer, body: Body, path: Path, test: str) -> tuple[str | None, list[FailedCheck]]:
    """(run id, [{assertion, reason}]) of the checks that stopped `test` in the viewed run (`run`), else in
    the newest run holding it; no run holds it: (None, [])."""
    from evalspec.app.view.panel import failed_checks

    records: list[Record] = []
    run_id: str | None = None
    if body.get("run") is not None:
        data, _ = _run(reviewer, body)
        records, run_id = _holding(reviewer, data, path, test), data.get("run_id")
    else:
        for row in reviewer.store.summaries():  # newest first
            try:
                data, _ = reviewer.store.load(str(row["id"]))
            except UnknownRun:
                continue
            records = _holding(reviewer, data, path, test)
            if records:
                run_id = data.get("run_id")
                break
    failed: list[FailedCheck] = []
    for record in records:
        if record.get("status") in ("failed", "error"):
            failed += [c for c in failed_checks(record) if c not in failed]
    return (str(run_id) if records else None), failed


def approve(reviewer: Reviewer, body: Body) -> ApproveAnswer:
    """POST /api/approve {suite, test, run?, force?}: the draft becomes a regular test; review.log says who
    and when. A draft that failed in the viewed run (`run`; else the newest run holding it) is approved only
    with `force: true`: without it, NeedsConfirmation names its failed checks."""
    from evalspec.app.view.approve import ApproveError, remove_draft

    suite, test = str(text_field(body, "suite")), str(text_field(body, "test"))
    path = reviewer.inside(Path(suite))
    if path is None:
        raise ActionError(f"{suite}: outside {reviewer.root}; only suites inside it can be approved")
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        raise ActionError(f"{suite}: not a suite file (.yaml) in {reviewer.root}")
    if body.get("force") not in (None, True, False):
        raise ActionError(f"`force` must be true or false, got {body.get('force')!r}")
    run_id, failed = failed_in_run(reviewer, body, path, test)
    if failed and body.get("force") is not True:
        raise NeedsConfirmation(f"{test} did not pass in run {run_id} ({len(failed)} failed check"
                                f"{'s' if len(failed) > 1 else ''}); approve it anyway with force: true", failed)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
        edited, line = remove_draft(text, test)
    except UnicodeDecodeError:
        raise ActionError(f"{suite}: not UTF-8 text") from None
    except ApproveError as exc:
        raise ActionError(f"{suite}: {exc}") from None
    path.write_bytes(edited.encode("utf-8"))  # bytes: a CRLF file keeps its line ends
    log = reviewer._file(REVIEW_LOG)
    log.parent.mkdir(parents=True, exist_ok=True)
    entry = f"{now()} {reviewer.who} approved {portable(path, reviewer.root)}:{line} {test} (draft: true removed)"
    if failed:
        entry += f" despite {len(failed)} failed check{'s' if len(failed) > 1 else ''} in run {run_id}"
    with log.open("a", encoding="utf-8") as out:
        out.write(entry + "\n")
    return {"written": [str(path), str(log)], "suite": suite, "test": test, "line": line, "log": entry}


def make_test(reviewer: Reviewer, body: Body) -> MadeTest:
    """POST /api/make-test {run, test, provider, suite, allow_empty?}: the conversation as a draft scripted
    test in the suite (appended, the file otherwise untouched; or a new suite with the source's rules and
    providers) that replays its conditions (vars, state seed, tool stubs, provider), as `evalspec import
    transcripts` writes it; a test that would check nothing is refused unless `allow_empty`; review.log
    says who and when."""
    from evalspec.authoring.importers.transcripts import from_run, write_tests
    from evalspec.core.errors import ConfigError
    from evalspec.results.runjson import untyped

    data, run_path = _run(reviewer, body)
    test, provider = str(text_field(body, "test")), str(text_field(body, "provider"))
    suite = str(text_field(body, "suite"))
    path = reviewer.inside(Path(suite))
    if path is None:
        raise ActionError(f"{suite}: outside {reviewer.root}; a test can only be written to a suite inside it")
    if path.suffix not in (".yaml", ".yml") or path.is_dir():
        raise ActionError(f"{suite}: not a suite file (.yaml) in {reviewer.root}")
    if not any(r.get("test_id") == test for r in data["results"]):
        raise ActionError(f"no test {test} in run {data.get('run_id')}")
    if not any(r.get("test_id") == test and r.get("provider") == provider for r in data["results"]):
        raise ActionError(f"no record {test} @ {provider} in run {data.get('run_id')}")
    try:
        sources, source = from_run(run_path, [test], untyped(data), provider)
        written, notes = write_tests(sources, source, path, [], str(run_path), body.get("allow_empty") is True)
    except (ConfigError, UnicodeDecodeError) as exc:
        raise ActionError(f"{suite}: {exc}") from None
    import yaml

    tests = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("tests") or []
    written_id = str(tests[-1].get("id")) if tests and isinstance(tests[-1], dict) else test
    log = reviewer._file(REVIEW_LOG)
    log.parent.mkdir(parents=True, exist_ok=True)
    entry = f"{now()} {reviewer.who} made test {portable(path, reviewer.root)}:{written_id} from {data.get('run_id')} {test} @ {provider}"
    with log.open("a", encoding="utf-8") as out:
        out.write(entry + "\n")
    return {"written": [str(p) for p in written] + [str(log)], "suite": suite, "path": str(path),
            "test": written_id, "notes": notes, "log": entry}
