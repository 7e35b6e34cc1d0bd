"""A run.json made with `run --baseline`, edited by hand or by another tool (docs/en/reports-and-gate.md): a
diff that was made without a key every report reads (`rows`, `base`, a row's `draft`) is named as what
it is, exit 2, never a traceback; rows written by an earlier evalspec are read and given today's keys,
whether the rows are one a line (a large run's) or on one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec.play import runner
from tests.helpers import invoke

BOT = '''\
from pathlib import Path


def respond(messages, context):
    head = (Path(__file__).parent / "mode.txt").read_text().strip() == "head"
    return "坏" if head and context["test_id"] == "回归" else "好"
'''


@pytest.fixture
def head(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A run.json made with --baseline, its rows a line each (a large run's layout)."""
    monkeypatch.setattr(runner, "STREAM_ABOVE", 2)
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    tests = "".join(f"  - id: {i}\n    conversation:\n      - user: 你好\n        assert: [{{equals: 好}}]\n"
                    for i in ("回归", "稳定", "稳定二"))
    (in_tmp / "s.yaml").write_text(f"providers:\n  - id: bot\n    python: bot.py:respond\ntests:\n{tests}", encoding="utf-8")
    for mode, extra in (("base", []), ("head", ["--baseline", "base.json", "--confirm", "0"])):
        (in_tmp / "mode.txt").write_text(mode)
        code, out = invoke("run", "s.yaml", "--no-cache", "-o", f"{mode}.json", *extra)
        assert code in (0, 1), out
    assert '"rows": [\n' in (in_tmp / "head.json").read_text(encoding="utf-8")
    return dict(json.loads((in_tmp / "head.json").read_text(encoding="utf-8")))


def every_command(path: str) -> list[tuple[int, str]]:
    return [invoke("report", path, "--md", "r.md"), invoke("grade", path, "-o", "graded.json"),
            invoke("diff", "base.json", path)]


@pytest.mark.parametrize("key", ["rows", "base", "score_changes", "providers", "reasons"])
def test_a_made_diff_without_a_key_the_reports_read_is_named(head: dict[str, Any], key: str) -> None:
    del head["baseline"][key]
    Path("edited.json").write_text(json.dumps(head, ensure_ascii=False), encoding="utf-8")
    for code, out in every_command("edited.json"):
        assert code == 2, out
        assert f"baseline: '{key}' is" in out, out  # (missing, or a required property)


def test_a_row_without_a_key_every_row_has_is_named_when_it_cannot_be_an_earlier_ones(head: dict[str, Any]) -> None:
    head["baseline"]["rows"][1].pop("category")
    Path("edited.json").write_text(json.dumps(head, ensure_ascii=False), encoding="utf-8")
    for code, out in every_command("edited.json"):
        assert code == 2, out
        assert "baseline.rows[1]: 'category' is" in out, out


@pytest.mark.parametrize("one_line", [False, True])
def test_rows_of_an_earlier_evalspec_are_read_with_todays_keys(head: dict[str, Any], one_line: bool) -> None:
    text = Path("head.json").read_text(encoding="utf-8")
    old = ("name", "draft", "measured", "critical_new", "critical_newly_failed", "problem", "score_delta")
    if one_line:
        for row in head["baseline"]["rows"]:
            for key in old:
                row.pop(key)
        text = json.dumps(head, ensure_ascii=False)
    else:  # the same file, each row's line without them
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if line.startswith('{"suite"') and '"replays"' in line:
                row = json.loads(line.removesuffix(","))
                lines[i] = json.dumps({k: v for k, v in row.items() if k not in old}, ensure_ascii=False) + \
                    ("," if line.endswith(",") else "")
        text = "\n".join(lines)
    Path("old.json").write_text(text, encoding="utf-8")
    code, out = invoke("report", "old.json", "--md", "r.md")
    assert code == 0, out
    assert "regressed: 回归 @ bot" in out and "回归" in Path("r.md").read_text(encoding="utf-8")
    code, out = invoke("grade", "old.json", "-o", "graded.json")
    assert code == 1, out  # the regression still blocks
    rows = json.loads(Path("graded.json").read_text(encoding="utf-8"))["baseline"]["rows"]
    assert {(r["name"], r["draft"], r["problem"] != "") for r in rows} == {
        ("回归", False, False), ("稳定", False, False), ("稳定二", False, False)}


def test_a_diff_that_was_not_made_needs_only_its_note(head: dict[str, Any]) -> None:
    head["baseline"] = {"available": False, "note": "没有基线"}
    Path("edited.json").write_text(json.dumps(head, ensure_ascii=False), encoding="utf-8")
    code, out = invoke("report", "edited.json")
    assert code == 0 and "没有基线" in out, out
