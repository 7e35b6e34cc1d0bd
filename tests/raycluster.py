"""A two-node Ray cluster on this machine for the tests: `ray start --head` and a second node joining it.

Each node has its own temp dir, ports and working directory, and an `EVALSPEC_TEST_NODE` variable its
workers inherit (so a provider can say which node ran it). Stopping ends only the processes of this
cluster (found by its temp dirs), never another Ray on the machine.

Under pytest-xdist one cluster serves every worker (`shared`): the first worker that needs it starts it
and writes where it is into a file of the run's shared temp folder, the others read that file, and the
process that started the workers stops it when they are all done (tests/conftest.py). Each test's run is
a Ray job of its own (its own actors and worker processes), so tests on different workers do not meet.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

# no idle workers started ahead: every worker the tests use is an actor's (num_cpus=0), started for it, and
# the prestarted ones (4 a session, ~0.8 s of CPU each) were never used
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "RAY_enable_worker_prestart": "0",
           "RAY_prestart_worker_first_driver": "0"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ray_cli() -> str:
    return str(Path(sys.executable).with_name("ray")) if Path(sys.executable).with_name("ray").exists() else "ray"


class LocalCluster:
    def __init__(self, cpus_per_node: int = 1) -> None:
        # short: Ray's unix socket paths live under the temp dir and must stay under 108 characters
        self.base = Path(tempfile.mkdtemp(prefix="esray-", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.cpus = cpus_per_node
        self.nodes = {"head": self.base / "head", "second": self.base / "second"}
        self.groups: list[int] = []  # process groups of the nodes' daemons

    def _start(self, name: str, *args: str) -> None:
        node_dir = self.nodes[name]
        (node_dir / "cwd").mkdir(parents=True)
        ports = ["--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--metrics-export-port",
                 "--runtime-env-agent-port", "--node-manager-port", "--object-manager-port"]
        command = [ray_cli(), "start", *args, "--temp-dir", str(node_dir / "t"), "--num-cpus", str(self.cpus),
                   "--resources", f'{{"evalspec_{name}": 1}}', "--disable-usage-stats",
                   # no log monitor (drivers join with log_to_driver=False) and, below, no autoscaler
                   # monitor (the cluster never scales): daemons the tests do not use, seconds of CPU each
                   "--include-log-monitor", "false",
                   *[x for flag in ports for x in (flag, str(free_port()))]]
        # every process of the node inherits these: the tag finds them at stop, TMPDIR keeps workers' files here
        env = {**os.environ, **RAY_ENV, "EVALSPEC_TEST_NODE": name, "EVALSPEC_TEST_CLUSTER": str(self.base),
               "TMPDIR": str(node_dir)}
        # a session of its own: every daemon of the node stays in the process group `ray start` leads
        proc = subprocess.Popen(command, cwd=node_dir / "cwd", env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.groups.append(proc.pid)
        try:
            output, _ = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        if proc.returncode != 0:
            self.stop()
            raise RuntimeError(f"ray start ({name}) failed:\n{output}")

    def start(self, nodes: int = 2) -> LocalCluster:
        """The head, and (with `nodes=2`) the second node."""
        self._start("head", "--head", "--port", str(self.port), "--node-ip-address", "127.0.0.1",
                    "--include-dashboard", "false", "--no-monitor")
        if nodes > 1:
            self._start("second", "--address", self.address, "--node-ip-address", "127.0.0.1")
        return self

    def pids(self) -> list[int]:
        """Processes of this cluster: in one of its process groups, or carrying its tag (a worker that
        left the group)."""
        tag = f"EVALSPEC_TEST_CLUSTER={self.base}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                group = int((entry / "stat").read_text().rpartition(")")[2].split()[2])
                environ = (entry / "environ").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
            if group in self.groups or tag in environ.split(b"\0"):
                found.append(int(entry.name))
        return found

    def stop(self) -> None:
        # a moment for the daemons to end on SIGTERM, then SIGKILL: nothing of the cluster is kept (its temp dir
        # goes), and waiting seconds for a graceful Ray shutdown was the end of every run of the suite
        for sig, wait in ((signal.SIGTERM, 0.5), (signal.SIGKILL, 10.0)):
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self.pids():
                time.sleep(0.05)
        shutil.rmtree(self.base, ignore_errors=True)

    def env(self) -> dict[str, str]:
        """The environment of a driver joining this cluster."""
        return {**os.environ, **RAY_ENV}

    def to_json(self) -> str:
        return json.dumps({"base": str(self.base), "port": self.port, "cpus": self.cpus, "groups": self.groups})

    @classmethod
    def from_json(cls, text: str) -> LocalCluster:
        """The cluster another process started (`to_json`), to use or to stop."""
        data = json.loads(text)
        cluster = cls.__new__(cls)
        cluster.base, cluster.port, cluster.cpus = Path(data["base"]), int(data["port"]), int(data["cpus"])
        cluster.address = f"127.0.0.1:{cluster.port}"
        cluster.nodes = {"head": cluster.base / "head", "second": cluster.base / "second"}
        cluster.groups = [int(g) for g in data["groups"]]
        return cluster


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait here while the first starts the cluster
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def shared(folder: Path) -> LocalCluster:
    """The cluster of this run of the suite, started by the first process asking (`folder`: the temp folder
    the run's xdist workers share); `stop_shared(folder)` ends it."""
    with _locked(folder / "ray-cluster.lock"):
        where = folder / "ray-cluster.json"
        if where.is_file():
            return LocalCluster.from_json(where.read_text())
        cluster = LocalCluster().start()
        where.write_text(cluster.to_json())
        return cluster


def stop_shared(folder: Path) -> None:
    where = folder / "ray-cluster.json"
    if where.is_file():
        LocalCluster.from_json(where.read_text()).stop()
        where.unlink()
