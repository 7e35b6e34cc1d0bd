"""JUnit XML: one testcase per test × provider × repeat; failures name the turn and the rule."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean(text: Any) -> str:
    return ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}", str(text))


def failure_text(record: dict[str, Any]) -> str:
    lines = []
    for a in record["assertions"]:
        if a["pass"] is False or a.get("error"):
            turns = sorted({e["turn"] for e in a.get("evidence", []) if e.get("turn") is not None})
            where = f"turn {', '.join(map(str, turns))}: " if turns else ""
            lines.append(f"{where}{a['type']}: {a.get('error') or a['reason']}")
            lines.extend(f"    turn {e.get('turn')}: {e['text']}" for e in a.get("evidence", [])[:5] if e.get("text"))
    return "\n".join(lines)


def transcript_text(record: dict[str, Any]) -> str:
    return "\n".join(f"[{m['role']} {m.get('turn')}] {m['content']}" for m in record["transcript"])


def _baseline_properties(suite_el: ET.Element, run: dict[str, Any]) -> None:
    if not run.get("baseline"):
        return
    from evalspec.diff.render import junit_properties

    props = ET.SubElement(suite_el, "properties")
    for name, value in junit_properties(run["baseline"]).items():
        ET.SubElement(props, "property", name=name, value=clean(value))


def build_junit(run: dict[str, Any]) -> ET.Element:
    root = ET.Element("testsuites", name="evalspec", time=f"{run.get('duration_s', 0):.3f}")
    by_suite: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in run["results"]:
        by_suite[r["suite"]].append(r)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite, records in by_suite.items():
        el = ET.SubElement(root, "testsuite", name=clean(suite))
        _baseline_properties(el, run)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for r in records:
            counts["tests"] += 1
            case = ET.SubElement(el, "testcase", classname=clean(f"{Path(suite).stem}.{r['provider']}"),
                                 name=clean(r["test_id"]), time=f"{r.get('duration_ms', 0) / 1000:.3f}")
            status = r["status"]
            message = failure_text(r)
            if status == "error":
                counts["errors"] += 1
                ET.SubElement(case, "error", message=clean((r.get("error") or message)[:500])).text = clean(message or r.get("error"))
            elif status == "failed" and (r.get("draft") or r.get("curve")):
                counts["skipped"] += 1
                why = "draft" if r.get("draft") else "curve point (measurement, not gated)"
                ET.SubElement(case, "skipped", message=clean(f"{why}: {message.splitlines()[0] if message else ''}"))
            elif status == "failed":
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=clean(message.splitlines()[0] if message else "failed")).text = clean(message)
            elif status in ("xfailed", "skipped"):
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=clean(f"xfail: {r.get('xfail')}" if status == "xfailed" else "skipped"))
            ET.SubElement(case, "system-out").text = clean(transcript_text(r))
        for k, v in counts.items():
            el.set(k, str(v))
            totals[k] += v
    for k, v in totals.items():
        root.set(k, str(v))
    return root


def write_junit(run: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = ET.ElementTree(build_junit(run))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
