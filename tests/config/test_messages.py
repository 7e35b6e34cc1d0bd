"""Schema problems read as plain sentences (issue 6 item 14), option names stay options (item 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.config import load_suite
from evalspec.core.errors import ConfigError

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def problems_of(tmp_path: Path, body: str, top: str = "") -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(f"{top}providers: [{{id: bot, python: '{BOT}:respond'}}]\n{body}", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    return [str(p) for p in info.value.problems]


def one_test(extra: str, turn: str = "") -> str:
    return f"tests:\n  - id: t\n{extra}    conversation:\n      - user: 你好\n{turn}"


@pytest.mark.parametrize(("extra", "expected"), [
    ("    repeat: 0\n", "tests[0].repeat: repeat must be at least 1, got 0"),
    ("    repeat: {n: 0}\n", "tests[0].repeat.n: repeat.n must be at least 1, got 0"),
    ("    repeat: {n: 3, pass: 2}\n", "tests[0].repeat.pass: repeat.pass must be at most 1, got 2"),
    ("    repeat: {n: 3, pass: majorty}\n", "repeat.pass: 'majorty' is not one of all, majority, any (did you mean 'majority'?)"),
    ("    repeat: three\n", "repeat must be a whole number from 1 up or a mapping like {key: value}, got 'three'"),
    ("    tags: sales\n", "tests[0].tags: tags must be a list like [a, b], got 'sales'"),
    ("    xfail: 3\n", "xfail must be a text or true/false, got 3"),
    ("    matrix: {a: []}\n", "tests[0].matrix.a: matrix.a needs at least 1 item"),
])
def test_test_level_schema_problems_are_plain_sentences(tmp_path: Path, extra: str, expected: str) -> None:
    found = problems_of(tmp_path, one_test(extra))
    assert any(expected in p for p in found), found
    assert not any("is not of type" in p or "under any of the given schemas" in p for p in found), found


@pytest.mark.parametrize(("turn", "expected"), [
    ("      - filler: -1\n", "filler must be at least 0, got -1"),
    ("      - filler: abc\n", "filler must be a whole number from 0 up or a template like \"{{ n }}\", got 'abc'"),
    ("      - filler: {count: x}\n", "filler.count: filler.count must be a whole number from 0 up or a template"),
    ("      - user: a\n        assert: [{refers-to: {expected: 凌云, nott: [a]}}]\n",
     "refers-to.nott: unknown key 'nott' in 'refers-to' (did you mean 'not'?)"),
    ("      - user: a\n        assert: [{memory-recall: {a: {b: 1}}}]\n",
     "memory-recall: a must be a text, a number or a list like [a, b], got {'b': 1}"),
    ("      - user: a\n        assert: [{contains: x, scope: {turns: {a: 1}}}]\n",
     "scope.turns[0]: turn reference {'a': 1} is not a turn number or a label"),
])
def test_turn_and_assertion_problems_are_plain_sentences(tmp_path: Path, turn: str, expected: str) -> None:
    found = problems_of(tmp_path, one_test("", turn))
    assert any(expected in p for p in found), found


def test_suite_level_problems_name_the_setting(tmp_path: Path) -> None:
    found = "\n".join(problems_of(tmp_path, one_test(""), top="gate: {min_pass_rate: 2}\noptions: {timeout: 0}\n"
                                                                   "judge: {modle: x}\n"))
    assert "gate.min_pass_rate must be at most 1, got 2" in found
    assert "options.timeout must be more than 0, got 0" in found
    assert "judge.modle: unknown key 'modle' (did you mean 'model'?)" in found


def test_a_simulated_users_stop_condition_lists_the_valid_keys(tmp_path: Path) -> None:
    found = "\n".join(problems_of(tmp_path, "simulator: x/y\ntests:\n  - id: t\n    simulate: "
                                            "{persona: p, goal: g, max_turns: 3, stop_when: [{foo: 1}]}\n"))
    assert "stop_when[0].foo: unknown key 'foo'; valid here: user_says, assistant_matches, goal_met" in found


def test_every_unknown_key_of_a_mapping_is_reported_not_only_the_first(tmp_path: Path) -> None:
    found = problems_of(tmp_path, "tests:\n  - id: t\n    nmae: x\n    tgas: [a]\n    conversation: [{user: hi}]\n")
    assert any("unknown key 'nmae' (did you mean 'name'?)" in p for p in found), found
    assert any("unknown key 'tgas' (did you mean 'tags'?)" in p for p in found), found


def test_option_names_inside_a_memory_recall_map_are_reported_not_scored_as_facts(tmp_path: Path) -> None:
    found = problems_of(tmp_path, one_test("", "      - user: 我做什么工作？\n        assert:\n"
                                               "          - memory-recall: {job: 测试工程师, fuzzy: \"no\", window: \"x\"}\n"))
    assert len(found) == 2, found
    assert ("memory-recall.fuzzy: 'fuzzy' is an option of 'memory-recall', not part of its value: write it on its "
            "own line beside 'memory-recall:' (same indentation) (fuzzy takes true/false, got 'no')") in found[0]
    assert ("memory-recall.window: 'window' is a reserved option name (an option of conversation-relevance, knowledge-retention, "
            "role-adherence), so it "
            "cannot be part of the value of 'memory-recall'; the options of 'memory-recall' are fuzzy, partial_credit"
            ) in found[1]


def test_fuzzy_false_inside_the_map_says_where_it_goes(tmp_path: Path) -> None:
    found = problems_of(tmp_path, one_test("", "      - user: 我做什么工作？\n        assert:\n"
                                               "          - memory-recall: {job: 测试工程师, fuzzy: false}\n"))
    assert found == [f"{tmp_path / 's.yaml'}:8: tests[0].conversation[1].assert[0].memory-recall.fuzzy: 'fuzzy' is an "
                     "option of 'memory-recall', not part of its value: write it on its own line beside "
                     "'memory-recall:' (same indentation)"]


def test_the_same_option_beside_the_value_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"providers: [{{id: bot, python: '{BOT}:respond'}}]\n" + one_test(
        "", "      - user: 我做什么工作？\n        assert:\n          - memory-recall: {job: 测试工程师}\n"
            "            fuzzy: false\n"), encoding="utf-8")
    spec = load_suite(path).tests[0].conversation[1].asserts[0]
    assert spec.value == {"job": "测试工程师"} and spec.options == {"fuzzy": False}


def test_a_judge_or_simulator_given_tools_is_a_problem_at_each_key(tmp_path: Path) -> None:
    found = problems_of(tmp_path, one_test(""), top=(
        "judge: {model: openai/gpt-4o-mini, api_key: x, tools: [], answer_tool_calls: false}\n"
        "simulator: {model: openai/gpt-4o-mini, api_key: x, tool_results: {f: ok}}\n"))
    assert sorted(p.split(": ", 1)[1] for p in found if "takes no" in p) == [
        "judge.answer_tool_calls: a judge takes no 'answer_tool_calls' (tools are for the systems under test)",
        "judge.tools: a judge takes no 'tools' (tools are for the systems under test)",
        "simulator.tool_results: a simulator takes no 'tool_results' (tools are for the systems under test)"]
