"""A two-node Ray cluster on this machine for the tests: `ray start --head` and a second node joining it.

Each node has its own temp dir, ports and working directory, and an `EVALSPEC_TEST_NODE` variable its
workers inherit (so a provider can say which node ran it). Stopping ends only the processes of this
cluster (found by its temp dirs), never another Ray on the machine.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
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
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self.pids():
                time.sleep(0.2)
        shutil.rmtree(self.base, ignore_errors=True)

    def env(self) -> dict[str, str]:
        """The environment of a driver joining this cluster."""
        return {**os.environ, **RAY_ENV}
