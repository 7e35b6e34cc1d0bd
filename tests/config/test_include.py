"""`include: FILE.yaml` as a turn entry (SPEC §24): a fragment's turns spliced into the test, its vars
defaults of the test's, its problems at its own file and line naming the including test, cycles refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.config.loader import load_suite
from evalspec.play.runner import RunOptions
from tests.helpers import invoke

BOT = '''\
def call(messages, context=None):
    return "收到：" + messages[-1]["content"]
'''

SUITE = """\
providers:
  - id: bot
    python: bot.py:call
tests:
  - id: drive
    vars: {day: 周日}
    conversation:
      - user: 我想试驾
        label: start
      - include: fragments/confirm.yaml
      - user: 谢谢
    assert:
      - contains: "{{ day }}"
        scope: {turns: [confirmed]}
"""

CONFIRM = """\
vars: {day: 周六, name: 王先生}
conversation:
  - user: "确认一下，{{ name }}{{ day }}上午"
    label: confirmed
    capture: confirmation
    assert:
      - contains: 确认一下
  - include: closing.yaml
"""

CLOSING = """\
conversation:
  - user: "那就 {{ confirmation }}"
    assert:
      - contains: 那就
"""


def write(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path / "s.yaml"


def test_a_fragment_is_spliced_with_its_labels_checks_captures_and_var_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, {"s.yaml": SUITE, "fragments/confirm.yaml": CONFIRM, "fragments/closing.yaml": CLOSING})
    suite = load_suite(path)
    test = suite.tests[0]
    assert [t.label for t in test.conversation] == ["start", "confirmed", None, None]
    assert test.vars == {"day": "周日", "name": "王先生"}  # the test's own var wins over the fragment's default
    data: dict[str, Any] = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    record = data["results"][0]
    assert record["status"] == "passed", record
    sent = [m["content"] for m in record["transcript"] if m["role"] == "user"]
    assert sent == ["我想试驾", "确认一下，王先生周日上午", "那就 收到：确认一下，王先生周日上午", "谢谢"]
    checked = [(a["turn"], a["type"]) for a in record["assertions"]]
    assert (2, "contains") in checked and (3, "contains") in checked


def test_a_changed_fragment_changes_the_suites_sha256(tmp_path: Path) -> None:
    path = write(tmp_path, {"s.yaml": SUITE, "fragments/confirm.yaml": CONFIRM, "fragments/closing.yaml": CLOSING})
    before = load_suite(path).sha256
    (tmp_path / "fragments" / "closing.yaml").write_text(CLOSING.replace("那就", "好，那就"), encoding="utf-8")
    assert load_suite(path).sha256 != before  # resume and grade see the suite as changed


def test_an_include_cycle_is_refused_naming_both_files(tmp_path: Path) -> None:
    path = write(tmp_path, {"s.yaml": SUITE, "fragments/confirm.yaml": CONFIRM,
                            "fragments/closing.yaml": CLOSING + "  - include: confirm.yaml\n"})
    code, out = invoke("validate", str(path))
    assert code == 2, out
    closing, confirm = tmp_path / "fragments" / "closing.yaml", tmp_path / "fragments" / "confirm.yaml"
    assert f"error {closing}:5: conversation[1].include: include cycle: {closing} includes {confirm}, which " \
           f"includes {closing} again" in out
    assert "included by test 'drive'" in out


def test_a_problem_in_a_fragment_names_its_file_and_line_and_the_including_test(tmp_path: Path) -> None:
    bad = CONFIRM.replace("      - contains: 确认一下", "      - contians: 确认一下").replace("    label: confirmed\n", "")
    path = write(tmp_path, {"s.yaml": SUITE.replace("        scope: {turns: [confirmed]}\n", ""),
                            "fragments/confirm.yaml": bad, "fragments/closing.yaml": CLOSING})
    code, out = invoke("validate", str(path))
    assert code == 2, out
    fragment = tmp_path / "fragments" / "confirm.yaml"
    line = next(ln for ln in out.splitlines() if "contians" in ln)
    assert line.startswith(f"error {fragment}:6: conversation[0].assert[0].contians: unknown assertion type 'contians'")
    assert line.endswith(f"(a fragment included by test 'drive' at {path}:10)")


def test_a_missing_fragment_and_keys_beside_include_are_errors_of_the_including_file(tmp_path: Path) -> None:
    path = write(tmp_path, {"s.yaml": SUITE.replace("      - include: fragments/confirm.yaml",
                                                    "      - include: fragments/nope.yaml\n        label: x")})
    code, out = invoke("validate", str(path))
    assert code == 2, out
    assert f"error {path}:10: tests[0].conversation[1].include: include: {tmp_path}/fragments/nope.yaml not found" in out
    assert f"error {path}:11: tests[0].conversation[1].label: 'label' does not go with 'include'" in out


def test_a_fragment_that_starts_with_a_click_may_follow_a_user_turn(tmp_path: Path) -> None:
    path = write(tmp_path, {"s.yaml": SUITE.replace("scope: {turns: [confirmed]}", "scope: {turns: [2]}"),
                            "fragments/confirm.yaml": "conversation:\n  - click: 周六\n"})
    assert load_suite(path).tests[0].conversation[1].click == "周六"
    first = write(tmp_path, {"s.yaml": SUITE.replace("      - user: 我想试驾\n        label: start\n", "")})
    code, out = invoke("validate", str(first))
    assert code == 2 and f"{tmp_path / 'fragments' / 'confirm.yaml'}:2: conversation[0].click: 'click:' presses a " \
                          f"button of the previous reply" in out, out


def test_a_fragment_reads_env_variables_and_literal_dollar_braces_like_its_suite(tmp_path: Path) -> None:
    """An imported Botium partial is a fragment: `$${` (imported text) is sent as `${`, `${NAME}` (Botium's
    `$env(NAME)`) is the variable, its value a secret; an unset one is an error at the fragment's line."""
    (tmp_path / "fragments").mkdir()
    (tmp_path / "suite.yaml").write_text(SUITE.replace("fragments/confirm.yaml", "fragments/env.yaml")
                                         .replace("[confirmed]", "[1]"), encoding="utf-8")
    (tmp_path / "fragments" / "env.yaml").write_text(
        'conversation:\n  - user: "模板 $${price} 网址 ${SHOP_URL_T}"\n', encoding="utf-8")
    suite = load_suite(tmp_path / "suite.yaml", environ={"SHOP_URL_T": "https://店.example"})
    assert suite.tests[0].conversation[1].text == "模板 ${price} 网址 https://店.example"
    assert "https://店.example" in suite.secrets
    code, out = invoke("validate", str(tmp_path / "suite.yaml"))
    assert code == 2 and "env.yaml:2" in out and "SHOP_URL_T is not set" in out
