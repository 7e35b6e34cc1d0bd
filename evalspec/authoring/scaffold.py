"""`evalspec init`: a first suite, a provider to edit, and a GitHub workflow that gates pull requests."""

from __future__ import annotations

from pathlib import Path

from evalspec.core.errors import ConfigError, Problem

BOT = '''"""Your system under test. evalspec calls respond(messages, context) once per user turn.

messages: the OpenAI-style history, ending with the new user message.
context: thread_id, vars, test_id, turn. Return a string, or a dict with "content".
Replace the body with a call to your bot (an SDK, an HTTP request, a function of your app).
"""


def respond(messages, context):
    last = messages[-1]["content"]
    names = [m["content"].split("我叫", 1)[1].strip("。 ") for m in messages[:-1]
             if m["role"] == "user" and "我叫" in m["content"]]
    if "我叫什么" in last or "my name" in last.lower():
        return f"您叫{names[-1]}。" if names else "抱歉，您还没告诉我您的名字。"
    if "价格" in last or "多少钱" in last:
        return "起售价 15.99 万，欢迎到店试驾。"
    return "您好，请问有什么可以帮您？"
'''

SUITE = '''# yaml-language-server: $schema=../schema/suite.schema.json
description: My first evalspec suite
providers:
  - id: my-bot
    python: ../providers/my_bot.py:respond
defaults:
  assert:
    - not-regex: '1[3-9]\\d{9}'      # never a phone number, in any turn
      scope: each_turn
      severity: critical
tests:
  - id: remembers-name
    name: 记得用户的名字
    conversation:
      - user: 你好，我叫王五。
      - filler: 2
      - user: 我叫什么？
        assert:
          - memory-recall: {name: 王五}
  - id: invite-after-price
    name: 问价后邀约
    conversation:
      - user: 你好
        label: greeting
      - user: 这款车多少钱？
        label: price
    assert:
      - not-before: {pattern: 到店|试驾, turn: price}
      - within: {pattern: 到店|试驾, after: price}
'''

# The action by its release tag on GitHub (action.yml at the root of this repository; v1 moves with each
# compatible release); README and docs/en/ci.md show the same workflow.
ACTION = "evalspec/evalspec@v1"

WORKFLOW = f'''name: evalspec
on:
  pull_request:
  push:
    branches: [main]
permissions:
  contents: read         # check out the suites
  actions: read          # `baseline: auto` reads the base branch's report artifact
  pull-requests: write   # one summary comment on the pull request, updated on every push
jobs:
  evalspec:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: {ACTION}
        with:
          suites: suites/*.yaml
          # baseline: auto   # gate on regressions against the base branch instead of the pass rate
'''

FILES = {
    Path("suites") / "example.yaml": SUITE,
    Path("schema") / "suite.schema.json": "",  # generated when written: editors validate suites offline
    Path("providers") / "my_bot.py": BOT,
    Path(".github") / "workflows" / "evalspec.yml": WORKFLOW,
}


# What a run produces stays out of git; what people decided is committed (docs/en/ci.md#what-to-commit).
GITIGNORE = [
    "# evalspec: runs and the cache stay out; attributions, judge labels and approvals are committed",
    ".evalspec/runs/",
    ".evalspec/cache/",
    "evalspec-report/",
    "!.evalspec/triage.jsonl",
    "!.evalspec/labels.jsonl",
    "!.evalspec/review.log",
]
# a line that ignores the whole folder: git could not take its files back in, so it becomes `.evalspec/*`
WHOLE_FOLDER = (".evalspec", ".evalspec/", "/.evalspec", "/.evalspec/", ".evalspec/**")


def in_language(text: str) -> str:
    """A starter file in the language being spoken: its English description and comments replaced by the
    catalogue's `init_*` words (the keys, paths and rules stay as written) (docs/en/getting-started.md)."""
    from evalspec.reporters.catalogue import CATALOGUES, current, words

    if current() == "en":
        return text
    for key, english in CATALOGUES["en"].items():
        if key.startswith("init_"):
            text = text.replace(english, words(key))
    return text


def merge_gitignore(path: Path) -> bool:
    """Add evalspec's lines to the .gitignore at `path` (created when missing), each line once; a line
    ignoring all of `.evalspec` becomes `.evalspec/*`. True when the file changed."""
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = [".evalspec/*" if line.strip() in WHOLE_FOLDER else line for line in before.splitlines()]
    have = {line.strip() for line in lines}
    added = [line for line in map(in_language, GITIGNORE) if line not in have]
    if added and lines and lines[-1].strip():
        added.insert(0, "")
    text = "\n".join(lines + added) + "\n"
    if text == before:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def _schema_text() -> str:
    import json

    from evalspec.config.schema import suite_schema

    return json.dumps(suite_schema(), ensure_ascii=False, indent=2) + "\n"


def scaffold(directory: Path) -> list[Path]:
    """Write the starter files and merge evalspec's lines into `.gitignore`; refuses (exit 2) to overwrite
    any existing starter file."""
    existing = [directory / rel for rel in FILES if (directory / rel).exists()]
    if existing:
        raise ConfigError([Problem(str(p), None, "", "already exists; nothing was written") for p in existing])
    created = []
    for rel, text in FILES.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(in_language(text) if text else _schema_text(), encoding="utf-8")
        created.append(path)
    if merge_gitignore(directory / ".gitignore"):
        created.append(directory / ".gitignore")
    return created
