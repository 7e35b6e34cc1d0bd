"""The screenshot of docs/en/agents.md#a-staged-journey-offline: the demo's staged journey in the HTML report.

    python docs/en/journey_screen.py [OUT]      # OUT: docs/en/img/journey-report.png by default

Runs suites/journey.yaml (the scripted buyer against the demo bot: no network, no API key) into a temporary
folder with `--html`, opens the report in the system Chromium (/usr/bin/chromium, driven by Playwright),
opens the journey's record and photographs it: its milestones line and its transcript.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
WIDTH = 1100


def main() -> None:
    from playwright.sync_api import sync_playwright

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "en" / "img" / "journey-report.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "EVALSPEC_LANG": "en"}
        (Path(tmp) / "suites").mkdir()  # a copy, so the report names suites/journey.yaml as the repository does
        shutil.copy(ROOT / "suites" / "journey.yaml", Path(tmp) / "suites")
        shutil.copytree(ROOT / "providers", Path(tmp) / "providers")
        done = subprocess.run([sys.executable, "-m", "evalspec", "run", "suites/journey.yaml",
                               "--no-cache", "-q", "--lang", "en", "--html", "report.html"], cwd=tmp, env=env,
                              capture_output=True, text=True, encoding="utf-8")
        if done.returncode != 0:
            raise SystemExit(f"evalspec run: exit {done.returncode}\n{done.stdout}{done.stderr}")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_context(viewport={"width": WIDTH, "height": 900}, device_scale_factor=1).new_page()
            page.goto((Path(tmp) / "report.html").as_uri())
            record = page.locator("details", has_text="staged-purchase").first
            if not record.evaluate("d => d.open"):
                record.locator("summary").first.click()
            record.scroll_into_view_if_needed()
            record.screenshot(path=str(out))
            browser.close()
    print(out)


if __name__ == "__main__":
    main()
