"""`evalspec coverage` and the coverage checks of `validate` (SPEC §25)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests import ROOT
from tests.helpers import invoke

BOT = ROOT / "providers" / "demo_bot.py"
RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))

SUITE = f"""\
coverage:
  signal: [no_signal, purchase_signal, accepted, refused]
  persona: [新客, 老客]
providers:
  - id: bot
    python: {BOT}:respond
tests:
  - id: finance
    covers: {{persona: 新客}}
    conversation:
      - {{user: 这台瑶光是哪年的车？, label: no_signal, assert: [{{contains: "2024"}}]}}
      - {{user: 能分期吗？, label: purchase_signal, assert: [{{contains: "2099"}}]}}
  - id: refusal
    tags: [refused]
    draft: true
    conversation:
      - {{user: 不用了}}
  - id: by-persona
    matrix: {{persona: [新客, 老客]}}
    conversation:
      - {{user: "好的，那我周六上午过去看看", label: accepted}}
"""


def write(tmp: Path, text: str = SUITE) -> Path:
    path = tmp / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_validate_warns_on_a_value_no_test_covers(in_tmp: Path) -> None:
    path = write(in_tmp, SUITE.replace("accepted, refused]", "accepted, refused, false_premise]"))
    code, out = invoke("validate", str(path))
    assert code == 0, out
    assert "warning" in out and "false_premise" in out and "s.yaml:2" in out, out
    assert "'refused'" not in out  # covered by a tag (a draft still covers)


def test_validate_errors_on_an_undeclared_dimension_or_value_with_a_suggestion(in_tmp: Path) -> None:
    path = write(in_tmp, SUITE.replace("covers: {persona: 新客}", "covers: {persna: 新客, signal: [acepted]}"))
    code, out = invoke("validate", str(path))
    assert code == 2
    assert "s.yaml:9" in out and "'persna'" in out and "did you mean 'persona'?" in out, out
    assert "'acepted'" in out and "did you mean 'accepted'?" in out, out


def test_min_exits_1_when_a_value_lacks_approved_tests_and_the_grid_shows_the_empty_cell(in_tmp: Path) -> None:
    path = write(in_tmp)
    code, out = invoke("coverage", str(path), "--min", "1", "--grid", "signal,persona", "-o", "c.json", "--md", "c.md")
    assert code == 1, out
    report = json.loads((in_tmp / "c.json").read_text(encoding="utf-8"))
    assert report["below_min"] == [{"dimension": "signal", "value": "refused", "approved": 0}]
    grid = report["grid"]
    cells = dict(zip(grid["row_values"], grid["cells"], strict=True))
    assert cells["no_signal"] == [{"tests": 1, "approved": 1}, None]  # no_signal × 老客: no test
    assert cells["accepted"] == [{"tests": 1, "approved": 1}, {"tests": 1, "approved": 1}]
    row = next(line for line in out.splitlines() if line.strip().startswith("no_signal") and "/" in line)
    assert row.split()[-1] == "—", out
    assert "| no_signal | 1 / 1 | — |" in (in_tmp / "c.md").read_text(encoding="utf-8")


def test_min_exits_0_when_every_value_is_covered(in_tmp: Path) -> None:
    path = write(in_tmp, SUITE.replace("draft: true", "draft: false"))
    code, out = invoke("coverage", str(path), "--min", "1")
    assert code == 0, out


def test_with_a_run_the_counts_per_value_are_its_verdicts(in_tmp: Path) -> None:
    path = write(in_tmp)
    code, out = invoke("run", str(path), "-o", "run.json", "--include-drafts")
    assert code == 1, out  # `finance` fails its second turn
    run = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    jsonschema.validate(run, RUN_SCHEMA)
    assert run["suites"][0]["coverage"]["persona"] == ["新客", "老客"]
    assert {r["base_id"]: r.get("covers") for r in run["results"]}["by-persona[persona=老客]"] == \
        {"signal": ["accepted"], "persona": ["老客"]}
    code, out = invoke("coverage", str(path), "--run", "run.json", "-o", "c.json")
    assert code == 0, out
    report = json.loads((in_tmp / "c.json").read_text(encoding="utf-8"))
    values = {(d["name"], v.pop("value")): v for d in report["dimensions"] for v in d["values"]}
    statuses = {v["test_id"]: v["category"] for v in run["verdicts"]}
    assert values[("signal", "no_signal")] == {"tests": 1, "approved": 1, "passed": 0, "failed": 1, "error": 0,
                                               "pass_rate": 0.0, "pass_rate_ci": [0.0, 0.793451], "mark": "thin"}
    assert statuses["refusal"] == "passed"  # a draft counted by --include-drafts
    assert values[("signal", "refused")] | {"pass_rate": None, "pass_rate_ci": None} == \
        {"tests": 1, "approved": 0, "passed": 1, "failed": 0, "error": 0, "pass_rate": None, "pass_rate_ci": None,
         "mark": "thin"}
    # the matrix test counts once per value its instances take, each instance a verdict
    assert values[("persona", "新客")]["tests"] == 2 and values[("persona", "新客")]["passed"] == 1
    assert values[("persona", "新客")]["failed"] == 1 and values[("persona", "老客")]["passed"] == 1
    assert report["state"] == {} and report["tools_never_called"] == []


def test_a_grid_of_an_unknown_dimension_is_a_usage_error(in_tmp: Path) -> None:
    code, out = invoke("coverage", str(write(in_tmp)), "--grid", "signal,persna")
    assert code == 2 and "did you mean 'persona'?" in out, out
    assert invoke("coverage", str(write(in_tmp)), "--grid", "signal")[0] == 2


def test_the_demo_suites_cover_the_six_states(in_tmp: Path) -> None:
    code, out = invoke("coverage", *(str(p) for p in sorted((ROOT / "suites").glob("*.yaml"))), "--min", "1", "-o", "c.json")
    assert code == 0, out
    report = json.loads((in_tmp / "c.json").read_text(encoding="utf-8"))
    signal = next(d for d in report["dimensions"] if d["name"] == "signal")
    assert [v["value"] for v in signal["values"]] == ["no_signal", "purchase_signal", "accepted", "refused",
                                                      "multi_intent", "false_premise"]
