"""JUnit XML: one testcase per test × provider × repeat; failures name the turn and the rule."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalspec.reporters import state, tools
from evalspec.reporters.catalogue import choose_lang, speaking, words
from evalspec.reporters.vocabulary import (
    count_items,
    ensure_current,
    finding_text,
    gate_line,
    one_line,
    pass_rate_text,
    shown_facts,
)
from evalspec.results.findings import findings
from evalspec.results.rundata import Gate, GateSuite, Record, RunData, Sla
from evalspec.results.stream import keys_of
from evalspec.results.verdict import reaches_gate

ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean(text: Any) -> str:
    return ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}", str(text))


def failure_text(record: Record) -> str:
    """Each failing assertion: where, the rule, severity, reason or expected/found, the reply excerpt."""
    lines = []
    for f in findings(record):
        lines.append(finding_text(f))
        lines += [f"    {words('why')} {one_line(f.description)}"] if f.description else []
        lines += ["    " + words("expected_found", key=x.key, expected=x.expected, found=x.found or words("nothing"))
                  for x in shown_facts(f)]
        lines += [f"    {words('reply_turn', turn=x.turn)} {one_line(x.before)}[{one_line(x.match)}]{one_line(x.after)}"
                  if x.match else f"    {words('reply_turn', turn=x.turn)} {one_line(x.text)}" for x in f.excerpts]
    lines += [f"    {line}" for line in tools.failing_calls_text(record)]
    lines += [f"    {line}" for line in state.failing_state_text(record)]
    lines += [t for t in [tools.teardown_text(record)] if t]
    return "\n".join(lines)


def transcript_text(record: Record) -> str:
    """Each message as `[role turn] content`; a click turn says so, and a turn with state or buttons has
    its state line under it (docs/en/state.md)."""
    transcript = record["transcript"]
    shown = state.turn_states(transcript)
    lines = []
    for i, m in enumerate(transcript):
        click = state.clicked_text(m)
        lines.append(f"[{m['role']} {m.get('turn')}] {m['content']}" + (f" ({click})" if click else ""))
        if i in shown:
            lines.append(f"    {state.turn_text(shown[i])}")
    return "\n".join(lines)


def _skip_reason(r: Mapping[str, Any], gated_drafts: bool) -> str | None:
    """Measured points, xfailed tests and drafts are `<skipped>`, with the reason (docs/en/reports-and-gate.md#outputs)."""
    status = r["status"]
    if status == "error":
        return None
    if r.get("critical_failed") and reaches_gate(r, gated_drafts):
        return None  # a red line broken on a curve point or in an xfail test fails the gate: a failure
    if r.get("curve"):
        score = f"{r['score']:.2f}" if r.get("score") is not None else "—"
        return words("junit_measured", status=words(status), score=score)
    if not reaches_gate(r, gated_drafts):
        return words("junit_draft", status=words(status))
    if status == "xfailed":
        return words("junit_xfailed", reason=r.get("xfail"))
    if status == "skipped":
        return words("skipped")
    return None


def _properties(el: ET.Element, counts: Mapping[str, object], pass_rate: float | None, run: RunData,
                counted: GateSuite | Gate | None = None) -> None:
    """The suite's verdict counts, in the words every report uses (and the baseline diff, if any)."""
    props = ET.SubElement(el, "properties")
    for label, n in count_items(counts):
        ET.SubElement(props, "property", name=f"evalspec.{label.replace(' ', '_')}", value=str(n))
    ET.SubElement(props, "property", name="evalspec.pass_rate", value=pass_rate_text(pass_rate, counted))
    if counted and (ci := counted.get("pass_rate_ci")):  # its 95 % interval (docs/en/statistics.md)
        ET.SubElement(props, "property", name="evalspec.pass_rate_ci", value=f"{ci[0]:.4f}–{ci[1]:.4f}")
    ET.SubElement(props, "property", name="evalspec.gate", value=gate_line(run["gate"]))
    if run.get("baseline"):
        from evalspec.reporters.diff import junit_properties

        for name, value in junit_properties(run["baseline"]).items():
            ET.SubElement(props, "property", name=name, value=clean(value))
    from evalspec.reporters.judging import junit_properties as judging_properties

    for name, value in judging_properties(run).items():
        ET.SubElement(props, "property", name=name, value=clean(value))


def _sla_case(el: ET.Element, sla: Sla) -> str:
    case = ET.SubElement(el, "testcase", classname=clean(f"{Path(sla['suite']).stem}.{sla['provider']}"),
                         name=clean(sla["id"]), time="0.000")
    if sla["status"] == "missed":
        ET.SubElement(case, "failure", message=clean(words("sla_missed_msg", text=sla["text"]))).text = clean(sla["text"])
        return "failures"
    if sla["status"] == "no data":  # gates like an error (docs/en/rule-self-tests.md#verdicts-that-hold)
        ET.SubElement(case, "error", message=clean(words("sla_no_data_msg", text=sla["text"]))).text = clean(sla["text"])
        return "errors"
    ET.SubElement(case, "system-out").text = clean(words("sla_met_msg", text=sla["text"]))
    return ""


def build_junit(run: RunData, lang: str | None = None) -> ET.Element:
    """The JUnit tree; its messages in `lang` (None: the run's own language, docs/en/reports-and-gate.md#language)."""
    run = ensure_current(run)
    with speaking(choose_lang(run, lang)):
        return _build(run)


def _build(run: RunData) -> ET.Element:
    gated_drafts = bool(run["gate"].get("include_drafts"))
    root = ET.Element("testsuites", name="evalspec", time=f"{run.get('duration_s', 0):.3f}")
    by_suite: dict[str, list[Record]] = defaultdict(list)
    for r in run["results"]:
        by_suite[r["suite"]].append(r)
    totals = dict.fromkeys(KINDS, 0)
    for suite, records in by_suite.items():
        el = _suite_element(root, suite, run)
        counts = dict.fromkeys(KINDS, 0)
        for r in records:
            case, kind = _case(r, gated_drafts)
            el.append(case)
            _count(counts, kind)
        _close_suite(el, suite, run, counts, totals)
    for k, v in totals.items():
        root.set(k, str(v))
    return root


KINDS = ("tests", "failures", "errors", "skipped")  # a testsuite's counts, in the order JUnit readers expect


def _suite_element(root: ET.Element, suite: str, run: RunData) -> ET.Element:
    el = ET.SubElement(root, "testsuite", name=clean(suite))
    g = next((g for g in run["gate"]["suites"] if g["suite"] == suite), None)
    if g is not None:
        _properties(el, g["counts"], g["pass_rate"], run, g)
    return el


def _close_suite(el: ET.Element, suite: str, run: RunData, counts: dict[str, int], totals: dict[str, int]) -> None:
    """The suite's SLA cases, then its counts (and the run's totals) set."""
    for sla in [x for x in run["slas"] if x["suite"] == suite]:
        counts["tests"] += 1
        kind = _sla_case(el, sla)
        if kind:
            counts[kind] += 1
    for k, v in counts.items():
        el.set(k, str(v))
        totals[k] += v


def _count(counts: dict[str, int], kind: str) -> None:
    counts["tests"] += 1
    if kind:
        counts[kind] += 1


def _kind(r: Mapping[str, Any], gated_drafts: bool) -> str:
    """How a record's testcase counts: "errors", "skipped", "failures" or "" (passed). It reads only what a
    record's light form keeps, so a streamed run is counted without reading its transcripts."""
    if r["status"] == "error":
        return "errors"
    if _skip_reason(r, gated_drafts) is not None:
        return "skipped"
    return "failures" if r["status"] == "failed" else ""


def _case(r: Record, gated_drafts: bool) -> tuple[ET.Element, str]:
    """One record's testcase, and how it counts (`_kind`)."""
    suite = r["suite"]
    case = ET.Element("testcase", classname=clean(f"{Path(suite).stem}.{r['provider']}"),
                      name=clean(r["test_id"]), time=f"{r.get('duration_ms', 0) / 1000:.3f}")
    message = failure_text(r)
    kind = _kind(r, gated_drafts)
    if kind == "errors":
        first = message.splitlines()[0] if message else str(r.get("error") or words("error"))
        ET.SubElement(case, "error", message=clean(first[:500])).text = clean(message or r.get("error"))
    elif kind == "skipped":
        first = message.splitlines()[0] if message else ""
        ET.SubElement(case, "skipped", message=clean(str(_skip_reason(r, gated_drafts)) + (f" — {first}" if first else "")))
    elif kind == "failures":
        ET.SubElement(case, "failure", message=clean(message.splitlines()[0] if message else words("failed"))).text = clean(message)
    ET.SubElement(case, "system-out").text = clean(transcript_text(r))
    return case, kind


def write_junit(run: RunData, path: Path, lang: str | None = None) -> None:
    """`build_junit` written to `path` (indented), one testcase at a time: each record is read, written
    and let go, so a large run's XML never sits whole in memory (docs/en/scale-and-ray.md#memory). The
    tree without its testcases is laid out first, each suite's cases standing in as one placeholder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run = ensure_current(run)
    with speaking(choose_lang(run, lang)):
        gated_drafts = bool(run["gate"].get("include_drafts"))
        counted: dict[str, dict[str, int]] = {}  # by suite, in the order its first record comes
        for r in keys_of(run["results"]):
            _count(counted.setdefault(r["suite"], dict.fromkeys(KINDS, 0)), _kind(r, gated_drafts))
        root = ET.Element("testsuites", name="evalspec", time=f"{run.get('duration_s', 0):.3f}")
        totals = dict.fromkeys(KINDS, 0)
        for n, (suite, counts) in enumerate(counted.items()):
            el = _suite_element(root, suite, run)
            ET.SubElement(el, f"evalspec-cases-{n}")
            _close_suite(el, suite, run, counts, totals)
        for k, v in totals.items():
            root.set(k, str(v))
        ET.indent(root)
        skeleton = ET.tostring(root, encoding="unicode")
        with path.open("w", encoding="utf-8") as fh:
            fh.write("<?xml version='1.0' encoding='utf-8'?>\n")
            for n, suite in enumerate(counted):
                before, skeleton = skeleton.split(f"<evalspec-cases-{n} />", 1)
                fh.write(before)
                for i, r in enumerate(r for r in run["results"] if r["suite"] == suite):
                    case, _ = _case(r, gated_drafts)
                    ET.indent(case, level=2)
                    fh.write(("\n    " if i else "") + ET.tostring(case, encoding="unicode"))
            fh.write(skeleton)
