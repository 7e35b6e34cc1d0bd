"""`--executor ray`: the same run on a local Ray cluster (ray is the optional extra `evalspec[ray]`)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT
from tests.raycluster import LocalCluster


def test_ray_run_matches_the_local_run(in_tmp: Path, ray_cluster: LocalCluster) -> None:
    suites = [str(p) for p in sorted((ROOT / "suites").glob("*.yaml"))]
    for executor, out in (("local", "local.json"), ("ray", "ray.json")):
        where = ["--address", ray_cluster.address] if executor == "ray" else []  # the session's cluster
        proc = subprocess.run([sys.executable, "-m", "evalspec", "run", *suites, "--executor", executor, *where,
                               "-q", "--no-cache", "-o", out], cwd=in_tmp, env=ray_cluster.env(),
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    local = json.loads((in_tmp / "local.json").read_text())
    remote = json.loads((in_tmp / "ray.json").read_text())
    assert [(r["key"], r["status"], r["score"]) for r in remote["results"]] == \
        [(r["key"], r["status"], r["score"]) for r in local["results"]]
    assert remote["curves"] == local["curves"]


def test_address_needs_the_ray_executor(in_tmp: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", str(ROOT / "suites" / "coreference.yaml"),
                           "--address", "127.0.0.1:6379"], cwd=in_tmp, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--address goes with --executor ray" in proc.stderr


def test_an_address_where_no_cluster_answers_fails_within_seconds(in_tmp: Path) -> None:
    if importlib.util.find_spec("ray") is None:  # (not imported here: a second of CPU in this process)
        pytest.skip("ray is not installed (pip install 'evalspec[ray]')")
    import socket
    import time

    with socket.socket() as sock:  # a port that was free a moment ago: nobody listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", str(ROOT / "suites" / "coreference.yaml"),
                           "--executor", "ray", "--address", f"127.0.0.1:{port}", "-q"], cwd=in_tmp,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in proc.stderr
    assert time.monotonic() - start < 60  # seconds under load, not a hang
    assert not list(in_tmp.glob(".evalspec/runs/*/journal.jsonl"))  # nothing was run


def test_select_best_compares_candidates_played_on_ray_workers_in_the_driver(in_tmp: Path,
                                                                            ray_cluster: LocalCluster) -> None:
    from tests.play.helpers import judge_picking, outcome, suite
    from tests.servers import OpenAIServer

    with OpenAIServer(judge_picking("LOL")) as server:
        path = suite(in_tmp, server, providers="plain, caller, funny")
        proc = subprocess.run([sys.executable, "-m", "evalspec", "run", str(path), "--executor", "ray",
                               "--address", ray_cluster.address, "-q", "--no-cache", "-o", "ray.json"],
                              cwd=in_tmp, env=ray_cluster.env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the candidates not chosen fail
    assert len(server.chats()) == 2  # one comparison, asked in both orders
    won = [k for k, (_, passed) in outcome(json.loads((in_tmp / "ray.json").read_text())).items() if passed]
    assert won == ["tweet@funny"]
