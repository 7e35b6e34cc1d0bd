"""Juries (`judge:` as a list, `jury: {rule, quorum}`): each member asked, abstentions, the rules, agreement.
Several judge "models" are one loopback server answering by the model name it is asked for."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from evalspec.results.agreement import fleiss_kappa
from evalspec.results.runjson import run_schema_problem
from tests.servers import OpenAIServer, Reply, chat_body

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"
Answer = Callable[[int], Any]  # the n-th call to this model -> a verdict (True / False / a level name), or None: a 500


def jury_server(answers: Mapping[str, Any]) -> OpenAIServer:
    """One server, one judge per model name: `answers[model]` is a verdict, a list of them (the n-th call of
    that model answers the n-th), or None (that model's calls fail)."""
    calls: dict[str, int] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        model = request["model"]
        k = calls[model] = calls.get(model, -1) + 1
        given = answers[model]
        verdict = given[k % len(given)] if isinstance(given, list) else given
        if verdict is None:
            return Reply(status=500, body={"error": {"message": f"{model} is down"}})
        key = "level" if isinstance(verdict, str) else "pass"
        return Reply(body=chat_body(json.dumps({"reason": f"{model} 认为{verdict}", key: verdict}, ensure_ascii=False),
                                    model=model))

    return OpenAIServer(script)


def go(tmp_path: Path, server: OpenAIServer, models: list[str], jury: str = "", asserts: str = "",
       tests: int = 1) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    members = ", ".join(f'{{model: openai/{m}, api_base: "{server.base}", retries: 0}}' for m in models)
    path = tmp_path / "s.yaml"
    cases = "".join(f"""
  - id: t{i}
    conversation:
      - user: 这台瑶光是哪年的车？
    assert:
      {asserts or "- llm-rubric: 回答礼貌"}
""" for i in range(tests))
    path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: [{members}]
{jury}
tests:{cases}""", encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def first(data: dict[str, Any]) -> dict[str, Any]:
    return data["results"][0]["assertions"][0]


def test_every_member_is_asked_and_its_verdict_is_recorded(tmp_path: Path) -> None:
    with jury_server({"a": True, "b": False, "c": True}) as server:
        data = go(tmp_path, server, ["a", "b", "c"])
    a = first(data)
    assert sorted(c["model"] for c in server.chats()) == ["a", "b", "c"]
    assert a["pass"] is True and a["score"] == pytest.approx(2 / 3)
    assert [m["judge"] for m in a["jury"]] == ["openai/a", "openai/b", "openai/c"]
    assert [m["pass"] for m in a["jury"]] == [True, False, True]
    assert a["jury"][1]["reason"] == "b 认为False"
    assert a["reason"].startswith("jury (majority): 2/3") and "评审团（majority）" in a["reason_zh"]
    assert data["summary"]["judge_calls"] == 3
    assert run_schema_problem(data) is None


def test_a_tie_fails_a_majority(tmp_path: Path) -> None:
    with jury_server({"a": True, "b": False}) as server:
        a = first(go(tmp_path, server, ["a", "b"], "jury: {quorum: 2}"))
    assert a["pass"] is False


@pytest.mark.parametrize(("rule", "passed"), [("all", False), ("any", True), ("mean", True), ("majority", True)])
def test_the_rules(tmp_path: Path, rule: str, passed: bool) -> None:
    with jury_server({"a": True, "b": False, "c": True}) as server:
        a = first(go(tmp_path, server, ["a", "b", "c"], f"jury: {{rule: {rule}}}"))
    assert a["pass"] is passed


def test_a_member_that_errs_abstains_and_counts_in_no_rule(tmp_path: Path) -> None:
    with jury_server({"a": False, "b": None, "c": False}) as server:
        a = first(go(tmp_path, server, ["a", "b", "c"], "jury: {rule: all}"))
    assert a["pass"] is False and a["error"] is None  # two answered (quorum 2): both failed
    assert a["jury"][1]["judge"] == "openai/b" and "error" in a["jury"][1] and "pass" not in a["jury"][1]
    with jury_server({"a": True, "b": None, "c": True}) as server:
        a = first(go(tmp_path / "2", server, ["a", "b", "c"], "jury: {rule: all}"))
    assert a["pass"] is True  # the erring member is no failure under `all`


def test_below_quorum_is_an_error(tmp_path: Path) -> None:
    with jury_server({"a": True, "b": None, "c": None}) as server:
        data = go(tmp_path, server, ["a", "b", "c"])
    a = first(data)
    assert a["pass"] is None and data["results"][0]["status"] == "error"
    assert "only 1 judges of the jury answered, below its quorum of 2" in a["error"]


def test_levels_under_majority_take_the_lower_middle_level(tmp_path: Path) -> None:
    levels = "- follows-correction:\n        levels: {好: 1.0, 中: 0.6, 差: 0}"
    with jury_server({"a": "好", "b": "差", "c": "中", "d": "差"}) as server:
        a = first(go(tmp_path, server, ["a", "b", "c", "d"], asserts=levels))
    assert a["score"] == 0 and a["pass"] is False and a["details"]["level"] == "差"  # 差 差 | 中 好: the lower middle
    with jury_server({"a": "好", "b": "差", "c": "中"}) as server:
        a = first(go(tmp_path / "2", server, ["a", "b", "c"], asserts=levels))
    assert a["score"] == 0.6 and a["pass"] is True and [m["level"] for m in a["jury"]] == ["好", "差", "中"]


def test_with_samples_each_members_own_majority_is_its_vote(tmp_path: Path) -> None:
    with jury_server({"a": [True, False, False], "b": [True, True, False], "c": [False]}) as server:
        a = first(go(tmp_path, server, ["a", "b", "c"], asserts="- llm-rubric: 回答礼貌\n        samples: 3"))
    assert [m["pass"] for m in a["jury"]] == [False, True, False] and a["pass"] is False


def test_agreement_and_disagreement_are_summarized_per_rule(tmp_path: Path) -> None:
    with jury_server({"a": True, "b": [True, False], "c": True}) as server:
        data = go(tmp_path, server, ["a", "b", "c"], tests=4)
    (line,) = data["summary"]["juries"]
    assert line["members"] == ["openai/a", "openai/b", "openai/c"] and line["n"] == 4
    assert line["disagreement"] == {"openai/a": 0.0, "openai/b": 0.5, "openai/c": 0.0}
    # two conversations all pass, two 2-of-3: P = (1 + 1 + 1/3 + 1/3) / 4, Pe = (10/12)² + (2/12)²
    observed, expected = (2 + 2 / 3) / 4, (10 / 12) ** 2 + (2 / 12) ** 2
    assert line["kappa"] == pytest.approx((observed - expected) / (1 - expected), abs=1e-4)
    assert run_schema_problem(data) is None


def test_the_reports_show_each_jurys_agreement_in_both_languages(tmp_path: Path) -> None:
    from evalspec.reporters.html import render_html
    from evalspec.reporters.markdown import render_markdown

    with jury_server({"a": True, "b": [True, False], "c": True}) as server:
        data = go(tmp_path, server, ["a", "b", "c"], tests=2)
    en, zh = render_markdown(data, lang="en"), render_markdown(data, lang="zh")
    assert "### Juries: how far the judges agree" in en and "| llm-rubric: 回答礼貌 |" in en
    assert "openai/b 50%" in en and "| -0.20 |" in en
    assert "### 评审团：评审之间的一致程度" in zh and "一致性（Fleiss' kappa）" in zh
    page = render_html(data, lang="zh")
    assert "评审团：评审之间的一致程度" in page and "openai/b 50%" in page


def test_fleiss_kappa_matches_the_published_worked_example() -> None:
    # Fleiss' kappa, Wikipedia's worked example: 10 subjects, 14 raters, 5 categories -> 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.2099, abs=1e-4)
    assert fleiss_kappa([[3, 0], [3, 0]]) == 1.0  # every answer the same
    assert fleiss_kappa([]) is None


@pytest.mark.parametrize(("judge", "jury", "message"), [
    ("[openai/a]", "", "a jury needs at least two judges"),
    ("[openai/a, openai/a]", "", "judge 'openai/a' is twice in the jury"),
    ("[openai/a, openai/b]", "jury: {rule: most}", "jury rule 'most' is not one of: majority, mean, all, any"),
    ("[openai/a, openai/b]", "jury: {quorum: 3}", "jury quorum must be a whole number from 1 to 2"),
    ("openai/a", "jury: {rule: all}", "'jury' needs 'judge' to be a list"),
])
def test_a_jury_written_wrong_is_a_config_error(tmp_path: Path, judge: str, jury: str, message: str) -> None:
    from evalspec.config.loader import load_suite

    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {judge}
{jury}
tests:
  - conversation: [{{user: 你好}}]
    assert: [{{llm-rubric: 礼貌}}]
""", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    assert message in str(caught.value)


def test_every_member_is_checked_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import invoke

    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: [{{model: openai/a, api_base: "http://127.0.0.1:9/v1"}}, deepseek/deepseek-chat]
tests:
  - conversation: [{{user: 你好}}]
    assert: [{{llm-rubric: 礼貌}}]
""", encoding="utf-8")
    code, output = invoke("validate", str(path))
    assert code == 2 and "judge[1]: judge 'deepseek/deepseek-chat': model 'deepseek/deepseek-chat' needs an API key" \
        in output


def test_an_assertion_may_have_its_own_jury(tmp_path: Path) -> None:
    with jury_server({"a": True, "b": False, "c": False, "d": True}) as server:
        own = f'{{model: openai/c, api_base: "{server.base}"}}, {{model: openai/d, api_base: "{server.base}"}}'
        data = go(tmp_path, server, ["a", "b"], "jury: {quorum: 1}",
                  f"- llm-rubric: 回答礼貌\n        judge: [{own}]\n        jury: {{rule: any}}")
    a = first(data)
    assert [m["judge"] for m in a["jury"]] == ["openai/c", "openai/d"] and a["pass"] is True
    assert sorted(c["model"] for c in server.chats()) == ["c", "d"]


def test_an_assertions_jury_without_a_judge_list_is_a_config_error(tmp_path: Path) -> None:
    from evalspec.config.loader import load_suite

    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: openai/a
tests:
  - conversation: [{{user: 你好}}]
    assert: [{{llm-rubric: 礼貌, jury: {{rule: all}}}}]
""", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    assert "'jury' needs this check's `judge:` to be a list" in str(caught.value)
