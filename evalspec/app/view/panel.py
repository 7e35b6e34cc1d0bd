"""The review panel of a run's page in `evalspec view` (docs/en/review.md): per conversation, what the
panel acts on (records, judged checks, draft), what it says after an attribution (the gate does not
change; the next step for the class) and the words it speaks, all in the page's language. The script
(`evalspec/data/view_panel.js`) reads this as JSON and sets every text as text."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

import yaml

from evalspec.reporters.catalogue import CATALOGUES, reason_text, words
from evalspec.reporters.judging import attribution_word
from evalspec.reporters.verdict_records import verdict_finder
from evalspec.reporters.vocabulary import where_text
from evalspec.results.attribution import ATTRIBUTABLE, CLASSES
from evalspec.results.findings import findings
from evalspec.results.rundata import Record, RunData, Triage


class FailedCheck(TypedDict):
    """What stopped a conversation: the check (None: the conversation itself) and why."""

    assertion: str | None
    reason: str


JudgedCheck = TypedDict("JudgedCheck", {"index": int, "type": str, "value": str, "pass": bool | None,
                                        "level": str | None, "levels": list[str]})


class PanelRecord(TypedDict):
    """One repeat of a conversation as the panel acts on it: its attribution and its judged checks."""

    test_id: str
    repeat: int
    status: str
    attributable: bool
    attribution: str | None
    triage: Triage | None
    judged: list[JudgedCheck]


class PanelVerdict(TypedDict):
    """One verdict (test × provider) of the run's page, with its records and the next step per class."""

    suite: str
    test: str
    provider: str
    draft: bool
    status: str | None
    records: list[PanelRecord]
    next: dict[str, str]


class PanelData(TypedDict):
    """The JSON the panel's script reads."""

    run: str
    reviewer: str
    classes: list[list[str]]
    names: dict[str, str]
    words: dict[str, str]
    pass_words: list[str]
    verdicts: list[PanelVerdict]


SHOWN_CLASSES = CLASSES  # simulator_fault included: the run sets it on a simulated user's slip
RERUN = "evalspec rerun {path} --failed --times 3"


def view_words() -> dict[str, str]:
    """Every `view_*` word of the catalogue, in the language being spoken, keyed without the prefix."""
    return {key.removeprefix("view_"): words(key) for key in CATALOGUES["en"] if key.startswith("view_")}


def class_names() -> list[list[str]]:
    """[[class, its name]] for the attribution choice: names, never codes (docs/en/red-lines.md)."""
    return [[c, attribution_word(c)] for c in CLASSES]


def failed_checks(record: Record) -> list[FailedCheck]:
    """[{assertion, reason}] of a failed or errored record, in the report's order: what stopped it."""
    out: list[FailedCheck] = [{"assertion": f.rule or where_text(f.where), "reason": f.error or reason_text(f.reason, f.reason_zh)}
                                 for f in findings(record)]
    if not out and record.get("status") in ATTRIBUTABLE:
        out.append({"assertion": None, "reason": record.get("error") or record["status"]})
    return out


def _nodes(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _same(node: yaml.Node, value: Any) -> bool:
    if isinstance(node, yaml.ScalarNode):
        return value is None or value is True or node.value == str(value)
    try:
        return bool(yaml.safe_load(yaml.serialize(node)) == value)
    except yaml.YAMLError:
        return False


def rule_line(suite: Path, test_id: str, assertion: Mapping[str, Any]) -> int | None:
    """The line (1-based) of `assertion` in the test `test_id` of `suite`: the first key naming its type
    with its value; else the test's own line; None when the file or the test is not there."""
    try:
        root = yaml.compose(suite.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    tests = next((v for k, v in (root.value if isinstance(root, yaml.MappingNode) else [])
                  if getattr(k, "value", None) == "tests"), None)
    test = next((t for t in (_nodes(tests) if tests is not None else []) if isinstance(t, yaml.MappingNode)
                 and any(getattr(k, "value", None) == "id" and getattr(v, "value", None) == test_id for k, v in t.value)),
                None)
    if test is None:
        return None
    todo: list[yaml.Node] = [test]
    while todo:
        node = todo.pop(0)
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if getattr(k, "value", None) == assertion.get("type") and _same(v, assertion.get("value")):
                    return int(k.start_mark.line) + 1
        todo += _nodes(node)
    return int(test.start_mark.line) + 1


def _where(root: Path | None, record: Record) -> str | None:
    """`suites/sales.yaml:27`: the first failing rule of `record` in its suite file."""
    failing = [a for a in record.get("assertions") or [] if a.get("pass") is False or a.get("error")]
    if root is None or not failing:
        return None
    line = rule_line(root / str(record["suite"]), str(record.get("base_id") or record["test_id"]), failing[0])
    return f"{record['suite']}:{line}" if line else None


def next_steps(root: Path | None, run_path: str, records: list[Record]) -> dict[str, str]:
    """Per attribution class, the next step the panel offers once it is saved."""
    failed = next((r for r in records if r["status"] in ATTRIBUTABLE), records[0] if records else None)
    where = _where(root, failed) if failed else None
    suite = str(failed["suite"] or "") if failed else ""
    steps = {c: words(f"view_next_{c}") for c in SHOWN_CLASSES if c not in ("model_fluctuation", "rule_misjudgment")}
    steps["model_fluctuation"] = words("view_next_model_fluctuation", command=RERUN.format(path=run_path))
    steps["rule_misjudgment"] = (words("view_next_rule_misjudgment", where=where) if where
                                 else words("view_next_rule_misjudgment_nowhere", suite=suite))
    return steps


def review_data(run: RunData, root: Path | None = None, run_path: str = "RUN.json") -> list[PanelVerdict]:
    """Per verdict, in the report's order (its `#v-N` anchors): what the review panel acts on."""
    out: list[PanelVerdict] = []
    find = verdict_finder(run)  # the records indexed once, not once per verdict
    for v in run["verdicts"]:
        records: list[PanelRecord] = []
        found = find(v)
        for r in found:
            judged: list[JudgedCheck] = [{"index": i, "type": a["type"], "value": str(a.get("value") or "")[:200], "pass": a.get("pass"),
                       "level": (a.get("details") or {}).get("level"),
                       "levels": list((a.get("details") or {}).get("levels") or {})}
                      for i, a in enumerate(r.get("assertions") or [])
                      if (a.get("details") or {}).get("verdicts") and not a.get("error") and a.get("pass") is not None]
            records.append({"test_id": r["test_id"], "repeat": r["repeat"], "status": r["status"],
                            "attributable": r["status"] in ATTRIBUTABLE, "attribution": r.get("attribution"),
                            "triage": r.get("triage"), "judged": judged})
        test = found[0].get("test", v["test_id"]) if found else v["test_id"]
        out.append({"suite": v["suite"], "test": test, "provider": v["provider"],
                    "draft": bool(v.get("draft")), "status": v.get("status"), "records": records,
                    "next": next_steps(root, run_path, found) if any(r["attributable"] for r in records) else {}})
    return out


def panel_data(run_id: str, run: RunData, reviewer: str, root: Path | None, run_path: str) -> PanelData:
    """The JSON the script reads: the run, the reviewer, the classes by name, the words, the verdicts."""
    names = {c: attribution_word(c) for c in SHOWN_CLASSES}
    return {"run": run_id, "reviewer": reviewer, "classes": class_names(), "names": names, "words": view_words(),
            "pass_words": [words("failed"), words("passed")], "verdicts": review_data(run, root, run_path)}


def panel_js() -> str:
    """The panel's script (`evalspec/data/view_panel.js`)."""
    from importlib import resources

    return resources.files("evalspec").joinpath("data/view_panel.js").read_text("utf-8")
