"""`evalspec run --baseline`: confirmation replays tell flaky from regressed; both gate modes' exit codes;
`evalspec diff` on real runs; a renamed test reads as removed + new."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests import ROOT
from tests.helpers import invoke

RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))

# `mode.txt` says which side we are on; `flaky` fails every other call (a counter file, so replays
# in a fresh provider pool keep counting); `regressed` fails deterministically on HEAD.
BOT = '''\
from pathlib import Path

HERE = Path(__file__).parent


def respond(messages, context):
    mode = (HERE / "mode.txt").read_text().strip()
    test = context["test_id"]
    if test == "crash" and mode == "head":
        raise RuntimeError("backend down")
    if test == "flaky" and mode == "head":
        counter = HERE / "flaky-calls.txt"
        n = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(n))
        return "bad" if n % 2 else "ok"
    good = {"base": {"fixed": False, "still": False},
            "head": {"regressed": False, "still": False}}[mode].get(test, True)
    return "ok" if good else "bad"
'''


def suite_text(ids: list[str], gate: str = "") -> str:
    tests = "".join(f"  - id: {i}\n    name: The {i} test\n    conversation:\n      - user: hi\n"
                    f"        assert: [{{equals: ok}}]\n" for i in ids)
    return f"providers:\n  - id: bot\n    python: bot.py:respond\n{gate}tests:\n{tests}"


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    return in_tmp


def side(project: Path, mode: str, ids: list[str], *args: str, gate: str = "") -> tuple[int, str, dict[str, Any]]:
    (project / "mode.txt").write_text(mode)
    (project / "s.yaml").write_text(suite_text(ids, gate), encoding="utf-8")
    out = f"{mode}.json"
    code, text = invoke("run", "s.yaml", "-o", out, *args)
    return code, text, json.loads((project / out).read_text(encoding="utf-8"))


FOUR = ["fixed", "regressed", "flaky", "still", "steady"]


def test_regressions_gate_blocks_a_deterministic_regression_and_not_a_flaky_one(project: Path) -> None:
    side(project, "base", FOUR, "--no-cache")
    code, out, head = side(project, "head", FOUR, "--baseline", "base.json", "--gate", "regressions",
                           "--md", "pr.md", "--junit", "junit.xml", "--html", "report.html")
    jsonschema.validate(head, RUN_SCHEMA)
    cats = {r["test_id"]: r["category"] for r in head["baseline"]["rows"]}
    assert cats == {"fixed": "fixed", "regressed": "regressed", "flaky": "flaky", "still": "still failing",
                    "steady": "unchanged"}
    rows = {r["test_id"]: r for r in head["baseline"]["rows"]}
    assert rows["regressed"]["replays"] == ["failed", "failed"]
    assert rows["flaky"]["replays"] == ["passed", "failed"]  # calls 2 and 3: the HEAD call was cached, replays were not
    assert code == 1, out
    assert head["gate"]["mode"] == "regressions"
    assert head["gate"]["reasons"] == ["s.yaml: regressed: regressed @ bot"]
    md = (project / "pr.md").read_text(encoding="utf-8")
    assert md.index("regressed**") < md.index("flaky**") < md.index("fixed**") < md.index("still failing**")
    assert md.index("Against the baseline") < md.index("| suite |")  # newly failing first in the PR comment
    assert 'name="baseline.regressed" value="1"' in (project / "junit.xml").read_text(encoding="utf-8")
    assert 'data-change="flaky"' in (project / "report.html").read_text(encoding="utf-8")
    assert "flaky" in out and "regressed" in out
    assert "confirming 2 regressions: 2 replays each, without caches" in out


def test_without_the_deterministic_regression_the_regressions_gate_passes(project: Path) -> None:
    ids = ["fixed", "flaky", "still"]
    side(project, "base", ids, "--no-cache")
    code, out, head = side(project, "head", ids, "--baseline", "base.json", "--gate", "regressions", "--confirm", "2")
    assert code == 0, out
    assert head["baseline"]["counts"]["flaky"] == 1 and head["baseline"]["counts"]["still failing"] == 1
    # the usual gate on the same run fails: a test still fails
    code, out, _ = side(project, "head", ids, "--baseline", "base.json", "--no-cache")
    assert code == 1, out


def test_errors_still_exit_3_under_the_regressions_gate(project: Path) -> None:
    side(project, "base", ["steady", "crash"], "--no-cache")
    code, out, head = side(project, "head", ["steady", "crash"], "--baseline", "base.json",
                           gate="gate: {mode: regressions}\n")
    assert code == 3, out
    assert {r["test_id"]: r["category"] for r in head["baseline"]["rows"]}["crash"] == "new error"


def test_a_suite_may_ask_for_the_regressions_gate_itself(project: Path) -> None:
    side(project, "base", ["still"], "--no-cache")
    code, out, head = side(project, "head", ["still"], "--baseline", "base.json", gate="gate: {mode: regressions}\n")
    assert code == 0, out
    assert head["suites"][0]["gate_mode"] == "regressions"


def test_without_a_baseline_the_usual_gate_runs_and_says_so(project: Path) -> None:
    code, out, head = side(project, "head", ["still"], "--gate", "regressions", "--md", "pr.md")
    assert code == 1, out
    assert head["baseline"] == {"available": False, "note": "no --baseline given"}
    jsonschema.validate(head, RUN_SCHEMA)
    assert "no baseline" in (project / "pr.md").read_text(encoding="utf-8")
    assert "no baseline" in out


def test_no_confirmation_replays_with_confirm_0(project: Path) -> None:
    side(project, "base", ["flaky"], "--no-cache")
    code, _, head = side(project, "head", ["flaky"], "--baseline", "base.json", "--gate", "regressions",
                         "--confirm", "0")
    assert code == 1 and head["baseline"]["rows"][0]["category"] == "regressed"


def test_diff_command_on_two_runs_exits_1_on_a_regression(project: Path) -> None:
    side(project, "base", FOUR, "--no-cache")
    side(project, "head", FOUR, "--no-cache")
    code, out = invoke("diff", "base.json", "head.json", "--md", "d.md", "--html", "d.html", "-o", "d.json")
    assert code == 1, out
    diff = json.loads((project / "d.json").read_text(encoding="utf-8"))
    assert diff["counts"]["regressed"] == 2 and diff["counts"]["fixed"] == 1  # no replays in `diff`: flaky is regressed
    assert "<section id=\"baseline\">" in (project / "d.html").read_text(encoding="utf-8")
    code, out = invoke("diff", "base.json", "base.json")
    assert code == 0, out


def test_a_renamed_test_reads_as_removed_plus_new(project: Path) -> None:
    side(project, "base", ["steady", "greeting"], "--no-cache")
    side(project, "head", ["steady", "hello"], "--no-cache")
    code, out = invoke("diff", "base.json", "head.json", "-o", "d.json")
    diff = json.loads((project / "d.json").read_text(encoding="utf-8"))
    assert {r["test_id"]: r["category"] for r in diff["rows"]} == {"steady": "unchanged", "hello": "new",
                                                                   "greeting": "removed"}
    assert code == 0, out


def test_a_baseline_that_is_not_a_run_json_is_exit_2(project: Path) -> None:
    (project / "bad.json").write_text("{}")
    (project / "mode.txt").write_text("base")
    (project / "s.yaml").write_text(suite_text(["steady"]), encoding="utf-8")
    code, out = invoke("run", "s.yaml", "--baseline", "bad.json")
    assert code == 2 and "bad.json" in out and "results" in out


def test_a_critical_rule_that_newly_failed_blocks_even_in_a_test_that_already_failed(project: Path) -> None:
    side(project, "base", ["still"], "--no-cache")
    critical = suite_text(["still"]).replace("[{equals: ok}]", "[{equals: ok}, {not-contains: bad, severity: critical}]")
    (project / "s.yaml").write_text(critical, encoding="utf-8")
    (project / "mode.txt").write_text("head")
    code, out = invoke("run", "s.yaml", "-o", "head.json", "--baseline", "base.json", "--gate", "regressions")
    head = json.loads((project / "head.json").read_text(encoding="utf-8"))
    assert code == 1, out
    assert head["gate"]["reasons"] == ["s.yaml: critical assertion newly failed: still @ bot"]


def test_only_suites_that_ask_for_it_are_gated_on_regressions(project: Path) -> None:
    (project / "mode.txt").write_text("base")
    (project / "s.yaml").write_text(suite_text(["still"], "gate: {mode: regressions}\n"), encoding="utf-8")
    (project / "t.yaml").write_text(suite_text(["fixed"]), encoding="utf-8")
    invoke("run", "s.yaml", "t.yaml", "-o", "base.json", "--no-cache")
    (project / "mode.txt").write_text("head")
    (project / "t.yaml").write_text(suite_text(["still"]), encoding="utf-8")  # t.yaml: a new failing test
    code, out = invoke("run", "s.yaml", "t.yaml", "-o", "head.json", "--baseline", "base.json")
    head = json.loads((project / "head.json").read_text(encoding="utf-8"))
    modes = {s["suite"]: (s.get("mode", "pass_rate"), s["ok"]) for s in head["gate"]["suites"]}
    assert modes == {"s.yaml": ("regressions", True), "t.yaml": ("pass_rate", False)}
    assert code == 1, out


def _broken(data: dict[str, Any], how: str) -> dict[str, Any]:
    if how == "record without suite":
        del data["results"][0]["suite"]
    elif how == "record not a mapping":
        data["results"][0] = 1
    else:  # a status no run writes
        data["results"][0]["status"] = "great"
    return data


@pytest.mark.parametrize(("how", "problem"), [
    ("record without suite", "results[0]: 'suite' is a required property"),
    ("record not a mapping", "results[0]: 1 is not of type 'object'"),
    ("unknown status", "results[0].status: 'great' is not one of"),
])
def test_a_malformed_baseline_is_refused_before_the_first_call(project: Path, how: str, problem: str) -> None:
    _, _, base = side(project, "base", ["steady"])
    (project / "bad.json").write_text(json.dumps(_broken(base, how)), encoding="utf-8")
    (project / "bot.py").write_text("def respond(messages, context):\n    open('called', 'a').write('x')\n"
                                    "    return 'ok'\n", encoding="utf-8")
    code, out = invoke("run", "s.yaml", "--no-cache", "--baseline", "bad.json", "--gate", "regressions")
    assert code == 2, out
    assert "bad.json: does not validate against schema/run.schema.json" in out and problem in out, out
    assert not (project / "called").exists(), "no call is made with a baseline that cannot be compared"
    code, out = invoke("diff", "bad.json", "base.json")
    assert code == 2 and problem in out, out


def test_the_packaged_run_schema_is_the_published_one() -> None:
    from evalspec.results.runjson import RUN_SCHEMA_FILE

    assert json.loads(RUN_SCHEMA_FILE.read_text(encoding="utf-8")) == RUN_SCHEMA


def test_a_head_failing_after_a_base_error_writes_a_run_json_that_is_a_valid_baseline(project: Path) -> None:
    # base: the bot is down (error); head: it answers wrongly -> 'failing, no baseline verdict' (SPEC §17).
    # That run.json must still validate, so it can be diffed and be the next run's baseline.
    (project / "bot.py").write_text(
        "from pathlib import Path\n\n\ndef respond(messages, context):\n"
        "    if (Path(__file__).parent / 'mode.txt').read_text().strip() == 'base':\n"
        "        raise RuntimeError('backend down')\n"
        "    return 'bad'\n", encoding="utf-8")
    side(project, "base", ["t"], "--no-cache")
    code, out, head = side(project, "head", ["t"], "--baseline", "base.json", "--gate", "regressions", "--no-cache")
    assert code == 1, out
    assert head["baseline"]["rows"][0]["category"] == "failing, no baseline verdict"
    jsonschema.validate(head, RUN_SCHEMA)
    code, out = invoke("diff", "base.json", "head.json")
    assert code == 1, out
    code, out = invoke("run", "s.yaml", "-o", "next.json", "--baseline", "head.json", "--no-cache")
    assert code != 2, out
