"""pytest collects evalspec suites: one item per test × provider, failures with turn, rule and excerpt."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

BOT = "def respond(messages, context):\n    return '您好，' + messages[-1]['content']\n"
SUITE = """
providers:
  - id: bot
    python: bot.py:respond
  - id: bot2
    python: bot.py:respond
tests:
  - id: greets
    conversation:
      - user: 在吗
        assert:
          - contains: 您好
  - id: no-phone
    providers: [bot]
    conversation:
      - user: 你好
      - user: 电话是 13812345678 吗
        assert:
          - not-regex: 1[3-9]\\d{9}
  - id: known-bug
    providers: [bot]
    xfail: "issue #12"
    conversation:
      - user: hi
        assert:
          - contains: bye
  - id: wip
    providers: [bot]
    draft: true
    conversation:
      - user: hi
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".py", bot=BOT)
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "chat.yaml").write_text(SUITE, encoding="utf-8")
    (pytester.path / "suites" / "bot.py").write_text(BOT, encoding="utf-8")
    return pytester


def test_each_test_and_provider_is_an_item_with_outcomes_mapped(project: pytest.Pytester) -> None:
    result = project.runpytest("--evalspec", "suites/*.yaml", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1, xfailed=1, skipped=1)
    result.stdout.fnmatch_lines(["*chat.yaml::greets?bot? PASSED*", "*chat.yaml::greets?bot2? PASSED*",
                                 "*chat.yaml::no-phone?bot? FAILED*", "*known-bug?bot? XFAIL*",
                                 "*wip?bot? SKIPPED*"])
    output = result.stdout.str()
    assert "turn 2" in output and "not-regex: 1[3-9]" in output and "13812345678" in output


def test_the_ini_option_and_k_selection(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nevalspec_suites = suites/chat.yaml\n")
    result = project.runpytest("-k", "greets", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_a_suite_that_does_not_validate_is_a_collection_error(project: pytest.Pytester) -> None:
    (project.path / "suites" / "bad.yaml").write_text("providers: []\ntests:\n  - id: x\n    conversaton: []\n")
    result = project.runpytest("--evalspec", "suites/bad.yaml", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*bad.yaml:4*unknown key 'conversaton'*"])
