"""`dataset:` (docs/en/suite-format.md#dataset): one instance per row of a JSONL or CSV file, read as the
run reaches it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalspec.config import load_suite
from evalspec.plan.build import Selection, build_plan
from tests.helpers import invoke
from tests.plan.helpers import BOT, SUITE, jsonl, project


def test_each_jsonl_row_is_an_instance_whose_vars_are_its_fields(tmp_path: Path) -> None:
    suite = project(tmp_path, "faq.jsonl", jsonl({"question": "能分期吗？", "follow_up": "首付多少？"},
                                                 {"question": "续航多少？", "follow_up": "冬天呢？"}))
    plan = build_plan([load_suite(suite)])
    assert [i.test_id for i in plan] == ["faq[row=1]", "faq[row=2]"]
    assert [[t.text for t in i.turns] for i in plan] == [["能分期吗？", "首付多少？"], ["续航多少？", "冬天呢？"]]
    assert plan[1].vars["follow_up"] == "冬天呢？" and plan[1].asserts[0].value == "收到：冬天呢？"


def test_a_check_with_nothing_templated_is_one_spec_for_every_row_and_a_templated_one_is_rendered_per_row(
        tmp_path: Path) -> None:
    suite = project(tmp_path, "faq.jsonl", jsonl({"question": "能分期吗？", "follow_up": "首付多少？"},
                                                 {"question": "续航多少？", "follow_up": "冬天呢？"}))
    suite.write_text(suite.read_text(encoding="utf-8") + "      - not-regex: '1[3-9]\\d{9}'\n", encoding="utf-8")
    first, second = build_plan([load_suite(suite)])
    assert [a.value for a in first.asserts] == ["收到：首付多少？", "1[3-9]\\d{9}"]
    assert [a.value for a in second.asserts] == ["收到：冬天呢？", "1[3-9]\\d{9}"]
    assert first.asserts[1] is second.asserts[1]  # its parameters are made once, not once per row
    assert first.asserts[0] is not second.asserts[0]


def test_a_csv_row_is_an_instance_under_its_header_and_an_id_field_names_it(tmp_path: Path) -> None:
    suite = project(tmp_path, "faq.csv", 'id,question,follow_up\nq1,"两行\n的问题",好的\n\nq2,在吗,谢谢\n')
    plan = build_plan([load_suite(suite)], Selection(repeat=2))
    assert [i.test_id for i in plan] == ["faq[q1]#1", "faq[q1]#2", "faq[q2]#1", "faq[q2]#2"]
    assert plan[0].turns[0].text == "两行\n的问题" and plan[3].vars["id"] == "q2"


def test_a_dataset_run_plays_every_row_and_filter_picks_one_instance(in_tmp: Path) -> None:
    project(in_tmp, "faq.jsonl", jsonl(*({"id": f"问{i}", "question": f"问题{i}", "follow_up": f"追问{i}"}
                                         for i in range(1, 4))))
    code, out = invoke("run", "s.yaml", "-q", "-o", "all.json")
    assert code == 0, out
    data = json.loads((in_tmp / "all.json").read_text(encoding="utf-8"))
    assert [r["test_id"] for r in data["results"]] == ["faq[问1]", "faq[问2]", "faq[问3]"]
    (in_tmp / "calls.log").unlink()
    code, out = invoke("run", "s.yaml", "-q", "--filter", r"faq\[问2\]", "-o", "one.json")
    assert code == 0, out
    assert (in_tmp / "calls.log").read_text(encoding="utf-8").split() == ["faq[问2]", "faq[问2]"]


def test_resume_after_an_interrupted_dataset_run_plays_only_the_rows_left(in_tmp: Path) -> None:
    project(in_tmp, "faq.jsonl", jsonl(*({"question": f"问题{i}", "follow_up": f"追问{i}"} for i in range(1, 6))))
    (in_tmp / "r").mkdir()
    (in_tmp / "r" / "journal.jsonl").write_text("")
    code, out = invoke("run", "s.yaml", "-q", "-j", "1", "--resume", "r")  # a run in a folder of its own
    assert code == 0, out
    journal = in_tmp / "r" / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    journal.write_text("".join(lines[:2]), encoding="utf-8")  # as if the run had stopped after two rows
    (in_tmp / "calls.log").unlink()
    code, out = invoke("run", "s.yaml", "-q", "-j", "1", "--resume", "r")
    assert code == 0, out
    assert set((in_tmp / "calls.log").read_text(encoding="utf-8").split()) == {"faq[row=3]", "faq[row=4]", "faq[row=5]"}
    data = json.loads((in_tmp / "r" / "run.json").read_text(encoding="utf-8"))
    assert [r["test_id"] for r in data["results"]] == [f"faq[row={i}]" for i in range(1, 6)]


LAZY = """\
import resource, sys
from evalspec.config import load_suite
from evalspec.plan.build import Plan
suite = load_suite(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
plan = Plan([suite])
assert len(plan) == 200_000 and plan.problems() == []
instances = iter(plan)
first = next(instances)
assert type(instances).__name__ == "generator" and first.test_id == "faq[row=1]", first.test_id
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def test_rows_are_read_as_the_run_reaches_them(tmp_path: Path) -> None:
    """200,000 rows validate and the first instance starts without the rows ever being held together
    (held, they take over 100 MiB)."""
    with (tmp_path / "big.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(200_000):
            fh.write(f'{{"question": "问题{i} 请问这台车的续航是多少公里", "follow_up": "追问{i}"}}\n')
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SUITE.format(dataset="big.jsonl", extra=""), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", LAZY, str(tmp_path / "s.yaml")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    grown = float(done.stdout.split()[-1])
    assert grown < 40, f"peak RSS grew by {grown:.0f} MiB: the rows were held"


@pytest.mark.parametrize("content, named", [
    (None, "s.yaml:7: tests[0].dataset: dataset file faq.jsonl does not exist"),
    ('{"question": "a", "follow_up": "b"}\n{"question": "a",\n', "faq.jsonl:2: not a JSON line"),
    ('{"questoin": "a", "follow_up": "b"}\n', "'question' is undefined (did you mean 'questoin'?)"),
    ('{"question": "a", "follow_up": "b"}\n\n{"question": "c"}\n', "faq.jsonl:3: this row has no field 'follow_up'"),
    ('{"id": 7, "question": "a", "follow_up": "b"}\n{"id": "7", "question": "c", "follow_up": "d"}\n',
     "faq.jsonl:2: instance id 'faq[7]' is also that of the row at line 1"),
    ('["a", "b"]\n', "faq.jsonl:1: a dataset row is a JSON object"),
])
def test_validate_names_the_dataset_problem_and_its_line(in_tmp: Path, content: str | None, named: str) -> None:
    project(in_tmp, "faq.jsonl", content or "")
    if content is None:
        (in_tmp / "faq.jsonl").unlink()
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and named in out and "Traceback" not in out, out


def test_a_csv_row_with_more_cells_than_its_header_is_named(in_tmp: Path) -> None:
    project(in_tmp, "faq.csv", "question,follow_up\na,b\nc,d,e\n")
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and "faq.csv:3: this row has 3 cells and the header 2" in out, out


@pytest.mark.parametrize("name, content", [("faq.jsonl", ""), ("faq.jsonl", "\n\n"), ("faq.csv", "question,follow_up\n")])
def test_a_dataset_with_no_rows_is_refused_not_a_test_that_vanishes(in_tmp: Path, name: str, content: str) -> None:
    # beside a passing test, a dataset test with no rows would check nothing and the run would exit 0
    suite = project(in_tmp, name, content)
    suite.write_text(suite.read_text(encoding="utf-8") + "  - id: other\n    conversation: [{user: 你好}]\n"
                     "    assert: [{contains: 收到}]\n", encoding="utf-8")
    for command in ("validate", "run"):
        code, out = invoke(command, "s.yaml")
        assert code == 2 and f"dataset file {name} has no rows" in out and "Traceback" not in out, out


def test_a_dataset_test_takes_no_matrix(in_tmp: Path) -> None:
    project(in_tmp, "faq.jsonl", jsonl({"question": "a", "follow_up": "b"}), extra="matrix: {lang: [zh, en]}")
    code, out = invoke("validate", "s.yaml")
    assert code == 2 and "a dataset test has one instance per row: it takes no 'matrix'" in out, out


def test_dataset_instances_play_in_forked_processes(in_tmp: Path) -> None:
    project(in_tmp, "faq.jsonl", jsonl(*({"question": f"问题{i}", "follow_up": f"追问{i}"} for i in range(1, 9))))
    code, out = invoke("run", "s.yaml", "-q", "--processes", "2", "-o", "run.json")
    assert code == 0, out
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    assert [r["test_id"] for r in data["results"]] == [f"faq[row={i}]" for i in range(1, 9)]


def test_resume_refuses_a_dataset_edited_since_the_interrupted_run(in_tmp: Path) -> None:
    # `faq[row=2]` played before the edit and after it are two rows: one verdict would stand for both
    project(in_tmp, "faq.jsonl", jsonl(*({"question": f"问题{i}", "follow_up": f"追问{i}"} for i in range(1, 4))))
    (in_tmp / "r").mkdir()
    (in_tmp / "r" / "journal.jsonl").write_text("")
    code, out = invoke("run", "s.yaml", "-q", "-j", "1", "--resume", "r")
    assert code == 0, out
    journal = in_tmp / "r" / "journal.jsonl"
    journal.write_text(journal.read_text(encoding="utf-8").splitlines(keepends=True)[0], encoding="utf-8")
    (in_tmp / "faq.jsonl").write_text(jsonl({"question": "新的问题", "follow_up": "新的追问"},
                                            {"question": "问题2", "follow_up": "追问2"}), encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-q", "-j", "1", "--resume", "r")
    assert code == 2 and "s.yaml: changed since" in out and "--resume would mix verdicts" in out, out


def test_repeat_and_two_providers_play_each_row_on_each(in_tmp: Path) -> None:
    project(in_tmp, "faq.csv", "id,question,follow_up\n瑶光,续航多少？,冬天呢？\n12,能分期吗？,首付多少？\n", extra="repeat: 2")
    suite = in_tmp / "s.yaml"
    suite.write_text(suite.read_text(encoding="utf-8").replace(
        "    python: bot.py:respond\n", "    python: bot.py:respond\n  - id: bot2\n    python: bot.py:respond\n"),
        encoding="utf-8")
    code, out = invoke("run", "s.yaml", "-q", "-o", "run.json")
    assert code == 0, out
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    assert [(r["test_id"], r["provider"]) for r in data["results"]] == [
        (f"faq[{row}]#{k}", p) for row in ("瑶光", "12") for k in (1, 2) for p in ("bot", "bot2")]
    assert all(r["status"] == "passed" for r in data["results"])
