"""--judge-sample: a loopback judge gives a second opinion on rule verdicts; it never changes one."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema

from tests import ROOT
from tests.helpers import invoke
from tests.servers import OpenAIServer, Reply, chat_body

BOT = ROOT / "providers" / "demo_bot.py"
RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))


def suite(tmp_path: Path, server: OpenAIServer) -> Path:
    tests = "\n".join(f"""\
  - id: year{i}
    conversation:
      - user: 这台瑶光是哪年的车？
        assert: [{{contains: "{'2099' if i == 5 else '2024'}", description: 年份要答对}}]""" for i in range(6))
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge, api_base: "{server.base}"}}
tests:
  - id: greet
    conversation: [{{user: 你好, assert: [{{llm-rubric: 礼貌}}]}}]
{tests}
""", encoding="utf-8")
    return path


def judge(disagree_with: str | None) -> OpenAIServer:
    def answer(request: dict[str, Any], n: int) -> Reply:
        prompt = request["messages"][-1]["content"]
        if "Rule:" not in prompt:
            return Reply(body=chat_body('{"reason": "ok", "pass": true}'))
        agree = disagree_with is None or disagree_with not in prompt
        return Reply(body=chat_body(json.dumps({"reason": "我看了对话", "agree": agree})))
    return OpenAIServer(answer)


def test_an_agreeing_second_opinion_flags_nothing_and_changes_no_verdict(in_tmp: Path) -> None:
    with judge(None) as server:
        code, out = invoke("run", str(suite(in_tmp, server)), "-o", "run.json", "--judge-sample", "1", "--no-cache")
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, RUN_SCHEMA)
    review = data["judge_review"]
    assert review["sampled"] == 6 and review["agreement"] == 1.0  # the six rules; the llm-rubric is no rule
    assert review["by_type"] == {"contains": {"sampled": 6, "agreement": 1.0, "flagged": False, "errors": 0}}
    assert code == 1 and data["results"][-1]["status"] == "failed"  # the failing rule still fails the gate
    assert "attribution_suggested" not in data["results"][-1]
    prompt = next(r for r in server.chats() if "Rule:" in r["messages"][-1]["content"])["messages"][-1]["content"]
    assert "年份要答对" in prompt and "这台瑶光是哪年的车？" in prompt and "Rule: contains" in prompt
    assert "flagged" not in out


def test_a_disagreeing_second_opinion_flags_the_type_and_suggests_rule_misjudgment(in_tmp: Path) -> None:
    with judge("2099") as server:
        invoke("run", str(suite(in_tmp, server)), "-o", "run.json", "--judge-sample", "1", "--no-cache",
               "--md", "report.md", "--html", "report.html")
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, RUN_SCHEMA)
    by_type = data["judge_review"]["by_type"]["contains"]
    assert by_type["sampled"] == 6 and by_type["agreement"] == round(5 / 6, 6) and by_type["flagged"] is True
    failed = data["results"][-1]
    assert failed["status"] == "failed" and failed["attribution_suggested"] == "rule_misjudgment"
    assert "attribution" not in failed  # only suggested, never set
    item = next(i for i in data["judge_review"]["items"] if i["agree"] is False)
    assert item["test_id"] == "year5" and item["rule_pass"] is False
    md = (in_tmp / "report.md").read_text(encoding="utf-8")
    html = (in_tmp / "report.html").read_text(encoding="utf-8")
    assert "contains" in md and "flagged" in md.lower() and "83" in md
    assert "flagged" in html.lower()
    invoke("report", "run.json", "--junit", "junit.xml")
    junit = (in_tmp / "junit.xml").read_text(encoding="utf-8")
    assert 'name="evalspec.judge_review.flagged" value="contains"' in junit


def test_grade_samples_ceil_rate_times_n_reproducibly_by_seed(in_tmp: Path) -> None:
    with judge(None) as server:
        path = suite(in_tmp, server)
        invoke("run", str(path), "-o", "run.json", "--no-cache")
        picks = []
        for _ in range(2):
            invoke("grade", "run.json", "--judge-sample", "0.4", "--seed", "11", "-o", "graded.json")
            review = json.loads((in_tmp / "graded.json").read_text(encoding="utf-8"))["judge_review"]
            picks.append([i["test_id"] for i in review["items"]])
    assert review["candidates"] == 6 and review["sampled"] == math.ceil(0.4 * 6) == 3
    assert picks[0] == picks[1]


def test_judge_sample_without_a_judge_is_a_config_error(in_tmp: Path) -> None:
    path = in_tmp / "s.yaml"
    path.write_text(f"providers: [{{id: bot, python: \"{BOT}:respond\"}}]\ntests: [{{id: t, conversation: "
                    "[{user: 你好, assert: [{contains: 你好}]}]}]\n", encoding="utf-8")
    code, out = invoke("run", str(path), "--judge-sample", "0.2")
    assert code == 2 and "--judge-sample needs a judge" in out


def test_a_suggested_attribution_reaches_run_json_and_reports_of_a_run_too_large_to_hold_in_memory(
        in_tmp: Path, monkeypatch: Any) -> None:
    from evalspec.play import runner

    # a run is read back from its journal above STREAM_ABOVE records (5,000): the same path with 20
    monkeypatch.setattr(runner, "STREAM_ABOVE", 20)
    STREAM_ABOVE = runner.STREAM_ABOVE

    with judge("2099") as server:
        path = in_tmp / "s.yaml"  # more records than a run keeps in memory; only `year` has a rule to review
        path.write_text(f"""\
providers: [{{id: bot, python: "{BOT}:respond"}}]
judge: {{model: openai/judge, api_base: "{server.base}"}}
options: {{cache: false}}
tests:
  - {{id: filler, repeat: {STREAM_ABOVE}, conversation: [{{user: 你好}}]}}
  - id: year
    conversation: [{{user: 这台瑶光是哪年的车？, assert: [{{contains: "2099"}}]}}]
""", encoding="utf-8")
        invoke("run", str(path), "-q", "-j", "64", "-o", "run.json", "--judge-sample", "1", "--md", "report.md")
    data = json.loads((in_tmp / "run.json").read_text(encoding="utf-8"))
    assert len(data["results"]) == STREAM_ABOVE + 1 and data["judge_review"]["sampled"] == 1
    year = next(r for r in data["results"] if r["test_id"] == "year")
    assert year["status"] == "failed" and year["attribution_suggested"] == "rule_misjudgment"
    assert "year @ bot — suggested: rule misjudgment" in (in_tmp / "report.md").read_text(encoding="utf-8")


def test_a_second_opinion_quoting_a_secret_is_masked_in_run_and_grade_outputs(in_tmp: Path, monkeypatch: Any) -> None:
    """A judge answer that is no verdict is quoted in the item's error: the suite's secrets in it are
    `***` in run.json and in `grade -o` (SPEC §17, "Secrets everywhere")."""
    monkeypatch.setenv("JUDGE_API_KEY", "sk-judge-quoted-424242")

    def answer(request: dict[str, Any], n: int) -> Reply:
        if "Rule:" not in request["messages"][-1]["content"]:
            return Reply(body=chat_body('{"reason": "ok", "pass": true}'))
        return Reply(body=chat_body('{"reason": "your key is sk-judge-quoted-424242", "pass": true}'))

    with OpenAIServer(answer) as server:
        path = in_tmp / "s.yaml"
        path.write_text(f"providers: [{{id: bot, python: \"{BOT}:respond\"}}]\n"
                        f"judge: {{model: openai/judge, api_base: \"{server.base}\", api_key: \"${{JUDGE_API_KEY}}\"}}\n"
                        "tests:\n  - id: t\n    conversation: [{user: 你好, assert: [{not-contains: 电话}]}]\n",
                        encoding="utf-8")
        invoke("run", str(path), "-o", "run.json", "--judge-sample", "1", "--no-cache")
        invoke("grade", "run.json", "--judge-sample", "1", "--no-cache", "-o", "graded.json")
    for name in ("run.json", "graded.json"):
        text = (in_tmp / name).read_text(encoding="utf-8")
        assert json.loads(text)["judge_review"]["errors"] == 1, name
        assert "sk-judge-quoted-424242" not in text, name
