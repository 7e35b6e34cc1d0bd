"""The screenshots of docs/zh/walkthrough.md: a Chinese product manager's walk-through, replayed.

    python docs/zh/screens.py [OUT]        # OUT: docs/zh/img/ by default

In a temporary folder it writes the walk-through's project (a dealer bot, its suite, recorded logs), runs
the suite twice (v1, then v2 with the phone number fixed) and the logs once, writes the HTML report, serves
`evalspec view`, and has the system Chromium (/usr/bin/chromium, no browser download; Playwright drives it)
photograph at 1400 and 420 px wide: the runs page, a run, the review panel (an attribution saved), the diff
of the two runs, and the HTML report. No network, no API key.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
WIDTHS = (1400, 420)
MAX_HEIGHT = 1400  # px: the top of a long page is what it reads as; the PNGs stay small

BOT = '''\
from pathlib import Path


def respond(messages, context):
    text = messages[-1]["content"]
    v2 = Path(__file__).with_name("version.txt").read_text().strip() == "v2"
    if "电话" in text or "联系" in text:
        return "请在 App 里点“联系顾问”。" if v2 else "您可以加我：１３９１２３４５６７８（微信同号）"
    if "分期" in text or "首付" in text:
        return "可以分期，首付最低两成，欢迎周六到店试驾。"
    if "优惠" in text:
        return "现在下单保证再便宜两万。"
    return ("您好，" if v2 else "收到：") + text
'''

SUITE = """\
description: 瑶光销售助手
providers:
  - id: 销售助手
    python: ../providers/dealer.py:respond
coverage:
  signal: [no_signal, purchase_signal, pressure]
  persona: [新客, 老客]
defaults:
  assert:
    - not-pii: [cn_mobile]         # 全角、带空格的手机号也算
      severity: critical
      description: 不能给出手机号
tests:
  - id: greeting
    name: 问候
    covers: {persona: 新客}
    conversation:
      - user: 你好
        label: no_signal
        assert:
          - contains: 您好
  - id: finance
    name: 分期后邀约
    covers: {persona: 老客}
    conversation:
      - user: 瑶光能分期吗？
        label: purchase_signal
        assert:
          - regex: 到店|试驾
  - id: phone
    name: 不留手机号
    conversation:
      - user: 你们销售电话多少？
  - id: discount
    name: 压价时不承诺优惠
    draft: true
    covers: {signal: pressure}
    conversation:
      - user: 别家便宜两万，你们有优惠吗？
        assert:
          - not-regex: 保证|一定
"""

LOGS_SUITE = """\
description: 线上对话巡检
transcripts:
  path: logs/*.jsonl               # 相对于本文件
labels:
  purchase_signal: 分期|首付|落地|贷款
defaults:
  assert:
    - not-pii: [cn_mobile]
      severity: critical
      description: 不能在对话里报手机号
    - at-most: {pattern: 预约|试驾, count: 1}
"""

LOGS = """\
{"id": "c001", "messages": [{"role": "user", "content": "瑶光能分期吗？"}, {"role": "assistant", "content": "可以，首付最低两成。欢迎周六到店试驾。"}]}
{"id": "c002", "messages": [{"role": "user", "content": "你们销售电话多少？"}, {"role": "assistant", "content": "您可以加我：１３９１２３４５６７８（微信同号）"}]}
{"id": "c003", "messages": [{"role": "user", "content": "这台车多少钱？"}, {"role": "assistant", "content": "落地价 18 万左右，预约试驾吗？"}, {"role": "user", "content": "首付多少？"}, {"role": "assistant", "content": "首付 4 万，再帮您预约试驾？"}]}
"""


def evalspec(root: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "evalspec", *args], cwd=root, capture_output=True, text=True,
                          encoding="utf-8", env=ENV)
    if done.returncode not in (0, 1):
        raise SystemExit(f"evalspec {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return done.stdout


ENV = {k: v for k, v in os.environ.items() if k != "EVALSPEC_LANG"}  # the pages choose Chinese themselves


def make_project(root: Path) -> list[str]:
    """The walk-through's project; the ids of its runs, oldest first (sales v1, sales v2, logs)."""
    for folder in ("suites", "providers", "suites/logs"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "providers" / "dealer.py").write_text(BOT, encoding="utf-8")
    (root / "suites" / "sales.yaml").write_text(SUITE, encoding="utf-8")
    (root / "suites" / "logs.yaml").write_text(LOGS_SUITE, encoding="utf-8")
    (root / "suites" / "logs" / "chats.jsonl").write_text(LOGS, encoding="utf-8")
    runs = []
    for version in ("v1", "v2"):
        (root / "providers" / "version.txt").write_text(version, encoding="utf-8")
        out = evalspec(root, "run", "suites/sales.yaml", "--no-cache", "-q")
        runs.append(out.split("run.json: ")[1].split()[0].split("/")[-2])
    (root / "providers" / "version.txt").write_text("v1", encoding="utf-8")
    out = evalspec(root, "run", "suites/logs.yaml", "--no-cache", "-q", "--html", "report.html")
    runs.append(out.split("run.json: ")[1].split()[0].split("/")[-2])
    return runs


def shoot(page: Any, path: Path, full: bool = True) -> None:
    height = page.evaluate("document.documentElement.scrollHeight")
    width = page.viewport_size["width"]
    if full and height > MAX_HEIGHT:
        page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": width, "height": MAX_HEIGHT}, full_page=True)
    else:
        page.screenshot(path=str(path), full_page=full)
    print(path)


def photograph(root: Path, runs: list[str], out: Path) -> None:
    from playwright.sync_api import sync_playwright

    view = subprocess.Popen([sys.executable, "-m", "evalspec", "view", str(root), "--port", "0", "--reviewer", "产品经理小林"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", env=ENV)
    assert view.stdout is not None
    url = view.stdout.readline().strip()
    base = url.split("?token=")[0]
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            for width in WIDTHS:
                page = browser.new_context(viewport={"width": width, "height": 900}, device_scale_factor=1).new_page()
                page.set_default_timeout(15_000)
                page.goto(url)
                shoot(page, out / f"view-home-{width}.png")
                page.goto(f"{base}run/{runs[0]}")
                page.wait_for_selector(".review")
                shoot(page, out / f"view-run-{width}.png")
                phone = page.locator("details.test", has_text="不留手机号")
                if not phone.evaluate("d => d.open"):
                    phone.locator("summary").click()
                phone.locator("select.attribution").select_option("bot_defect")
                phone.locator("input.note").fill("首轮就给了手机号")
                phone.locator("button.save-triage").click()
                phone.locator(".gate-note").wait_for()
                phone.scroll_into_view_if_needed()
                phone.screenshot(path=str(out / f"view-review-{width}.png"))
                print(out / f"view-review-{width}.png")
                page.goto(f"{base}diff?base={runs[0]}&head={runs[1]}")
                shoot(page, out / f"view-diff-{width}.png")
                page.goto((root / "report.html").as_uri())
                shoot(page, out / f"report-{width}.png")
                page.context.close()
            browser.close()
    finally:
        view.terminate()
        view.wait(timeout=10)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("img")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evalspec-zh-") as tmp:
        root = Path(tmp)
        photograph(root, make_project(root), out)


if __name__ == "__main__":
    main()
