"""How folders of Rasa end-to-end tests / test stories, BotiumScript convos or DeepEval goldens import
(SPEC §24 "Importers", §31).

    python bench/bench_platform_importers.py FOLDER [FOLDER ...] --kind rasa|botium|deepeval [--validate] [--detail]

Keep the corpora outside the repository (e.g. /work/corpora/NAME); a folder's commit is read from
`git rev-parse HEAD` in it, or from a `.commit` file beside its content.

Prints one table, a row per folder: the source, its commit, the tests imported, what was left out (each
named below the table with its path relative to the folder and its reason), the source's checks kept vs
not converted, the suites written and, with `--validate`, how many validate as `evalspec validate` does
(written to a fresh folder under /tmp, as `evalspec import` writes them), and for Rasa and DeepEval the
silent changes: user turns whose text, read back by evalspec's suite loader, is not the source's text
(a test that sends `yes` must send "yes"). `--detail` adds each folder's check kinds, the top causes of
what was not converted and the first problem of each invalid suite.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Row:
    source: str
    commit: str
    files: int = 0
    tests: int = 0
    left_out: list[tuple[str, str]] = field(default_factory=list)
    kept: int = 0
    lost: int = 0
    suites: int = 0
    valid: int | None = None
    invalid: collections.Counter[str] = field(default_factory=collections.Counter)
    silent: list[str] | None = None
    refused: list[str] = field(default_factory=list)  # why `evalspec import` would write nothing (hollow)
    detail: list[str] = field(default_factory=list)


def _commit(folder: Path) -> str:
    mark = folder / ".commit"
    if mark.is_file():
        return mark.read_text().strip()[:12]
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        return out.stdout.strip()[:12]
    except (OSError, subprocess.CalledProcessError):
        return "-"


def _checks(test: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(test.get("assert") or [])
    for entry in test.get("conversation") or []:
        out += entry.get("assert") or []
    return out


def _kind(check: dict[str, Any]) -> str:
    return next((k for k in check if k not in ("scope", "threshold", "metric", "weight")), "?")


def _import(folder: Path, kind: str) -> tuple[list[Path], list[Any], list[tuple[str, str]]]:
    if kind == "rasa":
        from evalspec.authoring.importers.rasa import import_rasa

        sources = [p for p in folder.rglob("*") if p.suffix in (".yml", ".yaml")] if folder.is_dir() else [folder]
        suites, refused = import_rasa(folder)
        return sources, suites, refused
    if kind == "deepeval":
        from evalspec.authoring.importers.deepeval import import_deepeval

        sources = sorted(folder.rglob("*.json")) if folder.is_dir() else [folder]
        return sources, [import_deepeval(p) for p in sources], []
    from evalspec.authoring.importers.botium import import_botium

    sources = [p for p in folder.rglob("*") if ".convo." in p.name.lower()] if folder.is_dir() else [folder]
    suites, refused = import_botium(folder)
    return sources, suites, refused


def measure(folder: Path, kind: str, validate: bool) -> Row:
    from evalspec.authoring.importers import check_counts

    row = Row(folder.name, _commit(folder if folder.is_dir() else folder.parent))
    sources, suites, refused = _import(folder, kind)
    row.files, row.left_out, row.suites = len(sources), list(refused), len(suites)
    tests = [t for s in suites for t in s.data.get("tests") or []]
    row.tests = len(tests)
    for suite in suites:
        kept, lost = check_counts(suite)
        row.kept, row.lost = row.kept + kept, row.lost + lost
    kinds = collections.Counter(_kind(c) for t in tests for c in _checks(t))
    row.detail.append(f"checks written: {', '.join(f'{k} {n}' for k, n in kinds.most_common())}")
    causes = collections.Counter(re.sub(r"'[^']*'|\[[^\]]*\]|\d+", "…", note.split(": ", 1)[-1])[:90]
                                 for s in suites for note in s.not_converted)
    row.detail += [f"not converted {n:3}  {cause}" for cause, n in causes.most_common(6)]
    if validate and suites:
        _validate(suites, row, kind, folder)
    return row


def _validate(suites: list[Any], row: Row, kind: str, folder: Path) -> None:
    from evalspec.authoring.importers import ImportRefused, write_suites
    from evalspec.core.errors import ConfigError
    from evalspec.plan.preflight import prepare

    out = Path(tempfile.mkdtemp(prefix=f"bench-platform-{row.source}-"))
    try:
        written = write_suites(suites, out)  # as `evalspec import` writes them (hollow suites refused)
    except ImportRefused as exc:
        row.refused = [str(p) for p in exc.problems]
        written = write_suites(suites, out, allow_empty=True)
    row.valid = 0
    for path in written:
        if not path.name.endswith(".yaml") or "fragments" in path.relative_to(out).parts:
            continue
        try:
            prepare([path])
            row.valid += 1
        except ConfigError as exc:
            row.invalid[f"{path.relative_to(out)}: {exc.problems[0].message}"[:140]] += 1
        except Exception as exc:  # noqa: BLE001 - a bench reports anything
            row.invalid[f"{path.relative_to(out)}: {type(exc).__name__}: {exc}"[:140]] += 1
    if kind in ("rasa", "deepeval"):
        row.silent = _silent_changes(suites, out, kind, folder)


def _sent(path: Path) -> dict[str, list[str]]:
    """The user texts of each test of a written suite, as evalspec's suite loader reads them."""
    from evalspec.authoring.importers import unliteral
    from evalspec.config.yamlfile import load_yaml

    data, _ = load_yaml(path.read_text(encoding="utf-8"), str(path), [])
    out = {}
    for test in (data or {}).get("tests") or []:
        entries = test.get("conversation") or test.get("transcript") or []
        out[str(test.get("id"))] = [unliteral(str(e.get("user"))) if "user" in e else
                                    unliteral(str(e.get("content"))) for e in entries
                                    if "user" in e or e.get("role") == "user"]
    return out


def _source_texts(suite: Any, folder: Path, kind: str) -> list[list[str]]:
    """The user texts of each test case / story / golden of the suite's source, as the platform reads them."""
    if kind == "deepeval":
        from evalspec.authoring.importers.deepeval import _load, _turns

        path = folder if folder.is_file() else folder / suite.source
        return [[t["content"] for t in _turns(g) if t["role"] == "user"] for g in _load(path)]
    from evalspec.authoring.importers.rasa_stories import intent_message, strip_entities
    from evalspec.authoring.importers.yaml12 import load_yaml12

    path = folder / str(Path(suite.filename).parent) / suite.source if folder.is_dir() else folder
    data = load_yaml12(path.read_text(encoding="utf-8-sig"))
    if isinstance(data.get("test_cases"), list):
        cases = [c for c in data["test_cases"] if isinstance(c, dict)]
        return [[str(u.get("text") if isinstance(u, dict) else "" if u is None else u)
                 for step in c.get("steps") or [] if isinstance(step, dict) and "user" in step
                 for u in [step["user"]]] for c in cases]
    stories = [s for s in data["stories"] if isinstance(s, dict)]
    return [[strip_entities(str("" if step["user"] is None else step["user"]).strip())[0] if "user" in step
             else intent_message(step)[0]  # an intent without text: Rasa sends `/intent`
             for step in s.get("steps") or []
             if isinstance(step, dict) and ("user" in step or step.get("intent") is not None)] for s in stories]


def _silent_changes(suites: list[Any], out: Path, kind: str, folder: Path) -> list[str]:
    changes = []
    for suite in suites:
        sent = list(_sent(out / suite.filename).items())
        try:
            source = _source_texts(suite, folder, kind)
        except Exception as exc:  # noqa: BLE001 - a bench reports anything
            changes.append(f"{suite.filename}: source not re-read ({type(exc).__name__}: {exc})")
            continue
        if len(source) != len(sent):
            changes.append(f"{suite.filename}: {len(source)} source tests, {len(sent)} written")
        for (test_id, texts), want in zip(sent, source, strict=False):
            for i, (got, expected) in enumerate(zip(texts, want, strict=False)):
                if got != expected:
                    changes.append(f"{suite.filename} {test_id} turn {i + 1}: sends {got!r}, source {expected!r}")
            if len(texts) != len(want):
                changes.append(f"{suite.filename} {test_id}: {len(texts)} user turns, source {len(want)}")
    return changes


def _table(rows: list[Row]) -> None:
    head = ["source", "commit", "files", "tests", "left out", "checks kept/not", "suites", "valid", "silent", "refused"]
    body = [[r.source, r.commit, str(r.files), str(r.tests), str(len(r.left_out)), f"{r.kept}/{r.lost}",
             str(r.suites), "-" if r.valid is None else f"{r.valid}/{r.valid + sum(r.invalid.values())}",
             "-" if r.silent is None else str(len(r.silent)), "yes" if r.refused else "-"] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    for line in [head, ["-" * w for w in widths], *body]:
        print("| " + " | ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--kind", choices=["rasa", "botium", "deepeval"], required=True)
    parser.add_argument("--validate", action="store_true")
    parser.add_argument("--detail", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    rows = [measure(folder, args.kind, args.validate) for folder in args.folders]
    _table(rows)
    for row in rows:
        if row.left_out:
            print(f"\n{row.source}: left out")
            for name, why in row.left_out:
                print(f"  {name}: {why[:160]}")
        if row.invalid:
            print(f"\n{row.source}: invalid")
            for message, n in row.invalid.most_common():
                print(f"  {n:3}  {message}")
        if row.refused:
            print(f"\n{row.source}: refused as hollow (`evalspec import` writes nothing without --allow-empty)")
            for problem in row.refused[:10]:
                print(f"  {problem[:160]}")
        if row.silent:
            print(f"\n{row.source}: silent changes")
            for change in row.silent[:20]:
                print(f"  {change}")
        if args.detail:
            print(f"\n{row.source}:")
            for line in row.detail:
                print(f"  {line}")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], default=str, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    sys.exit(main())
