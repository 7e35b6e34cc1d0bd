"""The plan: instance ids, matrix × repeat, selection, fillers and golden history."""

from __future__ import annotations

from pathlib import Path

from evalspec.config import load_suite
from evalspec.plan.build import Selection, build_plan
from tests import ROOT
from tests.helpers import invoke

BOT = ROOT / "providers" / "demo_bot.py"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"providers:\n  - id: a\n    python: {BOT}:respond\n  - id: b\n    python: {BOT}:respond\n" + body,
                    encoding="utf-8")
    return path


MATRIX = """\
options: {seed: 3}
tests:
  - id: memory-decay
    name: 记忆衰减
    matrix: {distance: [1, 3], lang: [zh]}
    repeat: 2
    conversation:
      - user: 我叫张三
      - filler: "{{ distance }}"
      - user: 我叫什么？
"""


def test_ids_follow_matrix_order_and_repeat(tmp_path: Path) -> None:
    plan = build_plan([load_suite(write(tmp_path, MATRIX))])
    ids = [(i.test_id, i.provider.id) for i in plan]
    assert ids[:4] == [("memory-decay[distance=1,lang=zh]#1", "a"), ("memory-decay[distance=1,lang=zh]#1", "b"),
                       ("memory-decay[distance=1,lang=zh]#2", "a"), ("memory-decay[distance=1,lang=zh]#2", "b")]
    assert len(plan) == 2 * 2 * 2
    assert plan[-1].base_id == "memory-decay[distance=3,lang=zh]"


def test_filler_counts_and_turn_numbers(tmp_path: Path) -> None:
    plan = build_plan([load_suite(write(tmp_path, MATRIX))])
    three = next(i for i in plan if i.matrix["distance"] == 3)
    assert [t.turn for t in three.turns] == [1, 2, 3, 4, 5]
    assert [t.filler for t in three.turns] == [False, True, True, True, False]


def test_fillers_are_deterministic_and_vary_by_repeat(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, MATRIX.replace("[1, 3]", "[8]")))
    first = [[t.text for t in i.turns] for i in build_plan([suite])]
    again = [[t.text for t in i.turns] for i in build_plan([load_suite(write(tmp_path, MATRIX.replace("[1, 3]", "[8]")))])]
    assert first == again
    assert first[0] != first[2]  # repeat 1 vs repeat 2 pick other small talk
    assert first[0] == first[1]  # providers a and b see the same conversation


def test_selection_filter_tag_provider_repeat(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, MATRIX + "  - id: other\n    tags: [x]\n    conversation: [{user: hi}]\n"))
    assert {i.test.id for i in build_plan([suite], Selection(filter="distance=3"))} == {"memory-decay"}
    assert {i.test.id for i in build_plan([suite], Selection(filter="记忆"))} == {"memory-decay"}
    assert {i.test.id for i in build_plan([suite], Selection(tags=["x"]))} == {"other"}
    assert {i.provider.id for i in build_plan([suite], Selection(providers=["b"]))} == {"b"}
    assert len(build_plan([suite], Selection(filter="other", repeat=3))) == 6


def test_golden_history_makes_no_call_for_the_user_before_an_assistant(tmp_path: Path) -> None:
    body = "tests:\n  - id: g\n    providers: [a]\n    conversation:\n      - user: q1\n      - assistant: a1\n      - user: q2\n"
    (inst,) = build_plan([load_suite(write(tmp_path, body))])
    assert [(t.role, t.turn, t.call) for t in inst.turns] == [("user", 1, False), ("assistant", 1, False), ("user", 2, True)]


def test_precedence_suite_var_cli_var_test_var_matrix(tmp_path: Path) -> None:
    body = """\
vars: {a: suite, b: suite, c: suite, d: suite}
tests:
  - id: t
    providers: [a]
    vars: {c: test, d: test}
    matrix: {d: [matrix]}
    conversation: [{user: "{{ a }} {{ b }} {{ c }} {{ d }}"}]
"""
    (inst,) = build_plan([load_suite(write(tmp_path, body), cli_vars={"b": "cli", "c": "cli", "d": "cli"})])
    assert inst.turns[0].text == "suite cli test matrix"


def test_test_id_slug_keeps_unicode_letters(tmp_path: Path) -> None:
    body = "tests:\n  - name: 分期问题后邀约 — Round 2!\n    providers: [a]\n    conversation: [{user: hi}]\n"
    (inst,) = build_plan([load_suite(write(tmp_path, body))])
    assert inst.test_id == "分期问题后邀约-round-2"


def test_templated_values_are_checked_once_rendered(tmp_path: Path) -> None:
    import pytest

    from evalspec.core.errors import ConfigError

    body = """\
tests:
  - id: t
    providers: [a]
    matrix: {n: [0, 3]}
    conversation:
      - user: hi
      - filler: "{{ n }}"
      - user: bye
    assert:
      - not-after: {pattern: "{{ '(' if n == 0 else 'x' }}", after: 4}
"""
    with pytest.raises(ConfigError) as info:
        build_plan([load_suite(write(tmp_path, body))])
    messages = [p.message for p in info.value.problems]
    assert any("bad regex '('" in m for m in messages)
    ok = body.replace("if n == 0 else 'x'", "if n == 99 else 'x'")
    with pytest.raises(ConfigError, match="turn 4 is out of range: the conversation has 2 user turns"):
        build_plan([load_suite(write(tmp_path, ok))])
    fine = ok.replace("after: 4", "after: 2")
    assert len(build_plan([load_suite(write(tmp_path, fine))])) == 2


def test_turn_assertions_after_a_templated_filler_check_their_own_turn(tmp_path: Path) -> None:
    import asyncio

    from evalspec.assertions.grade import grade
    from evalspec.plan.build import grading_input

    body = """\
tests:
  - id: t
    providers: [a]
    matrix: {n: [2]}
    conversation:
      - user: 我叫张三
      - filler: "{{ n }}"
      - user: 我叫什么？
        assert: [{contains: 张三}]
      - user: 今天天气怎么样？
"""
    (inst,) = build_plan([load_suite(write(tmp_path, body))])
    (spec,) = inst.turns[3].asserts
    assert (spec.turn, spec.scope) == (4, "turn")
    messages = []
    for t in inst.turns:
        messages.append({"role": "user", "content": t.text, "turn": t.turn})
        reply = "您叫张三" if t.turn == 4 else "多云"
        messages.append({"role": "assistant", "content": reply, "turn": t.turn})
    (result,) = asyncio.run(grade(grading_input(inst), messages))
    assert result.passed is True and result.turn == 4  # not the last reply ("多云")


def test_a_hand_written_id_equal_to_a_matrix_instance_is_refused_with_both_places(in_tmp: Path) -> None:
    body = """\
tests:
  - id: greet
    matrix: {lang: [en, zh]}
    conversation: [{user: hi}]
  - id: "greet[lang=en]"
    conversation: [{user: hi}]
"""
    code, out = invoke("validate", str(write(in_tmp, body)))
    assert code == 2, out
    assert "s.yaml:10: tests[1].id: instance id 'greet[lang=en]' is also that of test 'greet' with lang=en " \
           "(line 8)" in out, out
    assert invoke("run", str(in_tmp / "s.yaml"))[0] == 2


def test_matrix_values_that_read_the_same_in_an_id_are_refused(in_tmp: Path) -> None:
    body = """\
tests:
  - id: m
    matrix: {x: [1, "1", true, "true"]}
    conversation: [{user: hi}]
"""
    code, out = invoke("validate", str(write(in_tmp, body)))
    assert code == 2, out
    assert "s.yaml:8: tests[0].matrix.x[1]: instance id 'm[x=1]' is also that of x=1 in the same matrix " \
           "(line 8)" in out, out
    assert "tests[0].matrix.x[3]: instance id 'm[x=true]'" in out
    assert "2 problems found" in out


def test_a_test_id_ending_like_a_repeat_is_refused(in_tmp: Path) -> None:
    # 't#1' is also the record id of repeat 1 of 't' (here, or with `--repeat 2`): `rerun`, `triage`,
    # the journal and the cache would take one for the other
    body = """\
tests:
  - id: "t#1"
    conversation: [{user: hi}]
  - id: t
    repeat: 2
    conversation: [{user: hi}]
"""
    code, out = invoke("validate", str(write(in_tmp, body)))
    assert code == 2, out
    assert "s.yaml:7: tests[0].id: test id 't#1' ends like a repeat's id" in out, out
    assert invoke("run", str(in_tmp / "s.yaml"))[0] == 2


def test_distinct_instances_of_two_tests_are_accepted(in_tmp: Path) -> None:
    body = """\
tests:
  - id: greet
    matrix: {lang: [en, zh]}
    conversation: [{user: hi}]
  - id: "greet[lang=fr]"
    conversation: [{user: hi}]
"""
    assert invoke("validate", str(write(in_tmp, body)))[0] == 0
