"""`pairwise`: a judge compares a reply with the baseline run's, another provider's or a reference, asked
twice with the sides swapped; disagreeing answers are position-inconsistent ties, counted apart."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.helpers import LITELLM, invoke
from tests.servers import OpenAIServer, Reply, chat_body, form_of, llama_cpp_like

pytestmark = LITELLM

BOTS = '''\
def plain(messages, context):
    return "A tweet about " + messages[-1]["content"]

def funny(messages, context):
    return "LOL " + messages[-1]["content"] + " walk into a bar"
'''
Script = Callable[[dict[str, Any], int], Reply]


def sides(request: dict[str, Any]) -> dict[str, str]:
    return dict(re.findall(r'<side label="([AB])">\n(.*?)\n</side>', request["messages"][-1]["content"], re.S))


def answering(pick: Callable[[dict[str, str]], str]) -> Script:
    def script(request: dict[str, Any], n: int) -> Reply:
        return Reply(body=chat_body(json.dumps({"reason": "compared", "winner": pick(sides(request))})))
    return script


ALWAYS_FIRST = answering(lambda s: "A")
PREFERS_LOL = answering(lambda s: "A" if "LOL" in s["A"] and "LOL" not in s["B"] else
                        "B" if "LOL" in s["B"] and "LOL" not in s["A"] else "tie")


def suite(tmp_path: Path, server: OpenAIServer, assert_: str, providers: str = "plain, funny") -> Path:
    (tmp_path / "bots.py").write_text(BOTS, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers:
  - {{id: plain, python: bots.py:plain}}
  - {{id: funny, python: bots.py:funny}}
judge: {{model: openai/gpt-4o-mini, api_base: "{server.base}", api_key: sk-test}}
tests:
  - id: tweet
    providers: [{providers}]
    conversation:
      - user: 香蕉
    assert:
{assert_}""", encoding="utf-8")
    return path


def go(path: Path, tmp_path: Path, name: str = "run", baseline: str | None = None) -> dict[str, Any]:
    return run([path], baseline=baseline, options=RunOptions(run_dir=tmp_path / name, use_cache=False,
                                                             cache_dir=tmp_path / "cache")).data


def pairwise(data: dict[str, Any], provider: str) -> dict[str, Any]:
    record = next(r for r in data["results"] if r["provider"] == provider)
    return next(a for a in record["assertions"] if a["type"] == "pairwise")


def test_a_judge_that_always_prefers_the_first_position_gives_only_position_inconsistent_ties(tmp_path: Path) -> None:
    rules = ("      - pairwise: {against: plain}\n"
             "      - pairwise: {against: plain, pass_if: better}\n")
    with OpenAIServer(ALWAYS_FIRST) as server:
        data = go(suite(tmp_path, server, rules), tmp_path)
    assert len(server.chats()) == 4  # two rules, each asked in both orders
    not_worse, better = (a for a in next(r for r in data["results"] if r["provider"] == "funny")["assertions"])
    assert not_worse["details"]["pairwise"]["outcome"] == better["details"]["pairwise"]["outcome"] == "inconsistent"
    assert not_worse["pass"] is True and better["pass"] is False  # a tie passes not_worse, fails better
    assert "tie (position-inconsistent) with plain" in not_worse["reason"]
    lines = data["summary"]["pairwise"]
    assert [(x["wins"], x["ties"], x["inconsistent"], x["losses"], x["win_rate"]) for x in lines] == [(0, 0, 1, 0, 0.0)] * 2
    plain = pairwise(data, "plain")
    assert plain["skipped"] is True and plain["pass"] is None  # the side compared against is not compared
    _, out = invoke("report", str(tmp_path / "run" / "run.json"), "--md", str(tmp_path / "r.md"))
    for text in (out, (tmp_path / "r.md").read_text(encoding="utf-8")):  # the green tie is named as the judge's
        assert "1 of 1 answers changed with the order of the replies" in text, text


def test_a_judge_that_prefers_the_better_side_gives_wins_and_sees_both_orders(tmp_path: Path) -> None:
    with OpenAIServer(PREFERS_LOL) as server:
        data = go(suite(tmp_path, server, "      - pairwise: {against: plain, pass_if: better}\n"), tmp_path)
    first, second = (sides(c) for c in server.chats())
    assert "LOL" in first["A"] and "LOL" in second["B"]  # ours first, then swapped
    schema = server.chats()[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["winner"] == {"type": "string", "enum": ["A", "B", "tie"]}
    check = pairwise(data, "funny")
    assert check["pass"] is True and check["details"]["pairwise"] == {
        "outcome": "win", "against": "plain", "winners": ["A", "B"], "pass_if": "better"}
    [line] = data["summary"]["pairwise"]
    assert (line["wins"], line["n"], line["win_rate"]) == (1, 1, 1.0) and "sign_p" not in line
    assert next(r for r in data["results"] if r["provider"] == "funny")["judge_calls"] == 2


BOT = """\
def old(messages, context):
    return "old " + messages[-1]["content"]

def new(messages, context):
    return "new " + messages[-1]["content"]
"""


def test_against_the_baseline_the_sign_test_of_losses_over_wins_is_the_binomial_tail(tmp_path: Path) -> None:
    # 12 questions: the judge prefers the old reply on q0..q7 (8 losses), the new one on q8, q9 (2 wins), ties on
    # q10, q11. The sign test drops ties: P(X >= 8), X ~ Binomial(10, 1/2) = (45 + 10 + 1) / 1024 = 0.0546875.
    def pick(s: dict[str, str]) -> str:
        i = int(re.search(r"q(\d+)", s["A"]).group(1))  # type: ignore[union-attr]
        if i >= 10:
            return "tie"
        wanted = "old" if i < 8 else "new"
        return "A" if s["A"].startswith(wanted) else "B"

    path = tmp_path / "s.yaml"
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    with OpenAIServer(answering(pick)) as server:
        path.write_text(f"""\
providers: [{{id: bot, python: bot.py:old}}]
judge: {{model: openai/gpt-4o-mini, api_base: "{server.base}", api_key: sk-test}}
tests:
  - id: ask
    matrix: {{q: [{", ".join(f"q{i}" for i in range(12))}]}}
    conversation: [{{user: "{{{{q}}}}"}}]
    assert:
      - pairwise: {{against: baseline, criterion: 哪个回答更好}}
""", encoding="utf-8")
        code, out = invoke("run", str(path), "--no-cache", "-o", str(tmp_path / "base.json"))
        assert code == 3, out  # no baseline yet: every pairwise is an error, never a verdict
        base = json.loads((tmp_path / "base.json").read_text(encoding="utf-8"))
        assert {a["error"] for r in base["results"] for a in r["assertions"]} == {
            "'pairwise: {against: baseline}' needs a baseline run: give --baseline RUN.json"}
        path.write_text(path.read_text(encoding="utf-8").replace("bot.py:old", "bot.py:new"), encoding="utf-8")
        data = go(path, tmp_path, baseline=str(tmp_path / "base.json"))
        assert "Criterion: 哪个回答更好" in server.chats()[-1]["messages"][-1]["content"]
    [line] = data["summary"]["pairwise"]
    assert (line["wins"], line["ties"], line["inconsistent"], line["losses"], line["n"]) == (2, 2, 0, 8, 12)
    assert line["sign_p"] == pytest.approx(56 / 1024)
    assert line["win_rate"] == pytest.approx(2 / 12)
    low, high = line["win_rate_ci"]
    assert low == pytest.approx(0.0470, abs=5e-4) and high == pytest.approx(0.4480, abs=5e-4)  # Wilson, z = 1.96


def test_a_small_local_model_that_refuses_json_schema_and_fences_its_answer_still_compares(tmp_path: Path) -> None:
    def fenced(request: dict[str, Any], n: int) -> Reply:
        said = json.loads(PREFERS_LOL(request, n).body["choices"][0]["message"]["content"])
        return Reply(body=chat_body("Let me compare.\n```json\n" + json.dumps(said) + "\n```"))

    with OpenAIServer(llama_cpp_like(fenced)) as server:
        data = go(suite(tmp_path, server, "      - pairwise: {against: plain, pass_if: better}\n"), tmp_path)
    assert pairwise(data, "funny")["details"]["pairwise"]["outcome"] == "win"
    assert [form_of(c) for c in server.chats()] == ["json_schema", "json_object+schema", "json_object+schema"]


def test_a_malformed_judge_answer_is_an_error_never_a_tie(tmp_path: Path) -> None:
    with OpenAIServer(lambda r, n: Reply(body=chat_body('{"reason": "both fine", "winner": "C"}'))) as server:
        data = go(suite(tmp_path, server, "      - pairwise: {against: plain}\n"), tmp_path)
    check = pairwise(data, "funny")
    assert check["pass"] is None and "winner" in check["error"]
    assert next(r for r in data["results"] if r["provider"] == "funny")["status"] == "error"
    assert "pairwise" not in data["summary"]
    with OpenAIServer(lambda r, n: Reply(body=chat_body("A is better."))) as server:
        data = go(suite(tmp_path, server, "      - pairwise: {against: plain}\n"), tmp_path, name="prose")
    assert pairwise(data, "funny")["error"]


def test_a_reference_is_compared_while_grading_and_reports_show_the_counts(tmp_path: Path) -> None:
    rule = "      - pairwise: {reference: 一条关于香蕉的推文, pass_if: better}\n"
    with OpenAIServer(PREFERS_LOL) as server:
        data = go(suite(tmp_path, server, rule), tmp_path)
    assert pairwise(data, "funny")["pass"] is True and pairwise(data, "plain")["pass"] is False
    [line] = data["summary"]["pairwise"]
    assert (line["wins"], line["ties"], line["losses"], line["against"]) == (1, 1, 0, "reference")
    code, out = invoke("report", str(tmp_path / "run" / "run.json"), "--md", str(tmp_path / "r.md"),
                       "--html", str(tmp_path / "r.html"))
    assert code == 0, out
    for text in (out, (tmp_path / "r.md").read_text(encoding="utf-8"), (tmp_path / "r.html").read_text(encoding="utf-8")):
        assert "1 won, 1 tied, 0 tied (position-inconsistent), 0 lost of 2; win rate 50% (9–91%, n=2)" in text, text
        assert "changed with the order" not in text


@pytest.mark.parametrize(("rule", "message"), [
    ("      - pairwise: {against: plain, reference: hi}\n", "give either 'against'"),
    ("      - pairwise: {criterion: clearer}\n", "give either 'against'"),
    ("      - pairwise: {against: nobody}\n", "neither 'baseline' nor a provider of this suite"),
    ("      - pairwise: {against: plain}\n        scope: each_turn\n", "final replies (scope last_response)"),
    ("      - pairwise: {against: plain}\n        examples: {pass: [hi]}\n", "with 'against' the other side exists"),
])
def test_validation_names_a_comparison_that_cannot_be_made(tmp_path: Path, rule: str, message: str) -> None:
    """Each pairwise misuse is a validation error (exit 2) naming it, before any call."""
    with OpenAIServer() as server:
        path = suite(tmp_path, server, rule)
    code, out = invoke("validate", str(path))
    assert code == 2 and message in out, out


def test_a_provider_the_test_is_not_played_against_is_a_validation_error(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        path = suite(tmp_path, server, "      - pairwise: {against: plain}\n", providers="funny")
    code, out = invoke("validate", str(path))
    assert code == 2 and "test 'tweet' is not played against that provider (its providers: funny)" in out, out


def test_a_test_played_against_the_compared_provider_alone_is_a_validation_error(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        path = suite(tmp_path, server, "      - pairwise: {against: funny}\n", providers="funny")
    code, out = invoke("validate", str(path))
    assert code == 2 and "test 'tweet' is played against 'funny' alone, so there is no other reply" in out, out
