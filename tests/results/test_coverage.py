"""The coverage matrix computed from planned instances and run.json data (SPEC §25)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec.config.loader import load_suite
from evalspec.config.model import TestSpec as Spec
from evalspec.plan.build import Plan
from evalspec.reporters.catalogue import speaking
from evalspec.reporters.coverage import html_section, markdown_lines
from evalspec.results import coverage as cov
from tests import ROOT

BOT = ROOT / "providers" / "demo_bot.py"
DIMS = {"signal": ["no_signal", "purchase_signal", "refused"], "persona": ["新客", "老客"]}


def test_a_value_is_covered_by_covers_a_label_a_tag_or_a_matrix_key() -> None:
    test = Spec(id="t", name="t", index=0, tags=["refused"], covers={"persona": ["新客"]})
    assert cov.covered_values(DIMS, test, ["no_signal", "other"], {}) == \
        {"signal": ["no_signal", "refused"], "persona": ["新客"]}
    plain = Spec(id="m", name="m", index=1)
    assert cov.covered_values(DIMS, plain, [], {"persona": "老客", "x": 1}) == {"persona": ["老客"]}
    assert cov.covered_values(DIMS, plain, [], {"persona": "外星人"}) == {}  # not a declared value


def suite_file(tmp: Path, body: str) -> Path:
    path = tmp / "s.yaml"
    path.write_text(f"coverage: {{signal: [no_signal, purchase_signal, refused], persona: [新客, 老客]}}\n"
                    f"providers:\n  - id: bot\n    python: {BOT}:respond\n" + body, encoding="utf-8")
    return path


def test_labels_from_label_patterns_count_for_recorded_conversations(tmp_path: Path) -> None:
    suite = load_suite(suite_file(tmp_path, """\
labels: {purchase_signal: 分期|首付}
tests:
  - id: recorded
    transcript:
      - {user: 你好}
      - {assistant: 您好}
      - {user: 能分期吗}
      - {assistant: 可以}
"""))
    units = cov.units(Plan([suite]))
    assert [(u.base_id, u.covers) for u in units] == [("recorded", {"signal": ["purchase_signal"]})]


def test_a_matrix_test_counts_once_per_value_and_the_grid_leaves_uncovered_cells_empty(tmp_path: Path) -> None:
    suite = load_suite(suite_file(tmp_path, """\
tests:
  - id: m
    matrix: {persona: [新客, 老客]}
    repeat: 3
    conversation: [{user: 你好, label: no_signal}]
  - id: d
    draft: true
    covers: {signal: refused, persona: 新客}
    conversation: [{user: 不用了}]
"""))
    units = cov.units(Plan([suite]))
    assert len(units) == 3  # repeats folded: one unit per instance
    result = cov.matrix(units, suite.coverage, grid=("signal", "persona"))
    values = {(d["name"], v["value"]): (v["tests"], v["approved"]) for d in result["dimensions"] for v in d["values"]}
    assert values == {("signal", "no_signal"): (1, 1), ("signal", "purchase_signal"): (0, 0),
                      ("signal", "refused"): (1, 0), ("persona", "新客"): (2, 1), ("persona", "老客"): (1, 1)}
    assert result["grid"]["cells"] == [[{"tests": 1, "approved": 1}, {"tests": 1, "approved": 1}],
                                       [None, None], [{"tests": 1, "approved": 0}, None]]
    assert cov.below(result, 1) == [{"dimension": "signal", "value": "purchase_signal", "approved": 0},
                                    {"dimension": "signal", "value": "refused", "approved": 0}]
    warnings = cov.coverage_warnings([suite], Plan([suite]))
    assert [(w.line, "purchase_signal" in w.message) for w in warnings] == [(1, True)]


def run_data() -> dict[str, Any]:
    def record(base: str, covers: dict[str, list[str]] | None, state: dict[str, Any] | None = None) -> dict[str, Any]:
        r: dict[str, Any] = {"suite": "s.yaml", "base_id": base, "test": base.split("[")[0], "draft": False,
                             "transcript": [{"role": "user", "content": "hi"},
                                            {"role": "assistant", "content": "ok", **({"state": state} if state else {}),
                                             "tool_calls": [{"function": {"name": "lookup"}}]}]}
        if covers:
            r["covers"] = covers
        return r

    return {
        "suites": [{"path": "s.yaml", "coverage": {"signal": ["no_signal", "refused"], "persona": ["新客", "老客"]}},
                   {"path": "plain.yaml"}],
        "results": [record("a", {"signal": ["no_signal"], "persona": ["新客"]},
                           {"intent": "ask_price", "actions": ["utter_price", "action_listen"], "active_flow": None}),
                    record("b", {"signal": ["no_signal"], "persona": ["新客"]}, {"intent": "ask_price",
                                                                                "flows_started": ["buy"]}),
                    record("c", None)],
        "verdicts": [{"suite": "s.yaml", "test_id": "a", "category": "passed"},
                     {"suite": "s.yaml", "test_id": "b", "category": "failed"},
                     {"suite": "s.yaml", "test_id": "c", "category": "error"}],
    }


def test_the_run_matrix_has_the_pass_rate_per_cell() -> None:
    [m] = cov.run_matrices(run_data())  # plain.yaml declares no coverage: no matrix
    assert m["suite"] == "s.yaml"
    no_signal = m["dimensions"][0]["values"][0]
    assert no_signal == {"value": "no_signal", "tests": 2, "approved": 2, "passed": 1, "failed": 1, "error": 0,
                         "pass_rate": 0.5, "pass_rate_ci": [0.094531, 0.905469], "mark": "thin"}
    assert m["grid"]["cells"][0][0]["pass_rate"] == 0.5 and m["grid"]["cells"][1] == [None, None]
    with speaking("en"):
        md = "\n".join(markdown_lines(run_data()))
        html = str(html_section(run_data()))
    assert "| no_signal | 50% (1/2) · thin | — |" in md and "| refused | 0 | 0 | 0 | 0 | 0 | — | untested |" in md
    assert "id='coverage'" in html and "50% (1/2)" in html
    assert markdown_lines({"suites": [{"path": "plain.yaml"}], "results": [], "verdicts": []}) == []
    assert str(html_section({"suites": [{"path": "plain.yaml"}], "results": [], "verdicts": []})) == ""


def test_state_values_seen_and_tools_called_read_the_assistant_messages() -> None:
    records = run_data()["results"]
    assert cov.state_seen(records) == {"intent": ["ask_price"], "flows_started": ["buy"],
                                       "actions": ["utter_price", "action_listen"]}
    assert cov.state_seen([{"transcript": [{"role": "assistant", "content": "x"}]}]) == {}  # no state: nothing
    assert cov.tools_called(records) == {"lookup"}
