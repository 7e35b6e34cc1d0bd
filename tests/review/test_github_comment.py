"""`evalspec github-comment` against a loopback fake of the GitHub REST API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main
from evalspec.reporters.markdown import MARKER
from tests.reporters.golden import FIXTURES
from tests.servers import LoopbackServer, Reply


class FakeIssueComments(LoopbackServer):
    """Issue comments of acme/bot#5; `forbid` answers 403 to writes, as a token without the permission gets."""

    def __init__(self, forbid: bool = False) -> None:
        self.comments: list[dict[str, Any]] = [{"id": 1, "body": "LGTM", "html_url": "https://gh.example/c/1"}]
        self.calls: list[str] = []
        self.auth: set[str] = set()

        def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
            url = urlsplit(path)
            self.calls.append(f"{method} {url.path}")
            self.auth.add(headers.get("authorization", ""))
            if method != "GET" and forbid:
                return Reply(status=403, body={"message": "Resource not accessible by integration"})
            if method == "GET" and url.path == "/repos/acme/bot/issues/5/comments":
                return Reply(body=self.comments)
            if method == "POST" and url.path == "/repos/acme/bot/issues/5/comments":
                new = {"id": 100 + len(self.comments), "body": body["body"],
                       "html_url": f"https://gh.example/c/{100 + len(self.comments)}"}
                self.comments.append(new)
                return Reply(status=201, body=new)
            if method == "PATCH" and url.path.startswith("/repos/acme/bot/issues/comments/"):
                mine = next(c for c in self.comments if str(c["id"]) == url.path.rsplit("/", 1)[1])
                mine["body"] = body["body"]
                return Reply(body=mine)
            return Reply(status=404, body={"message": "Not Found"})

        super().__init__(handle)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "pull_request": {"number": 5}}), encoding="utf-8")
    return {"GITHUB_REPOSITORY": "acme/bot", "GITHUB_EVENT_PATH": str(event), "GITHUB_TOKEN": "ghs_test_token",
            "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "77"}


def comment(env: dict[str, str], server: LoopbackServer) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["github-comment", str(FIXTURES / "run.json")],
                                env={**env, "GITHUB_API_URL": server.url})
    return result.exit_code, result.output


def test_first_call_creates_the_comment_and_the_second_updates_it(env: dict[str, str]) -> None:
    with FakeIssueComments() as server:
        code, out = comment(env, server)
        assert code == 0 and "created" in out, out
        code, out = comment(env, server)
        assert code == 0 and "updated" in out, out
    ours = [c for c in server.comments if MARKER in c["body"]]
    assert len(ours) == 1 and len(server.comments) == 2
    assert "https://github.example/acme/bot/actions/runs/77" in ours[0]["body"]
    assert "不泄露手机号" in ours[0]["body"]
    assert [c.split()[0] for c in server.calls] == ["GET", "POST", "GET", "PATCH"]
    assert server.auth == {"Bearer ghs_test_token"}


def test_a_403_names_the_missing_permission(env: dict[str, str]) -> None:
    with FakeIssueComments(forbid=True) as server:
        code, out = comment(env, server)
    assert code == 1
    assert "403" in out and "pull-requests: write" in out


def test_an_event_that_is_not_a_pull_request_makes_no_call(env: dict[str, str], tmp_path: Path) -> None:
    push = tmp_path / "push.json"
    push.write_text(json.dumps({"ref": "refs/heads/main"}), encoding="utf-8")
    with FakeIssueComments() as server:
        code, out = comment({**env, "GITHUB_EVENT_PATH": str(push)}, server)
    assert code == 0 and "not a pull request" in out and server.calls == []
