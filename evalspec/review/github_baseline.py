"""`--baseline auto`: run.json from the `evalspec-report` artifact of the newest completed run of this
workflow on the pull request's base branch (whatever its conclusion), through the GitHub REST API.

Anything missing (not a pull request, no token, no run yet, no artifact, an expired artifact, an API
error) gives no baseline and a note saying why: the run is then gated as usual.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import httpx

from evalspec.core.errors import ConfigError, ControlFlow
from evalspec.results.rundata import RunData
from evalspec.results.runjson import REFUSED, read_run
from evalspec.review.github import GitHub, GitHubError

ARTIFACT = "evalspec-report"
BASELINE_FILE = "baseline.json"  # the artifact's run.json, kept in the run's folder while the run uses it
#: what reading a damaged archive raises besides BadZipFile: a garbled or cut deflate stream, a compression
#: zipfile cannot read (Deflate64, as some archivers write large files), an encrypted member
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError)


class NoBaseline(ControlFlow):
    """Why there is no baseline (said in the report)."""


def _workflow(env: Mapping[str, str]) -> str:
    """The workflow file name from GITHUB_WORKFLOW_REF (`owner/repo/.github/workflows/ci.yml@refs/...`)."""
    ref = env.get("GITHUB_WORKFLOW_REF", "")
    path = ref.split("@", 1)[0]
    if "/.github/workflows/" in path:
        return path.rsplit("/", 1)[-1]
    raise NoBaseline("GITHUB_WORKFLOW_REF does not name a workflow file")


def _listed(answer: object, key: str, about: str, what: str) -> list[Mapping[str, object]]:
    """The objects GitHub lists under `key` in `answer` (each with its id), or a NoBaseline saying how the
    answer is not shaped as the REST API documents it (a proxy, an enterprise server of another version)."""
    if answer is None:
        return []
    if not isinstance(answer, dict):
        raise NoBaseline(f"GitHub's answer about {about} is not a JSON object")
    items = answer.get(key) or []
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("id"), int) for i in items):
        raise NoBaseline(f"GitHub's answer about {about} has no {what} id")
    return items


def _run_json_from_zip(archive_path: Path, keep: Path) -> RunData:
    """The artifact's run.json, copied out of the archive to `keep` and read from there one record at a time
    (a large run's records stay on disk, docs/en/scale-and-ray.md#memory), checked against the run schema."""
    try:
        with zipfile.ZipFile(archive_path) as archive:
            names = sorted((n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "run.json"), key=len)
            if not names:
                raise NoBaseline(f"the {ARTIFACT} artifact has no run.json")
            with archive.open(names[0]) as member, keep.open("wb") as out:
                shutil.copyfileobj(member, out)
    except _DAMAGED as exc:
        raise NoBaseline(f"the {ARTIFACT} artifact could not be read: {exc}") from None
    try:  # the one run.json reader's checks (docs/en/troubleshooting.md#a-runjson-that-cannot-be-read)
        return read_run(keep, check=True, stream=True)
    except ConfigError as exc:  # "the base branch's run.json does not validate against …: results[0]: …"
        said = "; ".join(p.message.removesuffix(REFUSED) for p in exc.problems)
        raise NoBaseline(f"the base branch's run.json {said}" if said.startswith("does not validate")
                         else f"the base branch's run.json: {said}") from None


def fetch_baseline(env: Mapping[str, str], folder: Path) -> tuple[RunData, str]:
    """(run.json, where it came from); raises NoBaseline (or GitHubError) saying why there is none. The
    artifact is downloaded into `folder` and its run.json kept there as `baseline.json`, read from disk
    while the run uses it."""
    base = env.get("GITHUB_BASE_REF")
    if not base:
        raise NoBaseline("not a pull request (GITHUB_BASE_REF is not set)")
    github = GitHub.from_env(env)
    repo = f"/repos/{github.repository}/actions"
    workflow = _workflow(env)
    with github._client() as client:
        runs = _listed(github.request(client, "GET", f"{repo}/workflows/{workflow}/runs",
                                      params={"branch": base, "status": "completed", "per_page": 1}),
                       "workflow_runs", f"the runs of {workflow} on {base}", "run")
        if not runs:
            raise NoBaseline(f"no completed run of {workflow} on {base} yet")
        run = runs[0]
        listed = github.request(client, "GET", f"{repo}/runs/{run['id']}/artifacts", params={"name": ARTIFACT})
        artifacts = _listed(listed, "artifacts", f"the artifacts of run {run['id']}", "artifact")
        artifact = next((a for a in artifacts if a.get("name") == ARTIFACT), None)
        if artifact is None:
            raise NoBaseline(f"run {run['id']} on {base} has no {ARTIFACT} artifact")
        if artifact.get("expired"):
            raise NoBaseline(f"the {ARTIFACT} artifact of run {run['id']} on {base} has expired")
        keep = folder / BASELINE_FILE
        try:
            return _download(client, f"{repo}/artifacts/{artifact['id']}/zip", folder, keep), \
                f"{base} run {run['id']} ({run.get('conclusion') or 'completed'}) {run.get('html_url') or ''}".strip()
        except (NoBaseline, httpx.HTTPError):  # a baseline.json there is always the one this run compares with
            with contextlib.suppress(OSError):
                keep.unlink(missing_ok=True)
            raise


def _download(client: httpx.Client, url: str, folder: Path, keep: Path) -> RunData:
    """The artifact at `url` downloaded into `folder`, its run.json kept there as `keep` (an earlier
    attempt's, from before a `--resume`, goes first) and read from there. A folder or disk that cannot take
    it is a NoBaseline."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        keep.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:  # the archive goes once its run.json is out
            archive = Path(tmp) / f"{ARTIFACT}.zip"
            # the archive is a redirect to storage elsewhere; httpx drops the token when the host changes
            with client.stream("GET", url, follow_redirects=True) as response:
                if response.status_code >= 400:
                    raise NoBaseline(f"downloading the {ARTIFACT} artifact failed: GitHub answered {response.status_code}")
                with archive.open("wb") as out:
                    for chunk in response.iter_bytes():
                        out.write(chunk)
            return _run_json_from_zip(archive, keep)
    except OSError as exc:  # a read-only run folder, a full disk
        raise NoBaseline(f"the {ARTIFACT} artifact could not be kept in {folder}: {exc.strerror or exc}") from None


def fetch_auto_baseline(folder: Path, env: Mapping[str, str] | None = None) -> tuple[RunData | None, str]:
    """(run.json or None, a note: where it came from, or why there is none). Never raises. `folder`: where
    the artifact's run.json is kept while the run uses it (the run's own folder)."""
    try:
        data, source = fetch_baseline(os.environ if env is None else env, folder)
    except (NoBaseline, GitHubError) as exc:
        return None, str(exc)
    except httpx.HTTPError as exc:  # during the artifact download
        return None, f"downloading the {ARTIFACT} artifact failed: {exc}"
    return data, source
