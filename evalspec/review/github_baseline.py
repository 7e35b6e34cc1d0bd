"""`--baseline auto`: run.json from the `evalspec-report` artifact of the newest completed run of this
workflow on the pull request's base branch (whatever its conclusion), through the GitHub REST API.

Anything missing (not a pull request, no token, no run yet, no artifact, an expired artifact, an API
error) gives no baseline and a note saying why: the run is then gated as usual.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Mapping

import httpx

from evalspec.core.errors import ConfigError, ControlFlow
from evalspec.results.rundata import RunData
from evalspec.results.runjson import parse_run
from evalspec.review.github import GitHub, GitHubError

ARTIFACT = "evalspec-report"


class NoBaseline(ControlFlow):
    """Why there is no baseline (said in the report)."""


def _workflow(env: Mapping[str, str]) -> str:
    """The workflow file name from GITHUB_WORKFLOW_REF (`owner/repo/.github/workflows/ci.yml@refs/...`)."""
    ref = env.get("GITHUB_WORKFLOW_REF", "")
    path = ref.split("@", 1)[0]
    if "/.github/workflows/" in path:
        return path.rsplit("/", 1)[-1]
    raise NoBaseline("GITHUB_WORKFLOW_REF does not name a workflow file")


def _run_json_from_zip(content: bytes) -> RunData:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            names = sorted((n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "run.json"), key=len)
            if not names:
                raise NoBaseline(f"the {ARTIFACT} artifact has no run.json")
            raw = archive.read(names[0])
    except zipfile.BadZipFile as exc:
        raise NoBaseline(f"the {ARTIFACT} artifact could not be read: {exc}") from None
    try:  # the one run.json reader's checks (docs/en/troubleshooting.md#a-runjson-that-cannot-be-read)
        return parse_run(raw, f"the run.json of the {ARTIFACT} artifact", shape=False)  # attach checks the schema
    except ConfigError as exc:
        raise NoBaseline("; ".join(str(p) for p in exc.problems)) from None


def fetch_baseline(env: Mapping[str, str]) -> tuple[RunData, str]:
    """(run.json, where it came from); raises NoBaseline (or GitHubError) saying why there is none."""
    base = env.get("GITHUB_BASE_REF")
    if not base:
        raise NoBaseline("not a pull request (GITHUB_BASE_REF is not set)")
    github = GitHub.from_env(env)
    repo = f"/repos/{github.repository}/actions"
    workflow = _workflow(env)
    with github._client() as client:
        runs = (github.request(client, "GET", f"{repo}/workflows/{workflow}/runs",
                               params={"branch": base, "status": "completed", "per_page": 1}) or {})
        if not runs.get("workflow_runs"):
            raise NoBaseline(f"no completed run of {workflow} on {base} yet")
        run = runs["workflow_runs"][0]
        listed = github.request(client, "GET", f"{repo}/runs/{run['id']}/artifacts", params={"name": ARTIFACT}) or {}
        artifact = next((a for a in listed.get("artifacts") or [] if a.get("name") == ARTIFACT), None)
        if artifact is None:
            raise NoBaseline(f"run {run['id']} on {base} has no {ARTIFACT} artifact")
        if artifact.get("expired"):
            raise NoBaseline(f"the {ARTIFACT} artifact of run {run['id']} on {base} has expired")
        # the archive is a redirect to storage elsewhere; httpx drops the token when the host changes
        response = client.get(f"{repo}/artifacts/{artifact['id']}/zip", follow_redirects=True)
        if response.status_code >= 400:
            raise NoBaseline(f"downloading the {ARTIFACT} artifact failed: GitHub answered {response.status_code}")
        data = _run_json_from_zip(response.content)
    return data, f"{base} run {run['id']} ({run.get('conclusion') or 'completed'}) {run.get('html_url') or ''}".strip()


def fetch_auto_baseline(env: Mapping[str, str] | None = None) -> tuple[RunData | None, str]:
    """(run.json or None, a note: where it came from, or why there is none). Never raises."""
    try:
        data, source = fetch_baseline(os.environ if env is None else env)
    except (NoBaseline, GitHubError) as exc:
        return None, str(exc)
    except httpx.HTTPError as exc:  # during the artifact download
        return None, f"downloading the {ARTIFACT} artifact failed: {exc}"
    return data, source
