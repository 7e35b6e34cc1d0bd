"""Figures of the code's shape (docs/architecture.md): run from the repository root.

    python bench/bench_structure.py

Prints the package's lines, `dict[str, Any]` per 1,000 lines, citations of an internal document, the
longest functions, the CLI's size and the tests' layout figures (reply predicates outside their owner are
held at 0 by tests/structure/test_reply_owner.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def functions(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.end_lineno - n.lineno + 1 if n.end_lineno else 0, f"{path.relative_to(ROOT)}:{n.lineno} {n.name}")
            for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def main() -> None:
    files = sorted((ROOT / "evalspec").rglob("*.py"))
    texts = {p: p.read_text(encoding="utf-8") for p in files}
    lines = sum(len(t.splitlines()) for t in texts.values())
    untyped = sum(t.count("dict[str, Any]") for t in texts.values())
    spec = sum(len(re.findall(r"SPEC\s*§", t)) for t in texts.values())
    longest = sorted((f for p in files for f in functions(p)), reverse=True)[:5]
    cli = ROOT / "evalspec" / "app" / "cli" / "main.py"
    tests = sorted((ROOT / "tests").rglob("*.py"))
    over = [str(p.relative_to(ROOT)) for p in tests if len(p.read_text(encoding="utf-8").splitlines()) > 500]
    cross = sum(len(re.findall(r"^\s*from tests\.\S*\btest_\w+ import", p.read_text(encoding="utf-8"), re.M))
                for p in tests)
    print(f"package: {len(files)} files, {lines:,} lines")
    print(f"dict[str, Any]: {untyped} ({untyped * 1000 / lines:.1f} per 1,000 lines)")
    print(f"SPEC citations in code: {spec}")
    print(f"app/cli/main.py: {len(cli.read_text(encoding='utf-8').splitlines())} lines")
    print("longest functions: " + "; ".join(f"{where} ({size} lines)" for size, where in longest))
    print(f"test modules over 500 lines: {len(over)} {over}; imports of test modules: {cross}")


if __name__ == "__main__":
    main()
