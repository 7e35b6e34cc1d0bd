"""The command line: exit codes, the demo, run.json against its schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests import ROOT
from tests.helpers import invoke

BOT = ROOT / "providers" / "demo_bot.py"
RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))


def suite(tmp_path: Path, body: str, name: str = "s.yaml", head: str | None = None) -> Path:
    path = tmp_path / name
    path.write_text((head if head is not None else f"providers:\n  - id: bot\n    python: {BOT}:respond\n") + body,
                    encoding="utf-8")
    return path


PASSING = """\
tests:
  - id: year
    conversation:
      - user: 这台瑶光是哪年的车？
        assert: [{contains: "2024"}]
"""
FAILING = """\
tests:
  - id: year
    conversation:
      - user: 这台瑶光是哪年的车？
        assert: [{contains: "2099"}]
"""


def test_exit_0_when_gate_passes_and_run_json_validates(in_tmp: Path) -> None:
    code, out = invoke("run", str(suite(in_tmp, PASSING)), "-o", "out/run.json")
    assert code == 0, out
    data = json.loads((in_tmp / "out" / "run.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, RUN_SCHEMA)
    assert data["results"][0]["status"] == "passed"
    assert (in_tmp / ".evalspec" / "runs").is_dir()  # the journal lives in the run dir


def test_exit_1_when_a_test_fails_and_output_names_turn_and_rule(in_tmp: Path) -> None:
    code, out = invoke("run", str(suite(in_tmp, FAILING)))
    assert code == 1
    assert "failed" in out and "contains" in out and "turn 1" in out


def test_fail_under_replaces_min_pass_rate(in_tmp: Path) -> None:
    both = suite(in_tmp, PASSING.replace("- id: year", "- id: a") + FAILING.replace("tests:\n", "").replace("- id: year", "- id: b"))
    assert invoke("run", str(both))[0] == 1
    assert invoke("run", str(both), "--fail-under", "0.5")[0] == 0
    assert invoke("run", str(both), "--fail-under", "0.6")[0] == 1


def test_critical_failure_fails_the_gate_whatever_the_rate(in_tmp: Path) -> None:
    body = """\
gate: {min_pass_rate: 0.0}
tests:
  - id: a
    threshold: 0.1
    conversation: [{user: 这台瑶光是哪年的车？}]
    assert:
      - {contains: "2099", severity: critical}
      - contains: "2024"
"""
    code, out = invoke("run", str(suite(in_tmp, body)))
    assert code == 1 and "critical" in out


def test_exit_2_on_config_error_and_nothing_runs(in_tmp: Path) -> None:
    path = suite(in_tmp, "tests:\n  - id: t\n    conversation: [{user: hi}]\n    asert: []\n")
    code, out = invoke("run", str(path))
    assert code == 2 and "unknown key 'asert'" in out
    assert not (in_tmp / ".evalspec").exists()


def test_exit_2_when_no_file_matches_or_nothing_selected(in_tmp: Path) -> None:
    assert invoke("run", "nothing/*.yaml")[0] == 2
    assert invoke("run", str(suite(in_tmp, PASSING)), "--filter", "nomatch")[0] == 2


def test_exit_3_when_errors_exceed_max_errors(in_tmp: Path) -> None:
    (in_tmp / "bots.py").write_text("def boom(messages, context):\n    raise ValueError('bot crashed')\n"
                                    "def fine(messages, context):\n    return 'ok'\n")
    head = "providers:\n  - id: bot\n    python: bots.py:boom\n  - id: ok\n    python: bots.py:fine\n"
    both = "tests:\n  - id: t\n    conversation: [{user: hi}]\n"
    path = suite(in_tmp, both, head=head)
    code, out = invoke("run", str(path), "-o", "run.json")
    assert code == 3, out
    record = json.loads((in_tmp / "run.json").read_text())["results"][0]
    assert record["status"] == "error" and "bot crashed" in record["error"]
    lenient = suite(in_tmp, "gate: {max_errors: 1}\n" + both, name="l.yaml", head=head)
    assert invoke("run", str(lenient))[0] == 0


def test_a_run_where_every_test_errored_exits_3_whatever_max_errors_says(in_tmp: Path) -> None:
    (in_tmp / "bots.py").write_text("def boom(messages, context):\n    raise ValueError('bot crashed')\n")
    head = "providers:\n  - id: bot\n    python: bots.py:boom\n"
    path = suite(in_tmp, "gate: {max_errors: 5}\ntests:\n  - id: t\n    conversation: [{user: hi}]\n", head=head)
    code, out = invoke("run", str(path), "-o", "run.json")
    assert code == 3, out
    assert "pass rate —" in out and "100%" not in out
    assert json.loads((in_tmp / "run.json").read_text())["gate"]["pass_rate"] is None


def test_failure_beats_errors_exit_1(in_tmp: Path) -> None:
    (in_tmp / "bots.py").write_text("def boom(messages, context):\n    raise ValueError('x')\n")
    path = suite(in_tmp, FAILING + "  - id: other\n    providers: [bad]\n    conversation: [{user: hi}]\n",
                 head=f"providers:\n  - id: bot\n    python: {BOT}:respond\n  - id: bad\n    python: bots.py:boom\n")
    assert invoke("run", str(path))[0] == 1


def test_validate_and_schema_commands(in_tmp: Path, root: Path) -> None:
    code, out = invoke("validate", str(root / "suites" / "invitation.yaml"))
    assert code == 0 and "ok:" in out
    code, out = invoke("schema")
    assert code == 0 and json.loads(out) == json.loads((root / "schema" / "suite.schema.json").read_text())
    code, out = invoke("list", "assertions")
    assert code == 0 and "memory-recall" in out and "not-before" in out


def test_validate_counts_in_singular_and_plural(in_tmp: Path) -> None:
    code, out = invoke("validate", str(suite(in_tmp, PASSING)))
    assert code == 0 and "ok: 1 suite, 1 test, 1 conversation planned" in out, out


def test_var_overrides_suite_vars(in_tmp: Path) -> None:
    body = """\
vars: {model: 追风}
tests:
  - id: t
    conversation:
      - user: 这台{{ model }}是哪年的车？
        assert: [{contains: "{{ year }}"}]
"""
    path = suite(in_tmp, body)
    assert invoke("run", str(path), "--var", "model=瑶光", "--var", "year=2024")[0] == 0
    assert invoke("run", str(path), "--var", "year=2024")[0] == 1


ECHO = "def respond(messages, context):\n    return messages[-1]['content'] + ' | ' + repr(context['vars'])\n"


def test_var_values_are_the_text_typed_and_numbers_only_when_they_read_back_the_same(in_tmp: Path) -> None:
    """`--var flag=yes` is the text yes (not YAML's true); 007 and 1.50 keep their digits; 3 is a
    number, so a template can count with it (`filler: "{{ n }}"`, `{{ n + 1 }}`)."""
    (in_tmp / "echo.py").write_text(ECHO, encoding="utf-8")
    body = """\
tests:
  - id: t
    conversation:
      - filler: "{{ n }}"
      - user: "{{ flag }} {{ off }} {{ code }} {{ price }} {{ n + 1 }} {{ nothing }}"
"""
    path = suite(in_tmp, body, head="providers:\n  - id: bot\n    python: echo.py:respond\n")
    code, out = invoke("run", str(path), "-o", "run.json", "--var", "flag=yes", "--var", "off=off",
                       "--var", "code=007", "--var", "price=1.50", "--var", "n=3", "--var", "nothing=null",
                       "--var", "inf=inf")
    assert code == 0, out
    (result,) = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))["results"]
    reply = result["transcript"][-1]["content"]
    assert reply.startswith("yes off 007 1.50 4 null | "), reply
    assert "'inf': 'inf'" in reply
    assert "'flag': 'yes'" in reply and "'code': '007'" in reply and "'n': 3," in reply
    assert len([m for m in result["transcript"] if m["role"] == "user"]) == 4  # three fillers, then the message


def test_undefined_template_variable_is_a_config_error(in_tmp: Path) -> None:
    path = suite(in_tmp, "vars: {name: 张三}\ntests:\n  - id: t\n    conversation:\n      - user: 你好 {{ nme }}\n")
    code, out = invoke("run", str(path))
    assert code == 2 and ":8: tests[0].conversation[0].user:" in out
    assert "'nme' is undefined (did you mean 'name'?)" in out


def test_demo_suites_exit_0_with_xfails_shown(root: Path, tmp_path: Path) -> None:
    """The newcomer's command, in a real process."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run([sys.executable, "-m", "evalspec", "run", *sorted(str(p) for p in (root / "suites").glob("*.yaml")),
                           "-o", str(tmp_path / "run.json")], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "xfailed" in proc.stdout and "measured" in proc.stdout and "gate passed" in proc.stdout
    data = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, RUN_SCHEMA)
    statuses = {r["status"] for r in data["results"]}
    assert {"passed", "xfailed", "failed"} <= statuses  # curve points fail without gating
    assert data["curves"][0]["sla"][0]["passed"] is True


@pytest.mark.parametrize("flag", ["--tag", "--provider"])
def test_tag_and_provider_selection(in_tmp: Path, flag: str) -> None:
    body = PASSING.replace("- id: year", "- id: year\n    tags: [keep]") + FAILING.replace("tests:\n", "").replace("- id: year", "- id: other")
    path = suite(in_tmp, body)
    if flag == "--tag":
        assert invoke("run", str(path), "--tag", "keep")[0] == 0
    else:
        assert invoke("run", str(path), "--provider", "nobody")[0] == 2


def test_unwritable_output_stops_before_running(in_tmp: Path) -> None:
    (in_tmp / "taken").write_text("a file, not a folder")
    code, out = invoke("run", str(suite(in_tmp, PASSING)), "-o", str(in_tmp / "taken" / "run.json"))
    assert code == 2 and "cannot create its folder" in out
    assert not (in_tmp / ".evalspec").exists()


def test_short_env_values_are_not_masked_and_structure_is_never_redacted(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOT_TOKEN", "t")
    monkeypatch.setenv("API_KEY", "year-secret-value")
    body = """\
vars: {token: "${BOT_TOKEN}", key: "${API_KEY}"}
tests:
  - id: distance-test
    matrix: {distance: [1, 2]}
    curve: distance
    conversation:
      - user: "这台瑶光是哪年的车？{{ key }}"
        assert: [{contains: "2024"}]
"""
    code, out = invoke("run", str(suite(in_tmp, body)), "-o", "run.json")
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    assert [r["test_id"] for r in data["results"]] == ["distance-test[distance=1]", "distance-test[distance=2]"]
    assert [p["value"] for p in data["curves"][0]["points"]] == [1, 2]
    assert "year-secret-value" not in json.dumps(data, ensure_ascii=False)
    assert data["results"][0]["transcript"][0]["content"] == "这台瑶光是哪年的车？***"
