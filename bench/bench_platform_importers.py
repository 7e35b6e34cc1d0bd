"""How a folder of Rasa end-to-end tests or BotiumScript convos imports (SPEC §24 "Importers").

    python bench/bench_platform_importers.py FOLDER --kind rasa|botium|deepeval [--validate]

Prints: source files, imported files, tests written, checks written (by kind), the files or convos left
out with their reasons, the source's checks kept vs not converted, and the top causes of what was not
converted. `--validate` also writes the suites to a
fresh folder under /tmp and validates each as `evalspec validate` does (counts valid / invalid, with the
first problem of each invalid one).
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import tempfile
from pathlib import Path
from typing import Any


def _checks(test: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(test.get("assert") or [])
    for entry in test.get("conversation") or []:
        out += entry.get("assert") or []
    return out


def _fragment_checks(files: dict[str, str]) -> list[dict[str, Any]]:
    import yaml

    out: list[dict[str, Any]] = []
    for name, text in files.items():
        if name.endswith(".yaml"):
            for entry in (yaml.safe_load(text) or {}).get("conversation") or []:
                out += entry.get("assert") or []
    return out


def _kind(check: dict[str, Any]) -> str:
    return next(k for k in check if k not in ("scope", "threshold", "metric", "weight"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--kind", choices=["rasa", "botium", "deepeval"], required=True)
    parser.add_argument("--validate", action="store_true")
    args = parser.parse_args()
    if args.kind == "rasa":
        from evalspec.authoring.importers.rasa import import_rasa

        sources = [p for p in args.folder.rglob("*") if p.suffix in (".yml", ".yaml")]
        suites, refused = import_rasa(args.folder)
    elif args.kind == "deepeval":
        from evalspec.authoring.importers.deepeval import import_deepeval

        sources = sorted(args.folder.rglob("*.json")) if args.folder.is_dir() else [args.folder]
        suites, refused = [import_deepeval(p) for p in sources], []
    else:
        from evalspec.authoring.importers.botium import import_botium

        sources = [p for p in args.folder.rglob("*") if ".convo." in p.name.lower()]
        suites, refused = import_botium(args.folder)
    tests = [t for s in suites for t in s.data["tests"]]
    checks = [c for t in tests for c in _checks(t)] + [c for s in suites for c in _fragment_checks(s.files)]
    kinds = collections.Counter(_kind(c) for c in checks)
    print(f"files: {len(sources)}")
    print(f"imported: {len(suites)}")
    print(f"tests written: {len(tests)}")
    print(f"checks written: {len(checks)} ({', '.join(f'{k} {n}' for k, n in kinds.most_common())})")
    from evalspec.authoring.importers import hollow_problems

    hollow = [str(p) for s in suites for p in hollow_problems(s)]
    print(f"hollow (the import exits 2 unless --allow-empty): {len(hollow)}")
    for problem in hollow[:5]:
        print(f"  {problem}")
    from evalspec.authoring.importers import check_counts

    kept = sum(check_counts(s)[0] for s in suites)
    lost = sum(check_counts(s)[1] for s in suites)
    print(f"source checks: {kept} kept, {lost} not converted")
    print(f"refused / left out: {len(refused)}")
    for name, reason in refused[:8]:
        print(f"  {name}: {reason[:100]}")
    for reason, n in collections.Counter(r.split(" (")[0].split(":")[0] for _, r in refused).most_common():
        print(f"  {n:3}  {reason}")
    causes = collections.Counter(re.sub(r"'[^']*'|\[[^\]]*\]|\d+", "…", note.split(": ", 1)[-1])[:90]
                                 for s in suites for note in s.not_converted)
    print(f"not converted: {sum(causes.values())} note(s)")
    for cause, n in causes.most_common(8):
        print(f"  {n:3}  {cause}")
    if args.validate:
        _validate(suites)


def _validate(suites: list[Any]) -> None:
    from evalspec.authoring.importers import write_suites
    from evalspec.core.errors import ConfigError
    from evalspec.plan.preflight import prepare

    out = Path(tempfile.mkdtemp(prefix="bench-platform-"))
    written = write_suites(suites, out, allow_empty=True)
    valid, invalid = 0, collections.Counter[str]()
    for path in written:
        if not path.name.endswith(".yaml") or "fragments" in path.parts:
            continue
        try:
            prepare([path])
            valid += 1
        except ConfigError as exc:
            invalid[exc.problems[0].message[:100]] += 1
        except Exception as exc:  # noqa: BLE001 - a bench reports anything
            invalid[f"{type(exc).__name__}: {exc}"[:100]] += 1
    print(f"validate: {valid} valid, {sum(invalid.values())} invalid ({out})")
    for message, n in invalid.most_common(5):
        print(f"  {n:3}  {message}")


if __name__ == "__main__":
    sys.exit(main())
