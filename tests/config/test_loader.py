"""Loading and validation: every problem at once, with file, line and a suggestion."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.config import load_suite
from evalspec.core.errors import ConfigError

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"
HEAD = f"providers:\n  - id: bot\n    python: {BOT}:respond\n"


def write(tmp_path: Path, body: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + body, encoding="utf-8")
    return path


def problems(path: Path, **kw: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_suite(path, **kw)  # type: ignore[arg-type]
    return [str(p) for p in info.value.problems]


def test_four_kinds_of_mistakes_reported_together_with_lines(tmp_path: Path) -> None:
    path = write(tmp_path, """\
tests:
  - id: t
    conversation:
      - user: 能分期吗？
        label: signal
        asert:
          - contains: 分期
      - user: 好的
    assert:
      - contians: 微信
      - regex: "([a-z]+"
      - within: {pattern: 到店, after: signl}
""")
    found = problems(path)
    assert len(found) == 4, found
    assert found[0].endswith("s.yaml:9: tests[0].conversation[0].asert: unknown key 'asert' (did you mean 'assert'?)")
    assert ":13: tests[0].assert[0].contians: unknown assertion type 'contians' (did you mean 'contains'?)" in found[1]
    assert ":14: " in found[2] and "bad regex '([a-z]+'" in found[2]
    assert ":15: " in found[3] and "label 'signl' does not exist (did you mean 'signal'?)" in found[3]


def test_unknown_top_level_and_provider_keys(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"provders:\n  - id: bot\n    python: {BOT}:respond\ntests: [{{id: t, conversation: [{{user: hi}}]}}]\n")
    found = problems(path)
    assert any("unknown key 'provders' (did you mean 'providers'?)" in p for p in found)
    path.write_text(f"providers:\n  - id: bot\n    pyhton: {BOT}:respond\ntests: [{{id: t, conversation: [{{user: hi}}]}}]\n")
    assert any(":3: providers[0].pyhton: unknown key 'pyhton' (did you mean 'python'?)" in p for p in problems(path))


def test_duplicate_ids_empty_messages_and_out_of_range_turns(tmp_path: Path) -> None:
    path = write(tmp_path, """\
tests:
  - name: 同名测试
    conversation: [{user: hi}]
  - name: 同名测试
    conversation:
      - user: "  "
    assert:
      - not-after: {pattern: x, after: 3}
      - {contains: x, scope: {turns: [0]}}
""")
    found = "\n".join(problems(path))
    assert "duplicate test id '同名测试'" in found
    assert ":9: tests[1].conversation[0].user: empty user message" in found
    assert "turn 3 is out of range: the conversation has 1 user turns" in found
    assert "turn 0 is out of range" in found


def test_duplicate_yaml_keys_are_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "tests:\n  - id: t\n    id: u\n    conversation: [{user: hi}]\n")
    assert any("duplicate key 'id'" in p for p in problems(path))


def test_invalid_yaml_gives_line(tmp_path: Path) -> None:
    path = write(tmp_path, "tests:\n  - id: t\n    conversation: [{user: hi}\n")
    found = problems(path)
    assert len(found) == 1 and ":7:" in found[0]
    assert "the […] that starts at line 6 is not closed where YAML expects" in found[0]


def test_env_interpolation_default_and_missing(tmp_path: Path) -> None:
    path = write(tmp_path, """\
vars: {brand: "${BRAND:-星途}", city: "${CITY}"}
tests: [{id: t, conversation: [{user: hi}]}]
""")
    suite = load_suite(path, environ={"CITY": "北京"})
    assert suite.vars == {"brand": "星途", "city": "北京"}
    found = problems(path, environ={})
    assert any(":4: vars.city: environment variable CITY is not set" in p for p in found)


def test_a_doubled_dollar_is_a_literal_dollar_brace_never_a_variable(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, """\
vars: {price: "$${PRICE} is ${PRICE}", shell: "$${HOME:-/root} $$ $${ not a name"}
tests: [{id: t, conversation: [{user: "say $${UNSET_ANYWHERE}"}]}]
""")
    suite = load_suite(path, environ={"PRICE": "12.98万"})  # UNSET_ANYWHERE is not set, and not needed
    assert suite.vars == {"price": "${PRICE} is 12.98万", "shell": "${HOME:-/root} $$ ${ not a name"}
    assert suite.tests[0].conversation[0].text == "say ${UNSET_ANYWHERE}"
    from evalspec.play.bundle import suite_environ

    monkeypatch.setenv("PRICE", "1")
    monkeypatch.setenv("HOME", "/home/someone")
    assert suite_environ([path]) == {"PRICE": "1"}  # a Ray worker is given only the variables named


def test_secret_env_values_are_collected_for_redaction(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("""\
providers:
  - id: m
    model: openai/gpt-4o-mini
    api_key: ${MY_API_KEY}
    api_base: http://127.0.0.1:9/v1
  - id: h
    http: {url: "http://127.0.0.1:9/chat", headers: {Authorization: "Bearer ${BOT_TOKEN}"}}
tests: [{id: t, conversation: [{user: hi}]}]
""")
    suite = load_suite(path, environ={"MY_API_KEY": "sk-secret-1", "BOT_TOKEN": "tok-2"})
    assert {"sk-secret-1", "tok-2", "Bearer tok-2"} <= suite.secrets


def test_defaults_merge_asserts_first_and_test_values_win(tmp_path: Path) -> None:
    path = write(tmp_path, """\
defaults:
  tags: [base]
  threshold: 0.5
  assert:
    - not-contains: 微信
tests:
  - id: t
    tags: [own]
    conversation: [{user: hi}]
    assert:
      - contains: 好
  - id: u
    conversation: [{user: hi}]
""")
    suite = load_suite(path)
    t, u = suite.tests
    assert [a.name for a in t.asserts] == ["not-contains", "contains"]
    assert t.tags == ["own"] and u.tags == ["base"] and t.threshold == 0.5
    assert [a.name for a in u.asserts] == ["not-contains"]


def test_unknown_provider_subset_and_stateful_history(tmp_path: Path) -> None:
    path = write(tmp_path, """\
  - id: shop
    http: {url: "http://127.0.0.1:9/chat", stateful: true}
tests:
  - id: t
    providers: [bott]
    conversation: [{user: hi}]
  - id: g
    providers: [shop]
    conversation: [{user: hi}, {assistant: hello}, {user: again}]
""")
    found = "\n".join(problems(path))
    assert "unknown provider 'bott' (did you mean 'bot'?)" in found
    assert "cannot be sent to stateful HTTP provider 'shop'" in found


def test_curve_and_sla_need_a_matrix_key(tmp_path: Path) -> None:
    path = write(tmp_path, """\
tests:
  - id: t
    matrix: {distance: [1, 2]}
    curve: distanse
    conversation: [{user: hi}]
  - id: u
    sla: [{at: 1, min_score: 0.5}]
    conversation: [{user: hi}]
""")
    found = "\n".join(problems(path))
    assert "curve variable 'distanse' is not a matrix key (did you mean 'distance'?)" in found
    assert "'sla' needs a 'curve'" in found


def test_turn_needs_exactly_one_kind_and_label_only_on_user(tmp_path: Path) -> None:
    path = write(tmp_path, """\
tests:
  - id: t
    conversation:
      - {user: hi, assistant: hello}
      - {filler: 2, label: x}
""")
    found = "\n".join(problems(path))
    assert "exactly one of 'user', 'filler', 'assistant', 'click' (found user, assistant)" in found
    assert "'label' goes with a 'user' turn, not 'filler'" in found


def test_value_schema_errors_point_inside_the_value(tmp_path: Path) -> None:
    path = write(tmp_path, """\
tests:
  - id: t
    conversation: [{user: hi}]
    assert:
      - within: {pattern: x, afterr: 1}
      - word-count: {min: -1}
      - memory-recall: {}
""")
    found = "\n".join(problems(path))
    assert "unknown key 'afterr' in 'within' (did you mean 'after'?)" in found
    assert "within needs 'after'" in found
    assert "word-count: min must be at least 0, got -1" in found
    assert "memory-recall needs at least 1 entry" in found


def test_bad_regex_in_session_rule_and_filter_pool(tmp_path: Path) -> None:
    path = write(tmp_path, """\
tests:
  - id: t
    conversation: [{user: hi}, {filler: {count: 1, pool: [a]}}]
    assert:
      - not-before: {pattern: "(", turn: 2}
""")
    found = problems(path)
    assert len(found) == 1 and ":8: tests[0].assert[0].not-before.pattern: bad regex" in found[0]


def test_missing_file(tmp_path: Path) -> None:
    assert problems(tmp_path / "nope.yaml") == [f"{tmp_path / 'nope.yaml'}: file not found"]
