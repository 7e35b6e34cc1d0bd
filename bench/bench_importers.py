"""How promptfoo's example configs import: ok / refused / invalid / hollow / crash.

    python bench/bench_importers.py FOLDER [--show invalid|refused|crash|hollow] [--causes]

Model API keys are set to placeholders (validation checks that a key is there; nothing is called).
FOLDER holds promptfoo configs (every `promptfooconfig*.yaml` under it is imported). Each is imported
into a fresh folder under /tmp and validated as `evalspec validate` does (load, plan, preflight):

- ok: the suite validates and every test checks something (its own checks, its turns' or the defaults');
- refused: the importer refused, with a reason (nothing written);
- invalid: it was written but does not validate;
- hollow: it validates but a test checks nothing (an importer must refuse instead);
- crash: anything else escaped the importer.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

from evalspec.core.errors import ConfigError


def checks_nothing(suite: object) -> list[str]:
    """The ids of the suite's tests that check nothing."""
    return [t.id for t in suite.tests  # type: ignore[attr-defined]
            if not t.asserts and not any(turn.asserts for turn in t.conversation)]


def classify(config: Path, out: Path) -> tuple[str, str]:
    from evalspec.authoring.importers import write_suites
    from evalspec.authoring.importers.promptfoo import import_promptfoo
    from evalspec.plan.preflight import prepare

    try:
        imported = import_promptfoo(config, out)
    except ConfigError as exc:
        return "refused", str(exc.problems[0].message if exc.problems else exc)[:160]
    except Exception as exc:  # noqa: BLE001 - what is measured
        return "crash", f"{type(exc).__name__}: {exc} @ {traceback.extract_tb(exc.__traceback__)[-1].lineno}"
    try:
        paths = [p for p in write_suites([imported], out) if p.suffix == ".yaml"]
    except ConfigError as exc:
        return "refused", str(exc.problems[0].message if exc.problems else exc)[:160]
    except Exception as exc:  # noqa: BLE001
        return "crash", f"write: {type(exc).__name__}: {exc}"
    try:
        suites, _plan = prepare(paths)
    except ConfigError as exc:
        return "invalid", "; ".join(p.message for p in exc.problems[:2])[:200]
    except Exception as exc:  # noqa: BLE001
        return "crash", f"validate: {type(exc).__name__}: {exc}"
    hollow = [tid for s in suites for tid in checks_nothing(s)]
    if hollow:
        return "hollow", f"{len(hollow)} test(s) check nothing: {', '.join(hollow[:3])}"
    return "ok", ""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--show", action="append", default=[])
    parser.add_argument("--causes", action="store_true", help="the most common reasons per class")
    args = parser.parse_args()
    from evalspec.core.model_keys import KEY_ENV

    for name in (*KEY_ENV.values(), "PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY"):
        os.environ.setdefault(name, "sk-bench-not-a-key")  # validate as a team with its keys set would
    configs = sorted(args.folder.rglob("promptfooconfig*.yaml"))
    rows: dict[str, list[tuple[Path, str]]] = collections.defaultdict(list)
    scratch = Path(tempfile.mkdtemp(prefix="bench-importers-"))
    try:
        for i, config in enumerate(configs):
            out = scratch / str(i)
            status, why = classify(config, out)
            rows[status].append((config.relative_to(args.folder), why))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    total = len(configs)
    print(f"{total} configs under {args.folder}")
    for status in ("ok", "refused", "invalid", "hollow", "crash"):
        n = len(rows[status])
        print(f"  {status:8} {n:4}  {100 * n / max(total, 1):5.1f}%")
    for status in args.show:
        print(f"\n{status}:")
        for path, why in rows[status]:
            print(f"  {path}: {why}")
    if args.causes:
        for status in ("refused", "invalid", "hollow"):
            counter = collections.Counter(why.split(":")[0][:70] for _, why in rows[status])
            print(f"\n{status}, top causes:")
            for why, n in counter.most_common(8):
                print(f"  {n:4}  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
