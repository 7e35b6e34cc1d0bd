"""A diff whose temporary database cannot be written (a full disk, here a file size limit) is an OSError
naming the folder, as every failed write is (the command then says so and exits 2), never an sqlite3
traceback (docs/en/troubleshooting.md#resuming-and-storage)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import evalspec

ROOT = Path(evalspec.__file__).parent.parent

LIMITED = textwrap.dedent("""
    import errno, json, resource, signal
    from evalspec.results.compare import compare_runs
    from tests.results.helpers import rec, run

    # long ids: the few fields the join keeps of each record overflow its 2 MB page cache onto disk
    records = [rec(f"{i}-" + "长" * 700, "passed") for i in range(3000)]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    try:
        compare_runs(run(*records), run(*records), rows_on_disk=True)
        print(json.dumps({"raised": None}))
    except OSError as exc:
        print(json.dumps({"raised": type(exc).__name__, "errno": exc.errno, "filename": exc.filename,
                          "says": exc.strerror}, ensure_ascii=False))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ as Linux has them")
def test_a_diff_whose_temporary_database_cannot_grow_says_where_it_is_written(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", LIMITED], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in done.stderr, done.stderr  # neither the join nor a temporary file's close
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["raised"] == "OSError" and said["filename"] == str(tmp_path)
    assert "temporary database" in said["says"] and "TMPDIR" in said["says"]
