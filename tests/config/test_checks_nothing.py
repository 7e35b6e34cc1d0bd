"""`validate` warns on a test that checks nothing (no assertion of its own, none from `defaults`), naming it;
`--strict` makes it an error (docs/en/suite-format.md#tests-that-check-nothing)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import invoke

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"providers: [{{id: demo, python: '{BOT}:respond'}}]\n{body}", encoding="utf-8")
    return path


HOLLOW = """\
tests:
  - id: 只是聊聊
    conversation: [{user: 你好}, {user: 再见}]
  - id: checked
    conversation: [{user: 你好, assert: [{contains: 您好}]}]
"""


def test_a_test_that_checks_nothing_is_a_warning_naming_it_and_an_error_under_strict(tmp_path: Path) -> None:
    path = write(tmp_path, HOLLOW)
    code, out = invoke("validate", str(path))
    assert code == 0, out
    assert "test '只是聊聊' checks nothing" in out and "'checked'" not in out
    code, out = invoke("validate", "--strict", str(path))
    assert code == 2 and "s.yaml:3: tests[0]: test '只是聊聊' checks nothing" in out, out


def test_a_test_checked_by_the_defaults_alone_is_not_warned_about(tmp_path: Path) -> None:
    path = write(tmp_path, "defaults:\n  assert: [{not-contains: 保证}]\n" + HOLLOW)
    code, out = invoke("validate", "--strict", str(path))
    assert code == 0 and "checks nothing" not in out, out
