"""`--baseline auto`: run.json from the `evalspec-report` artifact of the newest completed run of this
workflow on the pull request's base branch (whatever its conclusion), through the GitHub REST API.

Anything missing (not a pull request, no token, no run yet, no artifact, an expired artifact, an API
error) gives no baseline and a note saying why: the run is then gated as usual.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Mapping
from typing import Any

import httpx

ARTIFACT = "evalspec-report"


class NoBaseline(Exception):
    """Why there is no baseline (said in the report)."""


def _workflow(env: Mapping[str, str]) -> str:
    """The workflow file name from GITHUB_WORKFLOW_REF (`owner/repo/.github/workflows/ci.yml@refs/...`)."""
    ref = env.get("GITHUB_WORKFLOW_REF", "")
    path = ref.split("@", 1)[0]
    if "/.github/workflows/" in path:
        return path.rsplit("/", 1)[-1]
    raise NoBaseline("GITHUB_WORKFLOW_REF does not name a workflow file")


def _get(client: httpx.Client, url: str, **params: Any) -> Any:
    response = client.get(url, params=params or None)
    if response.status_code == 404:
        raise NoBaseline(f"GitHub answered 404 for {url}")
    if response.status_code >= 400:
        raise NoBaseline(f"GitHub answered {response.status_code} for {url}: {response.text[:200]}")
    return response.json()


def _run_json_from_zip(content: bytes) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            names = sorted((n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "run.json"), key=len)
            if not names:
                raise NoBaseline(f"the {ARTIFACT} artifact has no run.json")
            data = json.loads(archive.read(names[0]).decode("utf-8"))
    except (zipfile.BadZipFile, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NoBaseline(f"the {ARTIFACT} artifact could not be read: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise NoBaseline(f"the run.json of the {ARTIFACT} artifact has no results")
    return data


def fetch_baseline(env: Mapping[str, str], timeout: float = 30.0) -> tuple[dict[str, Any], str]:
    """(run.json, where it came from); raises NoBaseline saying why there is none."""
    base = env.get("GITHUB_BASE_REF")
    repo = env.get("GITHUB_REPOSITORY")
    token = env.get("GITHUB_TOKEN")
    if not base:
        raise NoBaseline("not a pull request (GITHUB_BASE_REF is not set)")
    if not repo or not token:
        raise NoBaseline("GITHUB_REPOSITORY and GITHUB_TOKEN are needed to find the base branch's run")
    api = env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": "2022-11-28"}
    workflow = _workflow(env)
    with httpx.Client(headers=headers, timeout=timeout, follow_redirects=True) as client:
        runs = _get(client, f"{api}/repos/{repo}/actions/workflows/{workflow}/runs",
                    branch=base, status="completed", per_page=1).get("workflow_runs") or []
        if not runs:
            raise NoBaseline(f"no completed run of {workflow} on {base} yet")
        run = runs[0]
        artifacts = _get(client, f"{api}/repos/{repo}/actions/runs/{run['id']}/artifacts",
                         name=ARTIFACT).get("artifacts") or []
        artifact = next((a for a in artifacts if a.get("name") == ARTIFACT), None)
        if artifact is None:
            raise NoBaseline(f"run {run['id']} on {base} has no {ARTIFACT} artifact")
        if artifact.get("expired"):
            raise NoBaseline(f"the {ARTIFACT} artifact of run {run['id']} on {base} has expired")
        response = client.get(f"{api}/repos/{repo}/actions/artifacts/{artifact['id']}/zip")
        if response.status_code >= 400:
            raise NoBaseline(f"downloading the {ARTIFACT} artifact failed: GitHub answered {response.status_code}")
        data = _run_json_from_zip(response.content)
    return data, f"{base} run {run['id']} ({run.get('conclusion') or 'completed'}) {run.get('html_url') or ''}".strip()


def fetch_auto_baseline(env: Mapping[str, str] | None = None) -> tuple[dict[str, Any] | None, str]:
    """(run.json or None, a note: where it came from, or why there is none). Never raises."""
    try:
        data, source = fetch_baseline(os.environ if env is None else env)
    except NoBaseline as exc:
        return None, str(exc)
    except httpx.HTTPError as exc:
        return None, f"the GitHub API could not be reached: {exc}"
    return data, source
