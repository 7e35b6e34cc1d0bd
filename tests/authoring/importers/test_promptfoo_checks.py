"""promptfoo checks as evalspec checks: what keeps its meaning is converted, tests that check nothing in the
source are left out beside tests that check, and nothing hollow is written (SPEC §19)."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

from tests.authoring.importers.helpers import import_config, played, written

COMPARE = {"prompts": ["Answer: {{ message }}"], "providers": ["openai:gpt-4o-mini"],
           "tests": [{"vars": {"message": "What's the capital of France?"}},
                     {"vars": {"message": "Are hippos good swimmers?"},
                      "assert": [{"type": "llm-rubric", "value": "says that hippos are not good swimmers"}]},
                     {"description": "poem", "vars": {"message": "Write a poem about the sea."}}]}


def test_tests_that_check_nothing_in_the_source_are_left_out_beside_tests_that_check(tmp_path: Path) -> None:
    code, out, err = import_config(tmp_path, COMPARE)
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert [t["conversation"][0]["user"] for t in tests] == ["Answer: Are hippos good swimmers?"]
    assert tests[0]["conversation"][0]["assert"] == [{"llm-rubric": "says that hippos are not good swimmers"}]
    assert "2 test(s) left out that check nothing in the source" in err and "test-1, poem" in err
    head = (tmp_path / "out" / "promptfooconfig.yaml").read_text(encoding="utf-8").split("\ntests:")[0]
    assert "left out that check nothing in the source" in head  # said in the suite too


def test_allow_empty_writes_the_tests_that_check_nothing_too(tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, COMPARE, "--allow-empty")
    assert code == 0, err
    assert [t["id"] for t in written(tmp_path)["tests"]] == ["test-1", "test-2", "poem"]


def test_a_config_whose_tests_all_check_nothing_is_refused_saying_the_source_has_no_check(tmp_path: Path) -> None:
    config = {**COMPARE, "tests": [COMPARE["tests"][0], COMPARE["tests"][2]]}
    code, _, err = import_config(tmp_path, config)
    assert code == 2 and not (tmp_path / "out").exists()
    assert "test 'test-1': checks nothing: its source has no check either" in err
    assert "test 'poem': checks nothing: its source has no check either" in err


def test_a_test_whose_checks_were_all_dropped_still_refuses_the_import(tmp_path: Path) -> None:
    """A check lost in conversion is never hidden by leaving its test out."""
    config = {**COMPARE, "tests": [*COMPARE["tests"], {"vars": {"message": "hi"},
                                                       "assert": [{"type": "no-such-check", "value": 1}]}]}
    code, _, err = import_config(tmp_path, config)
    assert code == 2 and not (tmp_path / "out").exists()
    assert "test 'test-4': checks nothing: none of its source's checks could be converted" in err


def test_default_checks_make_every_test_checked(tmp_path: Path) -> None:
    config = {**COMPARE, "defaultTest": {"assert": [{"type": "not-contains", "value": "As an AI"}]}}
    code, _, err = import_config(tmp_path, config)
    assert code == 0, err
    assert len(written(tmp_path)["tests"]) == 3 and "left out" not in err


def test_python_checks_give_promptfoo_s_verdicts(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "grade.py").write_text(
        "def get_assert(output, context):\n    return 0.2 if context['vars']['n'] == '1' else 0\n\n"
        "def strict(output, context):\n"
        "    return {'pass': True, 'score': 0.4, 'reason': 'graded ' + context['prompt']}\n", encoding="utf-8")
    results = played(tmp_path, {"prompts": ["say {{ n }}"], "tests": [
        {"description": "a-expression", "vars": {"n": "1"}, "assert": [{"type": "python", "value": "'1' in output"}]},
        {"description": "b-body", "vars": {"n": "2"}, "assert": [{"type": "python", "value":
            "words = output.split()\nif len(words) != 2:\n    return False\nreturn {'pass': words[1] == '3', "
            "'score': 1.0, 'reason': 'second word ' + words[1]}"}]},
        {"description": "c-score-above-0", "vars": {"n": "1"}, "assert": [{"type": "python", "value": "file://grade.py"}]},
        {"description": "d-score-0", "vars": {"n": "2"}, "assert": [{"type": "python", "value": "file://grade.py"}]},
        {"description": "e-threshold", "vars": {"n": "1"},
         "assert": [{"type": "python", "value": "file://grade.py:strict", "threshold": 0.5}]},
        {"description": "f-text-true", "vars": {"n": "1"}, "assert": [{"type": "python", "value": "'TRUE'"}]},
        {"description": "g-raises", "vars": {"n": "1"}, "assert": [{"type": "python", "value": "1 / 0"}]},
        {"description": "h-config-data", "vars": {"n": "1"}, "assert": [  # a YAML date, a NaN: data, not code
            {"type": "python", "value": "context['config']['since'] == '2024-01-01' and output == 'say 1'",
             "config": {"since": datetime.date(2024, 1, 1), "limit": math.nan}}]},
    ]})
    verdicts = {r["test_id"]: r["status"] for r in results}
    assert verdicts == {"a-expression": "passed", "b-body": "failed", "c-score-above-0": "passed",
                        "d-score-0": "failed", "e-threshold": "failed", "f-text-true": "passed",
                        "g-raises": "error", "h-config-data": "passed"}  # 0.2 passes as in promptfoo (evalspec alone reads 0.5)
    reasons = {r["test_id"]: r["assertions"][0].get("reason", "") for r in results}
    assert "second word 2" in reasons["b-body"]
    assert "less than threshold 0.5: graded say 1" in reasons["e-threshold"]


def test_var_files_are_read_as_promptfoo_reads_them_and_default_test_may_be_a_file(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "topic.txt").write_text("  the sea 大海\n", encoding="utf-8")
    (tmp_path / "pf" / "facts.yaml").write_text("city: 北京\nsize: 2\nsince: 2004-02-04\n", encoding="utf-8")
    (tmp_path / "pf" / "defaults.yaml").write_text(
        "vars: {style: file://topic.txt}\nassert: [{type: icontains, value: sea}]\n", encoding="utf-8")
    results = played(tmp_path, {"prompts": ["{{ topic }} | {{ facts }} | {{ style }}"],
                                "defaultTest": "file://defaults.yaml",
                                "tests": [{"vars": {"topic": "file://topic.txt", "facts": "file://facts.yaml"}}]})
    (result,) = results
    assert result["status"] == "passed"
    sent = result["transcript"][0]["content"]
    assert sent == 'the sea 大海 | {"city":"北京","size":2,"since":"2004-02-04T00:00:00.000Z"} | the sea 大海'  # a Date


def test_a_var_file_outside_the_config_folder_or_a_script_is_never_read(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("hunter2", encoding="utf-8")
    code, _, err = import_config(tmp_path, {"prompts": ["{{ a }}"], "providers": ["echo"], "tests": [
        {"vars": {"a": "file://../secret.txt"}, "assert": [{"type": "contains", "value": "x"}]}]})
    assert code == 2 and "outside the config's folder" in err and "hunter2" not in err
    code, _, err = import_config(tmp_path, {"prompts": ["{{ a }}"], "providers": ["echo"], "tests": [
        {"vars": {"a": "file://make.py"}, "assert": [{"type": "contains", "value": "x"}]}]})
    assert code == 0 and "var 'a' reads file://make.py (promptfoo runs or encodes it; kept as written)" in err


def test_more_promptfoo_types_convert_with_their_meaning(tmp_path: Path) -> None:
    results = played(tmp_path, {"prompts": ["{{ q }}"], "tests": [
        {"description": "icontains-all", "vars": {"q": "Paris is in FRANCE"},
         "assert": [{"type": "icontains-all", "value": ["paris", "france"]},
                    {"type": "not-icontains-all", "value": ["paris", "spain"]}]},
        {"description": "icontains-all-missing", "vars": {"q": "Paris"},
         "assert": [{"type": "icontains-all", "value": ["paris", "france"]}]},
        {"description": "not-empty", "vars": {"q": "x"}, "assert": [{"type": "not-equals", "value": ""}]},
        {"description": "word-count", "vars": {"q": "one two three"},
         "assert": [{"type": "word-count", "value": 3}, {"type": "word-count", "value": {"min": 1, "max": 2}}]},
        {"description": "schema", "vars": {"q": '{"name": "Ann"}'}, "assert": [{"type": "is-json", "value":
            "type: object\nrequired: [name, age]"}]},
    ]})
    verdicts = {r["test_id"]: [a["pass"] for a in r["assertions"]] for r in results}
    assert verdicts == {"icontains-all": [True, True], "icontains-all-missing": [False], "not-empty": [True],
                        "word-count": [True, False], "schema": [False]}  # the schema is kept: no age, a fail


def test_model_graded_checks_become_rubrics_a_judge_answers(tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["openai:gpt-4o-mini"], "tests": [
        {"vars": {"q": "capital of France?"},
         "assert": [{"type": "factuality", "value": "Paris is the capital of France"},
                    {"type": "answer-relevance", "threshold": 0.8},
                    {"type": "context-recall", "value": "Paris"}]}]})
    assert code == 0, err
    (test,) = written(tmp_path)["tests"]
    rubrics = [a["llm-rubric"] for a in test["conversation"][0]["assert"]]
    assert rubrics[0].endswith("contradicts none of it. Reference: Paris is the capital of France")
    assert rubrics[1] == "The reply is relevant to the user's question and answers it."
    assert "assertion type 'context-recall'" in err and "threshold 0.8 (promptfoo's own scale" in err
    assert written(tmp_path)["judge"] == "openai/gpt-4o-mini"


def test_a_judged_check_on_a_transformed_output_is_not_converted_a_trim_is_kept(tmp_path: Path) -> None:
    """promptfoo checks `transform(output)`: a check on the reply as it is would mean something else, so what
    cannot run the transform itself (judged checks) is not converted."""
    code, _, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["echo"], "tests": [
        {"description": "parsed", "vars": {"q": "hi"},
         "assert": [{"type": "similar", "value": "Ann", "transform": "JSON.parse(output).name"}]}]})
    assert code == 2 and "test 'parsed': checks nothing: none of its source's checks" in err
    assert "assertion 'similar' on the output transformed by 'JSON.parse(output).name'" in err
    code, _, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["echo"], "tests": [
        {"vars": {"q": "hi"}, "options": {"transform": "output.toUpperCase()"},
         "assert": [{"type": "llm-rubric", "value": "shouts"}]}]})
    assert code == 2 and "tests[0].assert[0]: assertion 'llm-rubric' on the output transformed by" in err
    code, _, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["echo"], "tests": [
        {"vars": {"q": "hi"}, "assert": [{"type": "equals", "value": "hi", "transform": "output.trim()"}]}]})
    assert code == 0, err
    assert written(tmp_path)["tests"][0]["conversation"][0]["assert"] == [{"equals": "hi"}]


def test_a_trim_is_kept_only_before_checks_that_ignore_surrounding_white_space(tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["echo"], "tests": [
        {"vars": {"q": "hi"}, "options": {"transform": "output.trim()"},
         "assert": [{"type": "contains", "value": "hi"}, {"type": "regex", "value": "^hi$"},
                    {"type": "contains", "value": " hi "}]}]})
    assert code == 0, err
    checks = written(tmp_path)["tests"][0]["conversation"][0]["assert"]
    assert checks[0] == {"contains": "hi"}  # as it is: the trim changes nothing it reads
    assert [list(c) for c in checks[1:]] == [["javascript"], ["javascript"]]  # the trim runs first
    assert "return output.trim();" in checks[1]["javascript"] and 'const expected = " hi ";' in checks[2]["javascript"]


def test_a_text_check_on_a_transformed_output_runs_as_one_javascript_check_with_the_same_verdict(
        tmp_path: Path) -> None:
    import shutil

    import pytest

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    body = "const parsed = JSON.parse(output);\nreturn parsed.tweet.toUpperCase();"
    results = played(tmp_path, {"prompts": ["{{ q }}"], "tests": [
        {"description": "a", "vars": {"q": '{"tweet": "hello 世界"}'}, "options": {"transform": "JSON.parse(output).tweet"},
         "assert": [{"type": "equals", "value": "hello 世界"}, {"type": "not-contains", "value": "tweet"},
                    {"type": "icontains-all", "value": ["HELLO", "世界"]}, {"type": "regex", "value": "^h.*界$"}]},
        {"description": "b", "vars": {"q": '{"tweet": "hello"}'},
         "assert": [{"type": "starts-with", "value": "HELLO", "transform": body},
                    {"type": "equals", "value": "hello", "transform": body}]}]})
    verdicts = {r["test_id"]: [a["pass"] for a in r["assertions"]] for r in results}
    assert verdicts == {"a": [True, True, True, True], "b": [True, False]}
    code = written(tmp_path)["tests"][1]["conversation"][0]["assert"][0]["javascript"]
    assert "const parsed = JSON.parse(output);" in code and "String(expected)" in code


def test_a_var_file_that_is_no_json_data_is_an_import_problem_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "loop.yaml").write_text("&a [*a]\n", encoding="utf-8")
    code, _, err = import_config(tmp_path, {"prompts": ["{{ a }}"], "providers": ["echo"], "tests": [
        {"vars": {"a": "file://loop.yaml"}, "assert": [{"type": "contains", "value": "x"}]}]})
    assert code == 2 and "var 'a'" in err and "is not YAML promptfoo can send" in err


def test_importing_again_replaces_what_the_last_import_wrote_and_never_the_source(tmp_path: Path) -> None:
    config = {"prompts": ["{{ q }}"], "providers": ["echo"],
              "tests": [{"vars": {"q": "hello"}, "assert": [{"type": "python", "value": "'hello' in output"}]}]}
    assert import_config(tmp_path, config)[0] == 0
    config["tests"][0]["assert"][0]["value"] = "'goodbye' in output"
    code, out, err = import_config(tmp_path, config)
    assert code == 0, err
    checks = (tmp_path / "out" / "promptfoo_checks.py").read_text(encoding="utf-8")
    assert "'goodbye' in output" in checks and "'hello' in output" not in checks
    assert "promptfoo_checks.py" in out  # said as written

    from click.testing import CliRunner

    from evalspec.app.cli.main import main

    source = tmp_path / "pf" / "promptfooconfig.yaml"
    before = source.read_text(encoding="utf-8")
    result = CliRunner().invoke(main, ["import", "promptfoo", str(source), "-o", str(tmp_path / "pf")])
    assert result.exit_code == 2 and "exists and was not written by evalspec: not overwritten" in result.stderr
    assert source.read_text(encoding="utf-8") == before and "refused: nothing was written" in result.stderr


def test_equals_and_starts_with_are_exact_as_in_promptfoo(tmp_path: Path) -> None:
    results = played(tmp_path, {"prompts": ["{{ q }}"], "tests": [
        {"description": "spaced", "vars": {"q": "  Yarr  "},
         "assert": [{"type": "equals", "value": "Yarr"}, {"type": "starts-with", "value": "Yarr"},
                    {"type": "javascript", "value": "output.startsWith('Yarr')"},
                    {"type": "equals", "value": "Yarr", "transform": "output.trim()"}]},
        {"description": "exact", "vars": {"q": "Yarr (1+1)"},
         "assert": [{"type": "equals", "value": "Yarr (1+1)"}, {"type": "not-starts-with", "value": "yarr"}]}]})
    verdicts = {r["test_id"]: [a["pass"] for a in r["assertions"]] for r in results}
    assert verdicts == {"spaced": [False, False, False, True], "exact": [True, True]}


def test_a_check_s_transform_runs_after_the_test_s_as_in_promptfoo(tmp_path: Path) -> None:
    import shutil

    import pytest

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    results = played(tmp_path, {"prompts": ["{{ q }}"], "tests": [
        {"description": "chained", "vars": {"q": '{"color": 5, "countries": ["India"]}'},
         "options": {"transform": "JSON.parse(output)"},
         "assert": [{"type": "contains-any", "value": ["India", "Peru"], "transform": "output.countries.join(',')"},
                    {"type": "icontains", "value": "5", "transform": "String(output.color)"}]}]})
    assert [a["pass"] for a in results[0]["assertions"]] == [True, True]
    code, _, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": ["echo"], "tests": [
        {"vars": {"q": "{}"}, "options": {"transform": "JSON.parse(output)"},
         "assert": [{"type": "is-json", "value": {"required": ["color"]}}, {"type": "contains", "value": "{"}]}]})
    assert code == 0, err
    assert "assertion 'is-json' on the output transformed by 'JSON.parse(output)'" in err  # its schema is not dropped


def test_an_http_provider_sends_its_own_dollar_text_as_written_and_env_refs_from_the_environment(
        tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {"prompts": ["{{ q }}"], "providers": [{"id": "https", "config": {
        "url": "https://bot.example/chat?k=${KEY}", "method": "POST",
        "headers": {"Authorization": "Bearer ${SECRET}", "X-Token": "{{env.TOKEN}}"},
        "body": {"q": "{{prompt}}", "note": "costs ${5}"}}}],
        "tests": [{"vars": {"q": "hi"}, "assert": [{"type": "contains", "value": "hi"}]}]})
    assert code == 0, err
    http = written(tmp_path)["providers"][0]["http"]
    assert http["url"] == "https://bot.example/chat?k=$${KEY}"
    assert http["headers"] == {"Authorization": "Bearer $${SECRET}", "X-Token": "${TOKEN:-}"}
    assert http["body"] == {"q": "{{ message }}", "note": "costs $${5}"}
