"""A large dataset's rows are checked by two processes, each taking every other row
(docs/en/scale-and-ray.md#a-million-rows): the problems named, their order, the count of the rest, a line
that cannot be read and two rows with one id are those of one pass, and a helper that fails changes
nothing (its rows are checked again here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import evalspec

ROOT = Path(evalspec.__file__).parent.parent

SCAN = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from evalspec.config import dataset
    from evalspec.core.errors import Problem

    parent = os.getpid()
    helpers = []
    start = dataset._Halves.start
    dataset._Halves.start = classmethod(lambda cls, *a: helpers.append(start(*a)) or helpers[-1])

    def check(row):
        if sys.argv[2] == "helper-fails" and os.getpid() != parent:
            raise RuntimeError("the helper fails")
        if "坏" in str(row.fields.get("question")):
            return Problem("s.yaml", 7, "tests[0].conversation[0].user", f"does not render (row {row.line})")
        return None

    results = {}
    for halved_from in (dataset._HALVED_FROM, 10 ** 9):
        dataset._HALVED_FROM = halved_from
        found = dataset.scan(Path(sys.argv[1]), "faq", {"question", "follow_up"}, check)
        results[str(halved_from)] = [str(p) for p in found]
    print(json.dumps({"halved": [h is not None for h in helpers], "results": list(results.values())},
                     ensure_ascii=False))
""")


def _rows(n: int, bad_line: int | None = None) -> str:
    lines = []
    for i in range(1, n + 1):
        row: dict[str, object] = {"id": f"r{i}", "question": f"问题{i}", "follow_up": "续航多少？"}
        if i % 97 == 0:
            del row["follow_up"]
        if i % 89 == 0:
            row["follow_up"] = None
        if i % 53 == 0 or i % 54 == 0:  # problems on even and odd rows alike
            row["question"] = f"坏问题{i}"
        if i == 4000:
            row["id"] = "r10"  # two rows, one id
        lines.append(json.dumps(row, ensure_ascii=False))
    if bad_line is not None:
        lines[bad_line - 1] = "{not json"
    return "\n".join(lines) + "\n"


def _scan(path: Path, mode: str = "") -> dict[str, list[object]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SCAN, str(path), mode], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    said: dict[str, list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return said


def test_two_processes_name_what_one_pass_names(tmp_path: Path) -> None:
    path = tmp_path / "faq.jsonl"
    path.write_text(_rows(6000), encoding="utf-8")
    said = _scan(path)
    assert said["halved"] == [True]  # the first scan was halved, the second (threshold raised) was not
    halved, one_pass = said["results"]
    assert halved == one_pass
    assert len(one_pass) == 22 and "and " in str(one_pass[20]) and "r10" in str(one_pass[21])
    assert any("row 53)" in str(p) for p in one_pass) and any("row 54)" in str(p) for p in one_pass)


def test_a_line_that_cannot_be_read_ends_both_halves_where_one_pass_ends(tmp_path: Path) -> None:
    path = tmp_path / "faq.jsonl"
    path.write_text(_rows(6000, bad_line=4500), encoding="utf-8")
    halved, one_pass = _scan(path)["results"]
    assert halved == one_pass and "4500" in str(one_pass[-1])


def test_a_helper_that_fails_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "faq.jsonl"
    path.write_text(_rows(6000), encoding="utf-8")
    said = _scan(path, "helper-fails")
    assert said["halved"] == [True]
    halved, one_pass = said["results"]
    assert halved == one_pass and len(one_pass) == 22
