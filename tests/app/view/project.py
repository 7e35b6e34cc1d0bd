"""What the view tests share: a project with two real runs (a python bot, a loopback judge), the
served `evalspec view` with `get` and `post` against it, and the system Chromium on a thread of its own."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body

T = TypeVar("T")
REVIEWER = "审核员小王"
BOT = '''
from pathlib import Path


def respond(messages, context):
    text = messages[-1]["content"]
    version = Path(__file__).with_name("version.txt").read_text().strip()
    if "价格" in text:
        return "价格请拨打 13812345678 咨询"
    if "退款" in text:
        return "七天内可以退款"
    if "关门" in text:
        return "晚上九点关门"
    return ("您好，" if version == "v2" else "收到：") + text
'''
SUITE = """\
# 销售客服回归剧本（人工评审前）
providers:
  - id: bot
    python: bot.py:respond   # 演示机器人

judge: {{model: openai/judge, api_base: "{judge}", api_key: test}}

tests:
  - id: greeting
    name: 问候
    tags: [smoke]
    conversation:
      - user: 你好
        assert:
          - contains: 您好
  - id: price
    name: 询价不留手机号
    tags: [redline]
    conversation:
      - user: 价格多少？
        assert:
          - not-regex: "1[3-9]\\\\d{{9}}"
  # 草稿：退款政策还没定
  - id: refund
    name: 退款政策
    draft: true   # 待评审
    conversation:
      - user: 可以退款吗？
        assert:
          - contains: 退款
  - id: hours
    name: 营业时间
    draft: true
    conversation:
      - user: 晚上几点关门？
        assert:
          - contains: 十点
  - id: polite
    name: 语气礼貌
    conversation:
      - user: 你们几点关门？
    assert:
      - llm-rubric: 回复语气礼貌
"""


@dataclass
class Project:
    root: Path
    runs: list[str]  # run ids, oldest first

    @property
    def suite(self) -> Path:
        return self.root / "suites" / "sales.yaml"

    def run_json(self, run_id: str) -> dict[str, Any]:
        return dict(json.loads((self.root / ".evalspec" / "runs" / run_id / "run.json").read_text(encoding="utf-8")))

    def lines(self, name: str) -> list[str]:
        path = self.root / ".evalspec" / name
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def make_project(root: Path) -> Project:
    """suites/sales.yaml run twice (v1, then v2: the greeting fixed), its judge a loopback server."""
    (root / "suites").mkdir(parents=True)
    (root / "suites" / "bot.py").write_text(BOT, encoding="utf-8")
    verdict = json.dumps({"reason": "语气礼貌", "pass": True}, ensure_ascii=False)
    runs = []
    cwd = Path.cwd()
    with OpenAIServer(lambda request, n: Reply(body=chat_body(verdict))) as judge:
        (root / "suites" / "sales.yaml").write_text(SUITE.format(judge=judge.base), encoding="utf-8")
        os.chdir(root)
        try:
            for version in ("v1", "v2"):
                (root / "suites" / "version.txt").write_text(version, encoding="utf-8")
                code, out = invoke("run", "suites/sales.yaml", "--no-cache", "-q")
                assert code == 1, out
                runs.append(out.split("run.json: ")[1].split()[0].split("/")[-2])
        finally:
            os.chdir(cwd)
    return Project(root, runs)


@dataclass
class View:
    url: str  # the printed line: http://127.0.0.1:PORT/?token=…
    base: str
    token: str
    process: subprocess.Popen[str]


CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(os.environ.get("EVALSPEC_VIEW_SHOTS", "/tmp/view-shots"))


class Chromium:
    """The system Chromium under Playwright's sync API, on a thread of its own: that API keeps an event
    loop marked running on its thread, which would break every later `asyncio.run` of the session."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="chromium")
        self.playwright, self.browser = self.pool.submit(self._start).result(timeout=120)

    @staticmethod
    def _start() -> tuple[Any, Any]:
        from playwright.sync_api import sync_playwright

        playwright = sync_playwright().start()
        return playwright, playwright.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])

    def run(self, steps: Callable[..., T], *args: Any) -> T:
        """`steps(*args)` on the browser's thread; what it raises is raised here."""
        return self.pool.submit(steps, *args).result(timeout=120)

    def close(self) -> None:
        self.run(lambda: (self.browser.close(), self.playwright.stop()))
        self.pool.shutdown()


def get(view: View, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(view.base.rstrip("/") + path, timeout=10, **kwargs)


def post(view: View, path: str, body: Any, token: str | None = "header", **kwargs: Any) -> httpx.Response:
    headers = {"X-Evalspec-Token": view.token} if token == "header" else {}
    content = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return httpx.post(view.base.rstrip("/") + path, content=content.encode(), headers=headers, timeout=10, **kwargs)
