"""Code cites the docs page a user reads, never the internal contract (docs/architecture.md#citations).

Every `docs/<lang>/<page>.md#<anchor>` named in evalspec/ must be a page that exists, and its anchor a
heading on that page, so a citation cannot rot when a page is renamed or a heading reworded."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"docs/((?:en|zh)/[\w/-]+\.md)(?:#([\w-]+))?")


def slug(heading: str) -> str:
    """mkdocs' default anchor of a heading (toc's slugify): punctuation dropped, lower case, hyphens."""
    text = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#").strip()) for line in page.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")}


def code_files() -> list[Path]:
    return sorted((ROOT / "evalspec").rglob("*.py"))


def test_the_code_never_cites_the_internal_contract() -> None:
    cited = [f"{p.relative_to(ROOT)}:{n}" for p in code_files()
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"SPEC\s*§|\bSPEC\b\s*$", line)]
    assert cited == [], f"cite a docs page, not SPEC: {cited[:10]}"


def test_every_cited_docs_page_and_anchor_exists() -> None:
    broken = []
    for p in code_files():
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            for page, anchor in CITATION.findall(line):
                target = ROOT / "docs" / page
                if not target.exists():
                    broken.append(f"{p.relative_to(ROOT)}:{n}: no page docs/{page}")
                elif anchor and anchor not in anchors(target):
                    broken.append(f"{p.relative_to(ROOT)}:{n}: no heading #{anchor} on docs/{page}")
    assert broken == [], "\n".join(broken[:20])
