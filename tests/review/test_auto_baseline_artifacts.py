"""`--baseline auto` with artifacts and disks that go wrong (docs/en/reports-and-gate.md): every problem is
the baseline's note, never a traceback that stops the run; a failed attempt leaves no baseline.json behind."""

from __future__ import annotations

import io
import json
import socket
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main
from evalspec.results.runjson import read_run, write_json
from evalspec.results.stream import JournalRecords
from evalspec.review.github_baseline import fetch_auto_baseline
from tests.servers import LoopbackServer, Reply

ENV = {"GITHUB_REPOSITORY": "acme/bot", "GITHUB_TOKEN": "t", "GITHUB_BASE_REF": "main",
       "GITHUB_WORKFLOW_REF": "acme/bot/.github/workflows/evals.yml@x"}


class Artifact(LoopbackServer):
    """The GitHub endpoints `--baseline auto` reads, the artifact's archive being `zipped` as given."""

    def __init__(self, zipped: bytes, storage: str | None = None) -> None:
        def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
            url = urlsplit(path).path
            if url.endswith("/workflows/evals.yml/runs"):
                return Reply(body={"workflow_runs": [{"id": 42, "conclusion": "success"}]})
            if url.endswith("/runs/42/artifacts"):
                return Reply(body={"artifacts": [{"id": 7, "name": "evalspec-report", "expired": False}]})
            if url.endswith("/artifacts/7/zip"):  # the archive, or a redirect to `storage` elsewhere
                return Reply(body=zipped) if storage is None else Reply(status=302, body="", headers={"location": storage})
            return Reply(status=404, body={"message": "Not Found"})

        super().__init__(handle)


def zipped(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", method) as z:
        for name, content in members.items():
            z.writestr(name, content)
    return archive.getvalue()


def corrupt(archive: bytes, member: str) -> bytes:
    """`archive` with the compressed bytes of `member` garbled (its headers intact)."""
    raw = bytearray(archive)
    start = raw.find(member.encode()) + len(member)
    for k in range(start + 5, start + 40):
        raw[k] ^= 0xFF
    return bytes(raw)


def fetched(archive: bytes, folder: Path, storage: str | None = None) -> tuple[object, str]:
    with Artifact(archive, storage) as github:
        return fetch_auto_baseline(folder, {**ENV, "GITHUB_API_URL": github.url})


RUN_JSON = json.dumps({"results": []}).encode() * 200  # compressible: its deflated bytes can be garbled


@pytest.mark.parametrize("damage", [
    lambda: corrupt(zipped({"run.json": RUN_JSON}), "run.json"),  # zlib.error inside the member
    lambda: zipped({"run.json": RUN_JSON})[:-30],  # cut short: no central directory
    lambda: b"PK\x03\x04" + b"\x00" * 40,  # not a zip at all
], ids=["garbled member", "cut short", "not a zip"])
def test_a_damaged_artifact_is_the_note_and_leaves_no_baseline_json(tmp_path: Path, damage: Callable[[], bytes]) -> None:
    data, note = fetched(damage(), tmp_path / "run")
    assert data is None and note.startswith("the evalspec-report artifact could not be read: "), note
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == []


def test_a_run_folder_that_cannot_be_written_is_the_note(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.write_text("", encoding="utf-8")  # stands in for a read-only folder or a full disk (tests run as root)
    data, note = fetched(zipped({"run.json": RUN_JSON}), folder)
    assert data is None and note == f"the evalspec-report artifact could not be kept in {folder}: File exists", note
    (folder := tmp_path / "run2").mkdir()
    (folder / "baseline.json").mkdir()
    data, note = fetched(zipped({"run.json": RUN_JSON}), folder)
    assert data is None and note.startswith(f"the evalspec-report artifact could not be kept in {folder}: "), note


def test_a_failed_attempt_leaves_no_earlier_baseline_json_to_be_taken_for_this_one(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "baseline.json").write_text("{}", encoding="utf-8")  # from the first attempt (`--resume`)
    data, note = fetched(zipped({"report.html": b"<html></html>"}), folder)
    assert (data, note) == (None, "the evalspec-report artifact has no run.json")
    assert not (folder / "baseline.json").exists()
    data, note = fetched(zipped({"run.json": b'{"results": "none"}'}), folder)  # refused by the reader
    assert data is None and note.startswith("the base branch's run.json"), note
    assert not (folder / "baseline.json").exists()


class CutShort:
    """Storage that promises `size` bytes and closes the connection after `sent` of them."""

    def __init__(self, sent: bytes, size: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/blob.zip"
        self.thread = threading.Thread(target=self._serve, args=(sent, size), daemon=True)
        self.thread.start()

    def _serve(self, sent: bytes, size: int) -> None:
        connection, _ = self.listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size + sent)
        self.listener.close()


def test_storage_elsewhere_gets_no_token_and_a_cut_download_or_its_500_is_the_note(tmp_path: Path) -> None:
    archive = zipped({"run.json": RUN_JSON})
    seen: list[str] = []

    def storage(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        seen.append(headers.get("authorization", ""))
        return Reply(status=500, body="storage is down")

    with LoopbackServer(storage) as elsewhere:  # another port: another origin
        data, note = fetched(archive, tmp_path / "a", f"{elsewhere.url}/blob.zip")
    assert seen == [""]  # the GitHub token never leaves for the storage host
    assert (data, note) == (None, "downloading the evalspec-report artifact failed: GitHub answered 500")
    cut = CutShort(archive[:100], len(archive))
    data, note = fetched(archive, tmp_path / "b", cut.url)
    assert data is None and note.startswith("downloading the evalspec-report artifact failed: "), note
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == []


class Answers(LoopbackServer):
    """A GitHub (or a proxy before it) whose answers are not what the REST API documents."""

    def __init__(self, runs: object, artifacts: object = None) -> None:
        def handle(method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
            url = urlsplit(path).path
            if url.endswith("/workflows/evals.yml/runs"):
                return Reply(body=runs)
            if url.endswith("/runs/42/artifacts"):
                return Reply(body=artifacts)
            return Reply(status=404, body={"message": "Not Found"})

        super().__init__(handle)


@pytest.mark.parametrize(("runs", "artifacts", "said"), [
    ("<html>Sign in to your proxy</html>", None,
     "GitHub's answer to GET /repos/acme/bot/actions/workflows/evals.yml/runs is not JSON: '<html>Sign in"),
    ([{"id": 42}], None, "GitHub's answer about the runs of evals.yml on main is not a JSON object"),
    ({"workflow_runs": [{}]}, None, "GitHub's answer about the runs of evals.yml on main has no run id"),
    ({"workflow_runs": "none"}, None, "GitHub's answer about the runs of evals.yml on main has no run id"),
    ({"workflow_runs": [{"id": 42}]}, {"artifacts": [{"name": "evalspec-report"}]},
     "GitHub's answer about the artifacts of run 42 has no artifact id"),
    ({"workflow_runs": [{"id": 42}]}, {"artifacts": "evalspec-report"},
     "GitHub's answer about the artifacts of run 42 has no artifact id"),
], ids=["not JSON", "a list", "a run without id", "runs not a list", "an artifact without id", "artifacts not a list"])
def test_an_answer_not_shaped_as_the_api_documents_is_the_note(tmp_path: Path, runs: object, artifacts: object,
                                                               said: str) -> None:
    with Answers(runs, artifacts) as github:
        data, note = fetch_auto_baseline(tmp_path, {**ENV, "GITHUB_API_URL": github.url})
    assert data is None and note.startswith(said), note


def test_an_artifact_of_an_earlier_evalspec_is_read_whole_and_brought_to_todays_shape(
        in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (in_tmp / "bot.py").write_text("def respond(messages, context):\n    return '好' if context['test_id'] == 'a' else '坏'\n",
                                   encoding="utf-8")
    (in_tmp / "s.yaml").write_text("providers: [{id: bot, python: bot.py:respond}]\ntests:\n"
                                   "  - {id: a, conversation: [{user: 你好, assert: [{equals: 好}]}]}\n"
                                   "  - {id: b, conversation: [{user: 你好, assert: [{equals: 好}]}]}\n", encoding="utf-8")
    assert CliRunner().invoke(main, ["run", "s.yaml", "-o", "today.json", "--no-cache"]).exit_code == 1
    old = json.loads(Path("today.json").read_text(encoding="utf-8"))
    del old["slas"], old["summary"]["measured"]  # as an evalspec before the shared report vocabulary wrote it
    for record in old["results"]:
        del record["base_id"]
    for verdict in old["verdicts"]:
        del verdict["category"]
    write_json(Path("old.json"), old)  # a record a line, as a streamed read could take it
    data, note = fetched(zipped({"run.json": Path("old.json").read_bytes()}), in_tmp / "run")
    assert isinstance(data, dict) and not isinstance(data["results"], JournalRecords), note
    today = read_run("today.json")
    assert [r["base_id"] for r in data["results"]] == ["a", "b"]
    assert (data["summary"], data["verdicts"], data["slas"]) == (today["summary"], today["verdicts"], today["slas"])
