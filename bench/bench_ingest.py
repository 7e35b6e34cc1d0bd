"""Driver ingest (SPEC §15): CPU per finished record on the driver — redact, append to the journal,
keep the light record — which bounds a run whose conversations play on other workers.

    python bench/bench_ingest.py [-n 20000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=20000)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    import json

    from bench_scale import BOT, SUITE

    from evalspec.core.redact import redact
    from evalspec.results.journal import Journal
    from evalspec.results.stream import light

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bot.py").write_text(BOT, encoding="utf-8")
        (folder / "s.yaml").write_text(SUITE.format(n=1), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "evalspec", "run", "s.yaml", "-q", "-o", "r.json"], cwd=folder,
                       capture_output=True, check=False)
        line = next((folder / ".evalspec" / "runs").glob("*/journal.jsonl")).read_text(encoding="utf-8")
        record = json.loads(line.splitlines()[0])
        journal = Journal(folder / "ingest.jsonl")
        start = time.process_time()
        for _ in range(args.n):
            kept = redact(record, {"sk-not-a-real-secret"})
            journal.write(kept)
            light(kept)
        journal.close()
        cpu = time.process_time() - start
    print(f"record {len(line.encode()):,} bytes; {args.n:,} records in {cpu:.2f} s CPU: "
          f"{args.n / cpu:,.0f} records/s, {cpu / args.n * 1e6:.0f} µs each")


if __name__ == "__main__":
    main()
