"""docs/zh/walkthrough.md: the Chinese walk-through is linked from 快速开始 and the site's nav, shows the
screenshots docs/zh/screens.py makes (each there, of its width, small), and the validate screen it shows is
what validate prints for the file it shows. Its YAML blocks are validated with every page's
(tests/test_docs.py::test_every_yaml_example_validates_as_the_page_says)."""

from __future__ import annotations

import re
import struct
import sys
from pathlib import Path

import pytest

from tests.helpers import invoke

ROOT = Path(__file__).resolve().parents[1]
ZH = ROOT / "docs" / "zh"
PAGE = ZH / "walkthrough.md"
SHOTS = [f"{name}-{width}.png" for width in (1400, 420)
         for name in ("view-home", "view-run", "view-review", "view-diff", "report")]
FENCE = re.compile(r"^```text\n(.*?)^```$", re.S | re.M)


def screens() -> object:
    sys.path.insert(0, str(ZH))
    try:
        import screens as module
    finally:
        sys.path.remove(str(ZH))
    return module


def test_the_walkthrough_is_linked_from_the_quick_start_and_the_nav() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert text.startswith("# ") and "走查" in text.splitlines()[0]
    assert "](walkthrough.md)" in (ZH / "getting-started.md").read_text(encoding="utf-8")
    assert "zh/walkthrough.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for subject in ("recorded-conversations.md", "review.md", "coverage.md", "ci.md"):  # the path it walks
        assert f"]({subject})" in text, subject


@pytest.mark.parametrize("name", SHOTS)
def test_each_screenshot_is_shown_committed_of_its_width_and_small(name: str) -> None:
    assert f"](img/{name})" in PAGE.read_text(encoding="utf-8"), f"walkthrough.md does not show {name}"
    png = (ZH / "img" / name).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    page = int(name.split("-")[-1].removesuffix(".png"))
    assert width == page or ("review" in name and width < page)  # the panel: one element of the page
    assert 300 <= height <= screens().MAX_HEIGHT  # type: ignore[attr-defined]
    assert len(png) < 300_000, f"{name}: {len(png)} bytes"
    assert f'"{name.rsplit("-", 1)[0]}' in (ZH / "screens.py").read_text(encoding="utf-8").replace("f\"", "\"")


def test_the_validate_screen_it_shows_is_what_validate_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = FENCE.findall(PAGE.read_text(encoding="utf-8"))
    suite = next(b for b in blocks if "python：" in b)
    shown = next(b for b in blocks if b.startswith("$ evalspec validate suites/typos.yaml\n")).splitlines()[1:]
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers" / "dealer.py").write_text(screens().BOT, encoding="utf-8")  # type: ignore[attr-defined]
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "typos.yaml").write_text(suite, encoding="utf-8")
    monkeypatch.delenv("EVALSPEC_LANG")  # the file's Chinese user turns choose the language
    monkeypatch.chdir(tmp_path)
    code, out = invoke("validate", "suites/typos.yaml")
    assert code == 2 and out.splitlines() == shown
