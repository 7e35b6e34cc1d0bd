"""Builders for the `dataset:` tests (docs/en/suite-format.md#dataset): a python bot that logs each call's
instance id to calls.log, and a suite whose test plays a dataset's `question` and `follow_up`."""

from __future__ import annotations

import json
from pathlib import Path

BOT = '''
from pathlib import Path

def respond(messages, context):
    with Path("calls.log").open("a", encoding="utf-8") as fh:
        fh.write(context["test_id"] + "\\n")
    return "收到：" + messages[-1]["content"]
'''

SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
options: {{cache: false}}
tests:
  - id: faq
    dataset: {dataset}
    {extra}
    conversation:
      - user: "{{{{ question }}}}"
      - user: "{{{{ follow_up }}}}"
    assert:
      - contains: "收到：{{{{ follow_up }}}}"
"""


def project(root: Path, dataset: str, content: str, extra: str = "") -> Path:
    (root / "bot.py").write_text(BOT, encoding="utf-8")
    (root / dataset).write_text(content, encoding="utf-8")
    suite = root / "s.yaml"
    suite.write_text(SUITE.format(dataset=dataset, extra=extra), encoding="utf-8")
    return suite


def jsonl(*rows: dict[str, object]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
