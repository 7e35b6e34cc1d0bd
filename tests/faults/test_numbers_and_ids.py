"""Property: numbers that are not numbers (`.nan`, `.inf`) in random numeric keys, and instance ids that
collide, are refused by `validate` and `run` with exit 2 naming them, before any call
(docs/en/reports-and-gate.md#exit-codes-and-the-gate).

The other fault properties beside it in tests/faults/: judge answers (test_judge_answers.py), critical
failures under repeats (test_critical_repeats.py), user code that ends its process (test_process_death.py),
storage faults (test_storage_exit_codes.py), python providers and checks (test_python_code_faults.py).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.faults.helpers import FEW, suite_yaml
from tests.helpers import invoke

COUNTING_BOT = "def respond(messages, context):\n    open('called', 'a').write('x')\n    return '好的'\n"
NOT_NUMBERS = [".nan", ".NaN", ".inf", "-.inf", "+.Inf"]
# (the key's path as the error shows it, where it goes): a finite value for each; one or two are made bad
NUMERIC = {
    "gate.min_pass_rate": 1.0, "gate.max_errors": 0, "options.timeout": 30, "options.grade_timeout": 20,
    "providers[0].rpm": 600, "providers[0].timeout": 30, "tests[0].threshold": 0.5,
    "tests[0].sla[0].min_score": 0.5, "tests[0].sla[0].at": 10, "tests[0].conversation[0].assert[0].weight": 1,
    "tests[0].conversation[0].assert[0].threshold": 1.0, "tests[1].assert[0].weight": 2,
    "tests[1].assert[0].latency": 10000,
}


def numeric_suite(values: dict[str, Any]) -> str:
    v = {k: (k, x) for k, x in values.items()}

    def w(key: str) -> Any:
        return v[key][1]

    return f"""\
options: {{cache: false, timeout: {w("options.timeout")}, grade_timeout: {w("options.grade_timeout")}}}
providers:
  - id: bot
    python: bot.py:respond
    rpm: {w("providers[0].rpm")}
    timeout: {w("providers[0].timeout")}
gate: {{min_pass_rate: {w("gate.min_pass_rate")}, max_errors: {w("gate.max_errors")}}}
tests:
  - id: curve
    threshold: {w("tests[0].threshold")}
    matrix: {{d: [1, 2]}}
    curve: d
    sla: [{{at: {w("tests[0].sla[0].at")}, min_score: {w("tests[0].sla[0].min_score")}}}]
    conversation:
      - user: hi
        assert:
          - {{contains: 好的, weight: {w("tests[0].conversation[0].assert[0].weight")}, threshold: {w("tests[0].conversation[0].assert[0].threshold")}}}
  - id: plain
    conversation: [{{user: hi}}]
    assert:
      - {{latency: {w("tests[1].assert[0].latency")}, weight: {w("tests[1].assert[0].weight")}}}
"""


@settings(FEW, max_examples=15)
@given(bad=st.dictionaries(st.sampled_from(sorted(NUMERIC)), st.sampled_from(NOT_NUMBERS), min_size=0, max_size=2),
       command=st.sampled_from(["validate", "run"]))
def test_a_number_that_is_not_a_number_is_refused_naming_its_key(
        bad: dict[str, str], command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = tmp_path / uuid.uuid4().hex
    where.mkdir()
    monkeypatch.chdir(where)
    (where / "bot.py").write_text(COUNTING_BOT, encoding="utf-8")
    (where / "s.yaml").write_text(numeric_suite({**NUMERIC, **bad}), encoding="utf-8")
    code, out = invoke(command, "s.yaml", *(["-q", "--no-cache"] if command == "run" else []))
    if not bad:  # the control: the same suite with finite numbers is fine
        assert code == 0, out
        return
    assert code == 2, out
    for key in bad:
        assert key in out, (key, out)  # each bad key named
    assert "not a finite number" in out, out
    assert not (where / "called").exists(), out  # before any call


# ---------------------------------------------------------------------------------------------------------
# Identity is unique: colliding instance ids are refused before any call

value = st.one_of(st.integers(0, 3), st.sampled_from(["a", "b", "zh", "中"]))


@settings(FEW, max_examples=15)
@given(matrix=st.dictionaries(st.sampled_from(["x", "lang"]), st.lists(value, min_size=1, max_size=3, unique=True),
                              min_size=1, max_size=2),
       collision=st.sampled_from(["none", "type", "hand"]), pick=st.integers(0, 10),
       command=st.sampled_from(["validate", "run"]))
def test_colliding_instance_ids_are_refused_before_any_call(
        matrix: dict[str, list[Any]], collision: str, pick: int, command: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    keys = list(matrix)
    # what the spec says an id is: ID[key=value,...], keys in matrix order
    rendered = [f"{k}={matrix[k][pick % len(matrix[k])]}" for k in keys]
    tests: list[dict[str, Any]] = [{"id": "g", "matrix": matrix, "conversation": [{"user": "你好 {{ x | default('') }}"}]}]
    if collision == "type":  # the number n beside the text "n" under one key
        values = matrix[keys[pick % len(keys)]]
        n = pick % 4
        values.extend(v for v in (n, str(n)) if v not in values)
    elif collision == "hand":
        tests.append({"id": f"g[{','.join(rendered)}]", "conversation": [{"user": "你好"}]})
    # a number beside its text (1, "1") under one key: generated on purpose or by chance
    twins = any(len({str(v) for v in vs}) < len(vs) for vs in matrix.values())
    where = tmp_path / uuid.uuid4().hex
    where.mkdir()
    monkeypatch.chdir(where)
    (where / "bot.py").write_text(COUNTING_BOT, encoding="utf-8")
    (where / "s.yaml").write_text(suite_yaml(tests), encoding="utf-8")
    code, out = invoke(command, "s.yaml", *(["-q"] if command == "run" else []))
    if collision != "hand" and not twins:
        assert code == 0, out  # the control: distinct ids are fine
        assert (where / "called").exists() == (command == "run"), out
        return
    assert code == 2, out
    assert "g[" in out, out  # the colliding instance named
    assert not (where / "called").exists(), out


