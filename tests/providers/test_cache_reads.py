"""A python provider's cached reply lasts only while the files it read are unchanged (docs/en/providers.md#the-cache):
editing the prompt file the bot reads is a miss, an unchanged one a hit with no call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import invoke

READS_EACH_CALL = '''
from pathlib import Path


def respond(messages, context):
    name = messages[-1]["content"].split()[-1]  # the prompt file this conversation reads
    with open(Path(__file__).with_name(name), encoding="utf-8") as fh:
        return fh.read().strip() + "：" + messages[-1]["content"]
'''
READS_ON_IMPORT = '''
from pathlib import Path

PROMPT = Path(__file__).with_name("prompt.txt").read_text(encoding="utf-8").strip()


def respond(messages, context):
    return PROMPT + "：" + messages[-1]["content"]
'''
SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: a
    conversation:
      - user: 读取 a.txt
        assert: [{contains: "您好"}]
  - id: b
    conversation:
      - user: 读取 b.txt
        assert: [{contains: "您好"}]
"""


def play(root: Path, *, in_process: bool = True) -> dict[str, dict[str, Any]]:
    """One run of the suite in `root` (its cache in root/.evalspec/cache): each test's record."""
    out = root / "run.json"
    if in_process:
        code, text = invoke("run", str(root / "s.yaml"), "-j", "2", "-o", str(out))
    else:
        done = subprocess.run([sys.executable, "-m", "evalspec", "run", str(root / "s.yaml"), "-o", str(out)],
                              cwd=root, capture_output=True, text=True, encoding="utf-8", timeout=120)
        code, text = done.returncode, done.stdout + done.stderr
    assert code in (0, 1, 3), text
    return {r["test_id"]: r for r in json.loads(out.read_text(encoding="utf-8"))["results"]}


def reply(record: dict[str, Any]) -> str:
    return str(record["transcript"][-1]["content"])


def test_editing_a_prompt_file_the_bot_reads_is_a_miss_and_only_for_who_read_it(in_tmp: Path) -> None:
    (in_tmp / "bot.py").write_text(READS_EACH_CALL, encoding="utf-8")
    (in_tmp / "s.yaml").write_text(SUITE, encoding="utf-8")
    (in_tmp / "a.txt").write_text("您好，我是甲", encoding="utf-8")
    (in_tmp / "b.txt").write_text("您好，我是乙", encoding="utf-8")
    first = play(in_tmp)
    assert [first[t]["calls"] for t in "ab"] == [1, 1] and reply(first["a"]).startswith("您好，我是甲")

    again = play(in_tmp)  # nothing changed: both answered from the cache, no call
    assert [again[t]["cached_calls"] for t in "ab"] == [1, 1] and [again[t]["calls"] for t in "ab"] == [0, 0]

    (in_tmp / "a.txt").write_text("您好，我是新的甲", encoding="utf-8")
    edited = play(in_tmp)  # only the conversation that read a.txt calls the bot again, and sees the new text
    assert edited["a"]["calls"] == 1 and edited["a"]["cached_calls"] == 0
    assert reply(edited["a"]).startswith("您好，我是新的甲")
    assert edited["b"]["cached_calls"] == 1 and reply(edited["b"]).startswith("您好，我是乙")

    (in_tmp / "a.txt").unlink()  # a file that is gone is a change too: the bot is called (and fails)
    gone = play(in_tmp)
    assert gone["a"]["status"] == "error" and gone["b"]["cached_calls"] == 1


def test_a_prompt_read_when_the_bot_is_imported_is_checked_too(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(READS_ON_IMPORT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "prompt.txt").write_text("您好，旧版", encoding="utf-8")
    first = play(tmp_path, in_process=False)
    assert first["a"]["calls"] == 1 and reply(first["a"]).startswith("您好，旧版")
    assert play(tmp_path, in_process=False)["a"]["cached_calls"] == 1
    (tmp_path / "prompt.txt").write_text("您好，新版", encoding="utf-8")
    edited = play(tmp_path, in_process=False)
    assert edited["a"]["calls"] == 1 and reply(edited["a"]).startswith("您好，新版")


@pytest.mark.parametrize("path, kept", [("/tmp/prompt.txt", True), (json.__file__, False),
                                        ("/dev/urandom", False), ("/x/__pycache__/m.cpython-311.pyc", False)])
def test_only_the_users_own_files_are_tracked(path: str, kept: bool) -> None:
    from evalspec.providers.reads import tracked

    assert tracked(path) is kept


READS_SQLITE = '''
import sqlite3
from pathlib import Path


def respond(messages, context):
    with sqlite3.connect(Path(__file__).with_name("answers.db")) as db:
        (text,) = db.execute("select text from answers").fetchone()
    return text + "：" + messages[-1]["content"]
'''


def _answers(root: Path, text: str) -> None:
    import sqlite3

    with sqlite3.connect(root / "answers.db") as db:
        db.execute("create table if not exists answers (text)")
        db.execute("delete from answers")
        db.execute("insert into answers values (?)", (text,))
    db.close()


def test_a_sqlite_database_the_bot_reads_is_checked_too(in_tmp: Path) -> None:
    # sqlite opens its file from C, past the "open" audit event: a changed database must still be a miss,
    # else a stale reply passes a red line the bot now breaks
    (in_tmp / "bot.py").write_text(READS_SQLITE, encoding="utf-8")
    (in_tmp / "s.yaml").write_text(SUITE, encoding="utf-8")
    _answers(in_tmp, "您好，旧版")
    assert play(in_tmp)["a"]["calls"] == 1
    assert play(in_tmp)["a"]["cached_calls"] == 1
    _answers(in_tmp, "新版：请拨打 13812345678")
    edited = play(in_tmp)
    assert edited["a"]["calls"] == 1 and reply(edited["a"]).startswith("新版")
