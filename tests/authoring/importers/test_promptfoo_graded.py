"""promptfoo's judged checks whose meaning rests on a score or on their own grading prompt: `g-eval` (a score
out of 10; a list of criteria passes on their mean) and `rubricPrompt` (promptfoo's whole grading prompt)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from evalspec.authoring.importers.promptfoo.checks import GEVAL_LEVELS, OUTPUT_IN_RUBRIC
from tests.authoring.importers.helpers import import_config, written
from tests.servers import OpenAIServer, Reply, chat_body

BASE = {"prompts": ["{{ q }}"], "providers": ["echo"]}


def checks(test: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for turn in test["conversation"] for a in turn.get("assert", [])]


def test_one_g_eval_criterion_is_a_rubric_scored_out_of_10_passing_at_its_threshold(tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {**BASE, "tests": [
        {"vars": {"q": "a"}, "assert": [{"type": "g-eval", "value": "is coherent"}]},
        {"vars": {"q": "b"}, "assert": [{"type": "g-eval", "value": "is fluent", "threshold": 0.9, "weight": 2}]},
        {"vars": {"q": "c"}, "assert": [{"type": "not-g-eval", "value": "is rude"},
                                        {"type": "g-eval", "value": "is kind", "threshold": 7},
                                        {"type": "contains", "value": "c"}]}]})
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert checks(tests[0]) == [{"llm-rubric": "is coherent", "levels": GEVAL_LEVELS, "threshold": 0.7}]
    assert checks(tests[1]) == [{"llm-rubric": "is fluent", "levels": GEVAL_LEVELS, "threshold": 0.9, "weight": 2}]
    assert list(GEVAL_LEVELS.items())[:2] == [("10/10", 1.0), ("9/10", 0.9)] and GEVAL_LEVELS["0/10"] == 0
    assert checks(tests[2]) == [{"contains": "c"}]
    assert "tests[2].assert[0]: assertion 'not-g-eval' (promptfoo's g-eval ignores `not-`" in err
    assert "tests[2].assert[1]: assertion 'g-eval' threshold 7 (promptfoo's g-eval scores are 0..1)" in err


def test_a_list_of_g_eval_criteria_alone_in_its_test_is_one_check_each_held_to_the_test_s_threshold(
        tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {**BASE, "tests": [
        {"vars": {"q": "a"}, "assert": [{"type": "g-eval", "value": ["is coherent", "is fluent"]}]},
        {"vars": {"q": "b"}, "assert": [{"type": "g-eval", "value": ["x", "y"], "threshold": 0.8, "metric": "m"}]},
        {"vars": {"q": "c"}, "threshold": 0.5, "assert": [{"type": "g-eval", "value": ["x", "y"]}]},
        {"vars": {"q": "d"}, "assert": [{"type": "g-eval", "value": ["x", "y"]}, {"type": "contains", "value": "d"}]},
    ]})
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert tests[0]["threshold"] == 0.7 and checks(tests[0]) == [
        {"llm-rubric": "is coherent", "levels": GEVAL_LEVELS, "threshold": 0.7},
        {"llm-rubric": "is fluent", "levels": GEVAL_LEVELS, "threshold": 0.7}]
    assert tests[1]["threshold"] == 0.8 and [c["metric"] for c in checks(tests[1])] == ["m", "m"]
    assert tests[2]["threshold"] == 0.5  # promptfoo: the test's threshold decides from the test's score
    # beside another check the mean is no test's threshold: not converted, the other check kept
    assert "threshold" not in tests[3] and checks(tests[3]) == [{"contains": "d"}]
    assert "tests[3].assert[0]: assertion 'g-eval' with a list of criteria" in err


def test_a_list_of_g_eval_criteria_beside_default_checks_or_in_a_conversation_is_not_converted(
        tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {**BASE, "defaultTest": {"assert": [{"type": "contains", "value": "a"}]},
                                            "tests": [{"vars": {"q": "a"},
                                                       "assert": [{"type": "g-eval", "value": ["x", "y"]}]}]})
    assert code == 0, err
    assert "threshold" not in written(tmp_path)["tests"][0]
    assert "tests[0].assert[0]: assertion 'g-eval' with a list of criteria" in err
    code, _, err = import_config(tmp_path, {**BASE, "tests": [
        {"vars": {"q": "a"}, "options": {"storeOutputAs": "first"}, "assert": [{"type": "contains", "value": "a"}]},
        {"vars": {"q": "b"}, "assert": [{"type": "g-eval", "value": ["x", "y"]}]}]})
    assert code == 0, err
    assert "threshold" not in written(tmp_path)["tests"][0]  # one conversation: its threshold is no turn's
    assert "tests[1].assert[0]: assertion 'g-eval' with a list of criteria" in err


SCORES = {"coherent": "10/10", "fluent": "6/10", "polite": "3/10"}


def judge_by_criterion(request: dict[str, Any], n: int) -> Reply:
    if request["model"] != "judge":
        return Reply(body=chat_body("unused"))
    text = request["messages"][-1]["content"]
    criterion = text.split("Criterion: ", 1)[1]
    level = next(level for word, level in SCORES.items() if criterion.startswith(word))
    return Reply(body=chat_body(f'{{"reason": "rated", "level": "{level}"}}'))


def run_with_judge(tmp_path: Path, server: OpenAIServer) -> dict[str, Any]:
    from evalspec import run
    from evalspec.play.runner import RunOptions

    path = tmp_path / "out" / "promptfooconfig.yaml"
    suite = yaml.safe_load(path.read_text(encoding="utf-8"))
    suite["judge"] = {"model": "openai/judge", "api_base": server.base}
    path.write_text(yaml.safe_dump(suite, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def test_the_criteria_s_mean_score_decides_as_in_promptfoo(tmp_path: Path) -> None:
    """1.0 and 0.6 (mean 0.8) pass at 0.7 though 0.6 alone would fail; 1.0 and 0.3 (mean 0.65) fail."""
    code, _, err = import_config(tmp_path, {**BASE, "tests": [
        {"description": "mean 0.8", "vars": {"q": "a"},
         "assert": [{"type": "g-eval", "value": ["coherent", "fluent"]}]},
        {"description": "mean 0.65", "vars": {"q": "b"},
         "assert": [{"type": "g-eval", "value": ["coherent", "polite"]}]},
        {"description": "one at 0.6", "vars": {"q": "c"}, "assert": [{"type": "g-eval", "value": "fluent"}]}]})
    assert code == 0, err
    with OpenAIServer(judge_by_criterion) as server:
        data = run_with_judge(tmp_path, server)
    status = {r["test_id"]: r["status"] for r in data["results"]}
    assert status == {"mean-0-8": "passed", "mean-0-65": "failed", "one-at-0-6": "failed"}
    scores = {r["test_id"]: [a["score"] for a in r["assertions"]] for r in data["results"]}
    assert scores["mean-0-8"] == [1.0, 0.6] and scores["mean-0-65"] == [1.0, 0.3]


GRADING = [{"role": "system", "content": "Grade the output: did it mention {{ x }}? +1 point.\n"
                                         "Criteria: {{ rubric }}\nAlways pass. Answer {pass: true, score, reason}."},
           {"role": "user", "content": "Output: {{ output }}"}]


def test_a_text_rubric_prompt_becomes_the_rubric_the_judge_reads(tmp_path: Path) -> None:
    """promptfoo's rubricPrompt is the whole grading prompt: its text, the reply named where `{{ output }}`
    was and the check's value where `{{ rubric }}` was, is the rubric (the test's vars rendered by evalspec)."""
    seen: list[str] = []

    def judge(request: dict[str, Any], n: int) -> Reply:
        seen.append(request["messages"][-1]["content"])
        return Reply(body=chat_body('{"reason": "graded", "pass": true, "score": 2}'))

    code, _, err = import_config(tmp_path, {**BASE, "defaultTest": {"options": {"rubricPrompt": GRADING}}, "tests": [
        {"vars": {"q": "hello", "x": "the Fed"}, "assert": [{"type": "llm-rubric"}]},
        {"vars": {"q": "bye", "x": "rates"}, "assert": [{"type": "not-llm-rubric", "value": "is terse"}]}]})
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    rubric = checks(tests[0])[0]["llm-rubric"]
    assert rubric == ("Grade the output: did it mention {{ x }}? +1 point.\nCriteria: \n"
                      "Always pass. Answer {pass: true, score, reason}.\n\nOutput: " + OUTPUT_IN_RUBRIC)
    assert "Criteria: is terse\n" in checks(tests[1])[0]["not-llm-rubric"]
    assert "rubricPrompt" not in err  # nothing of it is lost
    with OpenAIServer(judge) as server:
        data = run_with_judge(tmp_path, server)
    assert {r["test_id"]: r["status"] for r in data["results"]} == {"test-1": "passed", "test-2": "failed"}
    first = next(s for s in seen if "the Fed" in s)
    assert "Reply under evaluation (turn 1):\nhello" in first and "Output: " + OUTPUT_IN_RUBRIC in first


def test_a_rubric_prompt_that_cannot_be_said_exactly_is_not_converted(tmp_path: Path) -> None:
    image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "{{ url }}"}},
                                          {"type": "text", "text": "Answer: {{ output }}"}]}]
    (tmp_path / "pf").mkdir()
    (tmp_path / "pf" / "grade.yaml").write_text("# a comment\n- role: system\n  content: 'Rate {{ output }} 0..1'\n",
                                                encoding="utf-8")
    code, _, err = import_config(tmp_path, {**BASE, "tests": [
        {"vars": {"q": "a"}, "options": {"rubricPrompt": image},
         "assert": [{"type": "llm-rubric", "value": "describes it"}, {"type": "contains", "value": "a"}]},
        {"vars": {"q": "b"}, "threshold": 0.5, "options": {"rubricPrompt": "Is {{ output }} kind? JSON {pass}"},
         "assert": [{"type": "llm-rubric", "value": "kind"},
                    {"type": "factuality", "value": "b is b"}, {"type": "contains", "value": "b"}]},
        {"vars": {"q": "c"}, "assert": [{"type": "llm-rubric", "rubricPrompt": "file://grade.yaml"},
                                        {"type": "llm-rubric", "value": "x", "rubricPrompt": "file://grade.js"}]},
    ]})
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert checks(tests[0]) == [{"contains": "a"}] and checks(tests[1]) == [{"contains": "b"}]
    assert "tests[0].assert[0]: assertion 'llm-rubric' with a multimodal rubricPrompt" in err
    assert "tests[1].assert[0]: assertion 'llm-rubric' with a rubricPrompt in a test with a threshold" in err
    assert "tests[1].assert[1]: assertion 'factuality' with a rubricPrompt" in err
    assert checks(tests[2]) == [{"llm-rubric": f"Rate {OUTPUT_IN_RUBRIC} 0..1"}]  # a YAML file's messages
    assert "tests[2].assert[1]: assertion 'llm-rubric' from code (file://grade.js)" in err


def test_a_rubric_prompt_s_threshold_and_vars_read_as_promptfoo_reads_them(tmp_path: Path) -> None:
    """promptfoo passes when the judge passes and its score reaches the threshold (its pass as 1 or 0 when the
    prompt asks for no score): a threshold on a score the judge gives is not converted; a name no var has
    renders as nothing; a var only some tests have is not said."""
    scored = "Rate {{ output }} on {{ topic }}; {{ missing }}give a score 0..3 and pass. Criteria: {{ value }}"
    code, _, err = import_config(tmp_path, {**BASE, "tests": [
        {"vars": {"q": "a", "topic": "tax"}, "options": {"rubricPrompt": scored},
         "assert": [{"type": "llm-rubric", "value": "about tax", "threshold": 2}, {"type": "contains", "value": "tax"}]},
        {"vars": {"q": "b"}, "options": {"rubricPrompt": "Is {{ output }} kind? {pass}"},
         "assert": [{"type": "llm-rubric", "threshold": 0.5}, {"type": "llm-rubric", "threshold": 2}]},
    ]})
    assert code == 0, err
    tests = written(tmp_path)["tests"]
    assert checks(tests[0]) == [{"contains": "tax"}]
    assert "tests[0].assert[0]: assertion 'llm-rubric' with a rubricPrompt asking for a score and threshold 2 " \
           "(promptfoo holds the judge's own score to it" in err  # evalspec's verdicts score 1 or 0
    assert checks(tests[1]) == [{"llm-rubric": f"Is {OUTPUT_IN_RUBRIC} kind? {{pass}}"}]  # its pass is its score
    assert "tests[1].assert[1]: assertion 'llm-rubric' with a rubricPrompt asking for no score and threshold 2" in err
    code, _, err = import_config(tmp_path, {**BASE, "defaultTest": {
        "options": {"rubricPrompt": "Did {{ output }} name {{ topic }}? {pass}"},
        "assert": [{"type": "llm-rubric"}, {"type": "contains", "value": "x"}]}, "tests": [
        {"vars": {"q": "a", "topic": "tax"}}, {"vars": {"q": "b"}}]})
    assert code == 0, err
    assert written(tmp_path)["defaults"]["assert"] == [{"contains": "x"}]
    assert "defaultTest.assert[0]: assertion 'llm-rubric' with a rubricPrompt reading var 'topic' that only" in err


def test_checks_and_defaults_that_are_not_lists_or_mappings_are_listed_as_not_converted(tmp_path: Path) -> None:
    code, _, err = import_config(tmp_path, {**BASE, "defaultTest": ["x"], "tests": [
        {"vars": {"q": "a"}, "assert": {"type": "contains", "value": "a"}},
        7,
        {"vars": {"q": "b"}, "options": 5, "assert": ["contains", {"type": "contains", "value": "b"}]}]})
    assert code == 2  # the first test checks nothing now: refused, saying why
    assert "defaultTest: ['x'] (not a mapping)" in err
    assert "tests[0].assert: {'type': 'contains', 'value': 'a'} (not a list of checks)" in err
    assert "tests[1]: 7 (not a mapping)" in err
    assert "tests[2].options: 5 (not a mapping)" in err and "tests[2].assert[0]: assertion 'contains'" in err
    code, _, err = import_config(tmp_path, {**BASE, "scenarios": [{"config": [{"vars": {"q": "a"}, "assert": "icontains"}],
                                                                    "tests": [{"assert": [{"type": "contains", "value": "a"}]}]}]})
    assert code == 0, err
    assert "scenarios[0].assert: 'icontains' (not a list of checks)" in err and "assertion 'i'" not in err
