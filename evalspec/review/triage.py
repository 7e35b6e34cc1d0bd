"""Failure attribution (docs/en/judges.md#how-a-verdict-is-reached): why a failed or errored record failed, in five classes.

`rerun` sets bot_defect / model_fluctuation / infrastructure from what the replays did; a second opinion
that disagrees with a failed rule only *suggests* rule_misjudgment; a person's call (`evalspec triage`)
is written into run.json and into `.evalspec/triage.jsonl`, keyed by suite, instance id and provider, and
later runs copy it into their own run.json for the same key while the record's status stays the same.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeGuard

from evalspec.core.errors import EvalspecError
from evalspec.core.portable import portable, project_root
from evalspec.results.attribution import ATTRIBUTABLE, CLASSES, by_attribution  # noqa: F401  (re-exported)
from evalspec.results.rundata import AttributionName, Record, RunData, Triage
from evalspec.results.stream import records_where, update_record

RERUN_CLASS: dict[str, AttributionName] = {"reproduced": "bot_defect", "flaky": "model_fluctuation",
                                           "error": "infrastructure"}
TRIAGE_FILE = Path(".evalspec") / "triage.jsonl"


class TriageError(EvalspecError):
    """A triage names no failed or errored record of the run."""


class TriageLine(Triage):
    """One line of `.evalspec/triage.jsonl`: the record's key (its suite relative to the project root) and
    the person's call."""

    suite: str
    test_id: str
    provider: str


def is_class(name: object) -> TypeGuard[AttributionName]:
    """One of the attribution classes (docs/en/review.md)."""
    return name in CLASSES


def record_key(record: Record) -> tuple[str, str, str]:
    return str(record["suite"]), str(record["test_id"]), str(record["provider"])


def attribute_reruns(run: RunData, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write each rerun label's class into the failed and errored records it replayed; returns how many."""
    classes = {(r["suite"], r["test_id"], r["provider"]): rerun_class(r) for r in rows}
    count = 0
    for record in run["results"]:
        cls = classes.get(record_key(record))
        if cls is not None and record["status"] in ATTRIBUTABLE:
            record["attribution"], record["attribution_by"] = cls, "rerun"
            count += 1
    return count


def rerun_class(row: Mapping[str, Any]) -> AttributionName:
    """A rerun row's class: its label's, except replays that all errored by the simulated user's slip
    (docs/en/agents.md#simulator-faults) keep `simulator_fault`: the bot is not at fault."""
    found = row.get("attributions") or []
    if row["label"] == "error" and found and all(a == "simulator_fault" for a in found):
        return "simulator_fault"
    return RERUN_CLASS[row["label"]]


def triage(run: RunData, test_id: str, provider: str | None, cls: str, note: str | None,
           path: Path = TRIAGE_FILE, who: str | None = None) -> list[Record]:
    """Record a person's call (`who`: the reviewer) on the failed/errored records of `test_id` (and
    `provider`, when given)."""
    if not is_class(cls):
        raise TriageError(f"unknown class {cls!r}; valid: {', '.join(CLASSES)}")
    matching = [r for r in run["results"] if r["test_id"] == test_id and (provider is None or r["provider"] == provider)]
    if not matching:
        known = sorted({r["test_id"] for r in run["results"]})
        from evalspec.core.suggest import did_you_mean

        where = f" @ {provider}" if provider else ""
        raise TriageError(f"no record {test_id}{where} in this run{did_you_mean(test_id, known)}")
    chosen = [r for r in matching if r["status"] in ATTRIBUTABLE]
    if not chosen:
        statuses = ", ".join(sorted({r["status"] for r in matching}))
        raise TriageError(f"{test_id}: nothing to attribute: its records are {statuses} (only failed or errored "
                          "records carry an attribution)")
    at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    root = project_root(path)
    lines: dict[tuple[str, str, str], TriageLine] = {}
    for record in chosen:
        entry: Triage = {"as": cls, "note": note, "who": who, "at": at, "status": record["status"],
                         "run_id": run.get("run_id")}
        record["attribution"], record["attribution_by"], record["triage"] = cls, "triage", entry
        suite, tid, prov = record_key(record)
        suite = portable(suite, root)  # the file is committed: the suite relative to the project root
        lines[(suite, tid, prov)] = {"suite": suite, "test_id": tid, "provider": prov, **entry}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        for line in lines.values():
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return chosen


def os_user() -> str:
    """Who is reviewing when nobody said: the OS user (`unknown` when the system cannot tell)."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no USER/LOGNAME and no passwd entry (some containers)
        return "unknown"


def read_triage(path: Path = TRIAGE_FILE) -> dict[tuple[str, str, str], TriageLine]:
    """The latest triage per (suite, instance id, provider); unreadable lines are skipped."""
    latest: dict[tuple[str, str, str], TriageLine] = {}
    if not path.is_file():
        return latest
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
            if not is_class(entry["as"]) or not isinstance(entry["at"], str) or not isinstance(entry["status"], str):
                continue  # not a line `evalspec triage` writes
            latest[(str(entry["suite"]), str(entry["test_id"]), str(entry["provider"]))] = entry
        except (ValueError, KeyError, TypeError):
            continue
    return latest


def carry_over(run: RunData, path: Path = TRIAGE_FILE) -> int:
    """Copy earlier triages into this run's records with the same key and the same status; returns the count."""
    triages = read_triage(path)
    if not triages:
        return 0  # no pass over the records (a large run's are read back from the journal)
    root = project_root(path)
    triages = {(portable(suite, root), tid, prov): entry for (suite, tid, prov), entry in triages.items()}
    records, count = run["results"], 0
    for index, record in enumerate(records):
        suite, tid, prov = record_key(record)
        entry = triages.get((portable(suite, root), tid, prov))
        if entry is None or record["status"] != entry.get("status") or record.get("attribution_by") == "triage":
            continue
        carried: Triage = {"as": entry["as"], "note": entry.get("note"), "who": entry.get("who"), "at": entry["at"],
                           "status": entry["status"], "run_id": entry.get("run_id"), "carried": True}
        update_record(records, index, {  # a large run's records are read back: set, not changed in place
            "attribution": entry["as"], "attribution_by": "triage", "triage": carried})
        count += 1
    return count


def keep_attributions(before: RunData, after: RunData) -> None:
    """After re-grading, a record whose status did not change keeps its attribution."""
    kept = ("attribution", "attribution_by", "triage")
    # only the records with something to carry over stay in memory, and only what is carried: a large run's
    # are chosen by their light forms, which keep these keys (docs/en/scale-and-ray.md#memory)
    old = {r["key"]: {k: v for k, v in r.items() if k in ("status", *kept)}
           for r in records_where(before["results"], lambda r: any(k in r for k in kept))}
    if not old:
        return
    records = after["results"]
    for index, record in enumerate(records):
        prior = old.get(record["key"])
        if prior is None or prior["status"] != record["status"]:
            continue
        if fields := {key: prior[key] for key in kept if key in prior and key not in record}:
            update_record(records, index, fields)
