"""`evalspec github-comment RUN.json`: keep one pull-request comment up to date with the Markdown summary.

Like any Action step it reads GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_EVENT_PATH (the pull request
number) and GITHUB_TOKEN. The comment is found by a hidden marker and updated; only the first run
creates it. A 403 names the permission the workflow must grant.

Errors: GitHubError (an API answer that is not success, with a message for people); NotAPullRequest
(the event has no pull request: nothing to do).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import httpx

from evalspec.core.errors import EvalspecError
from evalspec.reporters.markdown import MARKER, render_markdown
from evalspec.results.runjson import read_run

PERMISSIONS_HINT = ("the workflow's token needs `pull-requests: write`: add "
                    "`permissions: {contents: read, actions: read, pull-requests: write}` to the workflow "
                    "(pull requests from forks only get a read-only token)")


class GitHubError(EvalspecError):
    """The GitHub REST API refused or failed a request; the message says what to do."""


class NotAPullRequest(EvalspecError):
    """The workflow was not triggered by a pull request: there is no conversation to comment on."""


@dataclass
class GitHub:
    """A small client for the few REST endpoints evalspec uses (token auth, JSON, pagination)."""

    api: str
    repository: str
    token: str
    timeout: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitHub:
        missing = [k for k in ("GITHUB_REPOSITORY", "GITHUB_TOKEN") if not env.get(k)]
        if missing:
            raise GitHubError(f"{' and '.join(missing)} not set (the Action passes them; "
                              "GITHUB_TOKEN: ${{ github.token }})")
        return cls(env.get("GITHUB_API_URL") or "https://api.github.com", env["GITHUB_REPOSITORY"], env["GITHUB_TOKEN"])

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self.api.rstrip("/"), timeout=self.timeout, headers={
            "Authorization": f"Bearer {self.token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "evalspec"})

    def request(self, client: httpx.Client, method: str, path: str, body: Mapping[str, object] | None = None,
                params: Mapping[str, str | int] | None = None) -> Any:
        try:
            response = client.request(method, path, json=body, params=params)
        except httpx.HTTPError as exc:
            raise GitHubError(f"{method} {self.api}{path}: {exc}") from None
        if response.status_code == 403:
            raise GitHubError(f"GitHub answered 403 to {method} {path} ({_message(response)}): {PERMISSIONS_HINT}")
        if response.status_code >= 400:
            raise GitHubError(f"GitHub answered {response.status_code} to {method} {path}: {_message(response)}")
        try:
            return response.json() if response.content else None
        except ValueError:  # a proxy's sign-in page, an outage page
            raise GitHubError(f"GitHub's answer to {method} {path} is not JSON: {response.text[:100]!r}") from None

    def comments(self, client: httpx.Client, number: int) -> list[Comment]:
        out: list[Comment] = []
        for page in range(1, 101):
            batch = self.request(client, "GET", f"/repos/{self.repository}/issues/{number}/comments",
                                 params={"per_page": 100, "page": page}) or []
            out += batch
            if len(batch) < 100:
                break
        return out

    def upsert_comment(self, number: int, body: str, marker: str = MARKER) -> tuple[str, str]:
        """Update the comment carrying `marker`, or create it: ("created" | "updated", its URL)."""
        with self._client() as client:
            mine = next((c for c in self.comments(client, number) if marker in (c.get("body") or "")), None)
            if mine is not None:
                done = self.request(client, "PATCH", f"/repos/{self.repository}/issues/comments/{mine['id']}",
                                    {"body": body})
                return "updated", str((done or {}).get("html_url") or mine.get("html_url") or "")
            done = self.request(client, "POST", f"/repos/{self.repository}/issues/{number}/comments", {"body": body})
            return "created", str((done or {}).get("html_url") or "")


class Comment(TypedDict, total=False):
    """The keys of a GitHub issue comment evalspec reads."""

    id: int
    body: str | None
    html_url: str


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("message") or response.text[:200])
    except (ValueError, AttributeError):
        return response.text[:200]


def pull_request_number(env: Mapping[str, str]) -> int:
    """The pull request of the event that triggered the workflow (GITHUB_EVENT_PATH)."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        raise NotAPullRequest("GITHUB_EVENT_PATH is not set")
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GitHubError(f"cannot read the event {path}: {exc}") from None
    pr = event.get("pull_request") or {}
    issue = event.get("issue") or {}
    number = pr.get("number") or (issue.get("number") if issue.get("pull_request") else None)
    if not isinstance(number, int):
        raise NotAPullRequest(f"the event in {path} is not about a pull request")
    return number


def comment_run(run_json: Path, env: Mapping[str, str], lang: str | None = None) -> tuple[str, str]:
    """Render RUN.json as Markdown (with the workflow-run link) and create or update the PR comment."""
    run = read_run(run_json, stream=True)  # exit 2 when it cannot be read, pull request or not; its records stay on disk
    number = pull_request_number(env)
    github = GitHub.from_env(env)
    return github.upsert_comment(number, render_markdown(run, env, lang))
