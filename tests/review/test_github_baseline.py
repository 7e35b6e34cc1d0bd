"""`--baseline auto` against a loopback fake of the GitHub REST API: found, none yet, an expired artifact."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main
from evalspec.review.github_baseline import fetch_auto_baseline
from tests.servers import LoopbackServer, Reply

BOT = "def respond(messages, context):\n    return 'ok' if context['test_id'] == 'steady' else 'bad'\n"
SUITE = """providers:
  - id: bot
    python: bot.py:respond
tests:
  - {id: steady, conversation: [{user: hi, assert: [{equals: ok}]}]}
  - {id: still, conversation: [{user: hi, assert: [{equals: ok}]}]}
"""


class FakeGitHub(LoopbackServer):
    """The four endpoints `--baseline auto` uses; `runs` and `artifacts` say what the base branch has."""

    def __init__(self, run_json: dict[str, Any] | bytes | None, runs: int = 1, expired: bool = False) -> None:
        self.auth: list[str] = []
        self.queries: list[dict[str, list[str]]] = []
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as z:  # (bytes: a run.json as evalspec wrote it, a record a line)
            z.writestr("run.json", run_json if isinstance(run_json, bytes) else json.dumps(run_json or {}))
            z.writestr("report.html", "<html></html>")
        zipped = archive.getvalue()

        def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
            url = urlsplit(path)
            self.auth.append(headers.get("authorization", ""))
            self.queries.append(parse_qs(url.query))
            if url.path == "/repos/acme/bot/actions/workflows/evals.yml/runs":
                found = [{"id": 42, "conclusion": "failure", "html_url": "https://github.example/run/42"}]
                return Reply(body={"total_count": runs, "workflow_runs": found[:runs]})
            if url.path == "/repos/acme/bot/actions/runs/42/artifacts":
                return Reply(body={"total_count": 1, "artifacts": [
                    {"id": 7, "name": "evalspec-report", "expired": expired}]})
            if url.path == "/repos/acme/bot/actions/artifacts/7/zip":
                return Reply(status=302, body="", headers={"location": f"{self.url}/blob/7.zip"})
            if url.path == "/blob/7.zip":
                return Reply(body=zipped)
            return Reply(status=404, body={"message": "Not Found"})

        super().__init__(handle)


@pytest.fixture
def project(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    (in_tmp / "s.yaml").write_text(SUITE, encoding="utf-8")
    result = CliRunner().invoke(main, ["run", "s.yaml", "-o", "base.json", "--no-cache"])
    assert result.exit_code == 1, result.output  # the base branch has a known failure
    for key, value in {"GITHUB_REPOSITORY": "acme/bot", "GITHUB_TOKEN": "ghs_fake_token_123",
                       "GITHUB_BASE_REF": "main",
                       "GITHUB_WORKFLOW_REF": "acme/bot/.github/workflows/evals.yml@refs/pull/3/merge"}.items():
        monkeypatch.setenv(key, value)
    return in_tmp


def run_auto(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, dict[str, Any]]:
    monkeypatch.setenv("GITHUB_API_URL", server.url)
    result = CliRunner().invoke(main, ["run", "s.yaml", "-o", "head.json", "--baseline", "auto", "--gate",
                                       "regressions", "--md", "pr.md"])
    return result.exit_code, result.output, json.loads(Path("head.json").read_text(encoding="utf-8"))


def test_auto_takes_run_json_from_the_newest_completed_run_on_the_base_branch(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = json.loads((project / "base.json").read_text(encoding="utf-8"))
    with FakeGitHub((project / "base.json").read_bytes()) as github:
        code, out, head = run_auto(github, monkeypatch)
    assert code == 0, out  # `still` failed on the base branch too: known, not blocking
    assert head["baseline"]["available"] and head["baseline"]["base"]["run_id"] == base["run_id"]
    assert "main run 42 (failure)" in head["baseline"]["base"]["path"]
    assert {r["test_id"]: r["category"] for r in head["baseline"]["rows"]} == {"steady": "unchanged",
                                                                               "still": "still failing"}
    # the artifact's run.json is kept beside the run it was compared with, and read from there
    [kept] = list((project / ".evalspec" / "runs").glob("*/baseline.json"))
    assert kept.read_bytes() == (project / "base.json").read_bytes()
    assert [p.name for p in kept.parent.iterdir() if p.name.endswith(".zip") or p.name.startswith("tmp")] == []
    assert set(github.auth) == {"Bearer ghs_fake_token_123"}
    assert github.queries[0] == {"branch": ["main"], "status": ["completed"], "per_page": ["1"]}
    assert github.queries[1] == {"name": ["evalspec-report"]}


def test_no_run_on_the_base_branch_yet_gates_as_usual_and_says_so(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeGitHub(None, runs=0) as github:
        code, out, head = run_auto(github, monkeypatch)
    assert code == 1, out  # the usual gate: `still` fails
    assert head["baseline"] == {"available": False, "note": "no completed run of evals.yml on main yet"}
    assert "no baseline" in Path("pr.md").read_text(encoding="utf-8")
    assert head["gate"]["mode"] == "pass_rate"


def test_an_expired_artifact_gates_as_usual_and_says_so(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeGitHub({"results": []}, expired=True) as github:
        code, out, head = run_auto(github, monkeypatch)
    assert code == 1, out
    assert head["baseline"]["note"] == "the evalspec-report artifact of run 42 on main has expired"
    assert "expired" in Path("pr.md").read_text(encoding="utf-8")


def test_outside_a_pull_request_or_without_a_reachable_api_there_is_no_baseline(tmp_path: Path) -> None:
    assert fetch_auto_baseline(tmp_path, {"GITHUB_REPOSITORY": "acme/bot", "GITHUB_TOKEN": "t"}) == \
        (None, "not a pull request (GITHUB_BASE_REF is not set)")
    with FakeGitHub(None) as github:
        gone = github.url
    data, note = fetch_auto_baseline(tmp_path, {"GITHUB_REPOSITORY": "acme/bot", "GITHUB_TOKEN": "t",
                                                "GITHUB_BASE_REF": "main", "GITHUB_API_URL": gone,
                                                "GITHUB_WORKFLOW_REF": "acme/bot/.github/workflows/evals.yml@x"})
    assert data is None and note.startswith("GET ") and "Connection refused" in note


def test_a_malformed_base_run_json_gates_as_usual_and_says_why(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = json.loads((project / "base.json").read_text(encoding="utf-8"))
    del base["results"][0]["suite"]
    with FakeGitHub(base) as github:
        code, out, head = run_auto(github, monkeypatch)
    assert code == 1, out  # not a traceback after the last call: no baseline, the usual gate
    assert head["baseline"]["available"] is False
    assert head["baseline"]["note"] == ("the base branch's run.json does not validate against schema/run.schema.json: "
                                        "results[0]: 'suite' is a required property")
