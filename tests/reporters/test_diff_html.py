"""The baseline section of the HTML report in headless Chromium: escaped, and never wider than a 420-px screen."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from evalspec.reporters.diff import html_section
from evalspec.results.compare import compare_runs
from tests.results.helpers import rec, run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def test_the_section_fits_420_px_and_shows_replies_as_text(tmp_path: Path) -> None:
    long = "<script>document.title='pwned'</script>" + "没有提到首付比例和月供金额" * 12 + "averyveryverylongwordwithoutspaces" * 4
    failing = [{"type": "contains", "pass": False, "reason": long, "evidence": [{"turn": 1, "text": long}]}]
    diff = compare_runs(run(rec("a-very-long-test-id-that-keeps-going-and-going", "passed")),
                        run(rec("a-very-long-test-id-that-keeps-going-and-going", "failed", assertions=failing)))
    page = tmp_path / "section.html"
    page.write_text('<!doctype html><meta charset="utf-8"><style>table{border-collapse:collapse;width:100%}'
                    'td,th{padding:6px 8px}</style><body style="margin:0"><div id="box" style="width:420px">'
                    f"{html_section(diff)}</div><script>document.title='W'+"
                    "document.getElementById('box').scrollWidth</script>", encoding="utf-8")
    if not Path(CHROMIUM).exists():
        pytest.skip("headless Chromium is not installed")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=90, check=True).stdout
    (width,) = re.findall(r"<title>W(\d+)</title>", dom)
    assert int(width) <= 420
    assert "&lt;script&gt;" in dom and "pwned" not in re.findall(r"<title>([^<]*)</title>", dom)[0]
