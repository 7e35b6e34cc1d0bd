"""Every command reads run.json through one reader (`results.runjson.read_run`): a file cut short, not
UTF-8, not an object or of the wrong shape is exit 2 naming the file and what is wrong, never a traceback;
`evalspec view` answers such a run's page with a 4xx naming it and keeps serving the others."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from evalspec.app.api import Run
from evalspec.core.errors import ConfigError
from tests.helpers import invoke

BOT = '''
def respond(messages, context):
    return "您好，" + messages[-1]["content"]
'''
SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: hello
    conversation:
      - user: 你好
        assert: [{contains: 您好}]
"""

BAD: dict[str, bytes] = {
    "truncated": b'{"evalspec_version": "1", "results": [{"key": "a", "test_id": "hel',
    "not-utf8": b'{"results": [], "note": "\xff\xfe caf\xe9"}',
    "a-list": b"[]",
    "records-5": b'{"records": 5}',
    "results-of-numbers": b'{"results": [1, 2]}',
}
WHAT: dict[str, str] = {
    "truncated": "cut short",
    "not-utf8": "not UTF-8",
    "a-list": "not a JSON object",
    "records-5": "no 'results' list",
    "results-of-numbers": "'evalspec_version' is missing",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readback")
    (root / "bot.py").write_text(BOT, encoding="utf-8")
    (root / "s.yaml").write_text(SUITE, encoding="utf-8")
    return root


COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "report": lambda bad, root: ["report", str(bad)],
    "grade": lambda bad, root: ["grade", str(bad)],
    "rerun": lambda bad, root: ["rerun", str(bad), "--failed"],
    "triage": lambda bad, root: ["triage", str(bad), "hello", "--as", "bot_defect"],
    "diff (base)": lambda bad, root: ["diff", str(bad), str(bad)],
    "coverage --run": lambda bad, root: ["coverage", str(root / "s.yaml"), "--run", str(bad)],
    "import transcripts": lambda bad, root: ["import", "transcripts", str(bad), "-o", str(bad.with_name("new.yaml"))],
    "github-comment": lambda bad, root: ["github-comment", str(bad)],
    "run --baseline": lambda bad, root: ["run", str(root / "s.yaml"), "--no-cache", "--baseline", str(bad),
                                         "-o", str(bad.with_name("head.json"))],
}


@pytest.mark.parametrize("content", list(BAD))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_run_json_is_exit_2_naming_the_file(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  command: str, content: str) -> None:
    monkeypatch.chdir(project)
    bad = tmp_path / "坏的run.json"
    bad.write_bytes(BAD[content])
    code, out = invoke(*COMMANDS[command](bad, project))  # an exception other than SystemExit is raised here
    assert code == 2, out
    assert str(bad) in out and "Traceback" not in out, out
    if command not in ("run --baseline", "diff (base)"):  # a baseline: the whole schema (its own words)
        assert WHAT[content] in out, out


@pytest.mark.parametrize("content", list(BAD))
def test_the_python_api_refuses_a_bad_run_json_naming_it(tmp_path: Path, content: str) -> None:
    bad = tmp_path / "run.json"
    bad.write_bytes(BAD[content])
    with pytest.raises(ConfigError, match=WHAT[content]) as caught:
        Run.from_json(bad)
    assert str(bad) in str(caught.value)


def test_a_record_of_the_wrong_shape_is_named_where_it_is(project: Path, tmp_path: Path) -> None:
    code, out = invoke("run", str(project / "s.yaml"), "--no-cache", "-o", str(tmp_path / "run.json"))
    assert code == 0, out
    text = (tmp_path / "run.json").read_text(encoding="utf-8")
    for old, new, where in [('"role":"user"', '"role":5', "results[0].transcript[0].role"),
                            ('"status":"passed"', '"status":["passed"]', "results[0].status"),
                            ('"assertions":[', '"assertions":[7,', "results[0].assertions[0]")]:
        assert old in text
        (tmp_path / "bad.json").write_text(text.replace(old, new, 1), encoding="utf-8")
        code, out = invoke("report", str(tmp_path / "bad.json"))
        assert code == 2 and where in out and "Traceback" not in out, out


def test_view_answers_an_unreadable_run_with_a_4xx_and_serves_the_others(project: Path) -> None:
    root = project / "viewed"
    code, out = invoke("run", str(project / "s.yaml"), "--no-cache", "-o", str(project / "good.json"))
    assert code == 0, out
    runs = root / ".evalspec" / "runs"
    (runs / "good-run").mkdir(parents=True)
    shutil.copy(project / "good.json", runs / "good-run" / "run.json")
    (runs / "cut-run").mkdir()
    (runs / "cut-run" / "run.json").write_bytes(BAD["truncated"])
    process = subprocess.Popen([sys.executable, "-m", "evalspec", "view", str(root), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
    assert process.stdout is not None
    try:
        base, token = process.stdout.readline().strip().split("?token=")
        headers = {"X-Evalspec-Token": token}
        listed = httpx.get(base + "api/runs", headers=headers, timeout=10).json()
        good_id = next(r["id"] for r in listed if "unreadable" not in r)
        assert [r["id"] for r in listed if "unreadable" in r] == ["cut-run"]
        page = httpx.get(base + "run/cut-run", headers=headers, timeout=10)
        assert 400 <= page.status_code < 500 and "cut-run" in page.text and "cut short" in page.text
        assert "run.json" in page.text and "Traceback" not in page.text
        assert httpx.get(base + f"run/{good_id}", headers=headers, timeout=10).status_code == 200
        index = httpx.get(base, headers=headers, timeout=10)
        assert index.status_code == 200 and "cut-run" in index.text and "unreadable" in index.text
        diff = httpx.get(base + "diff", params={"base": "cut-run", "head": good_id}, headers=headers, timeout=10)
        assert 400 <= diff.status_code < 500 and "cut-run" in diff.text
    finally:
        process.terminate()
        process.wait(timeout=10)
