"""Property: a judge's verdict is its last complete JSON object, never a draft. Hypothesis writes judge answers
made of several JSON objects (a `<think>` draft, format examples, quoted replies, then zero, one or two final
verdicts) from a loopback OpenAI-compatible server through litellm; no final verdict, or two that disagree,
is an error."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalspec import run
from evalspec.play.runner import RunOptions
from tests.faults.helpers import FEW, suite_yaml
from tests.servers import OpenAIServer, Reply, chat_body

JUDGE_BOT = "def respond(messages, context):\n    return '好的，周六上午见。'\n"


def verdict(passed: bool, reason: str) -> str:
    return json.dumps({"reason": reason, "pass": passed}, ensure_ascii=False)


final = st.tuples(st.booleans(), st.sampled_from(["回答了问题", "no answer given", "语气自然"]))
judge_answer = st.fixed_dictionaries({
    "think": st.none() | st.booleans(),  # a <think> block with a draft verdict (pass or fail)
    "format": st.sampled_from([None, "fenced", "inline"]),  # a format example with placeholder values
    "placeholder": st.sampled_from(["...", "…", "", "<reason>"]),
    "quoted_reply": st.sampled_from([None, "quote-line", "quotation-mark"]),  # the bot's reply quoted
    "quoted_verdict": st.booleans(),  # the quoted text is verdict-shaped
    "finals": st.lists(final, max_size=2),
    "fence_last": st.booleans(),
    "tail": st.sampled_from(["", "\n希望有帮助。", "\nThat is my verdict."]),
})


def build_answer(a: dict[str, Any]) -> str:
    parts = []
    if a["think"] is not None:
        parts.append(f"<think>Let me draft: {verdict(a['think'], 'draft')} — wait, check again.</think>")
    if a["format"] == "fenced":
        parts.append(f'Answer in this format:\n```json\n{{"reason": "{a["placeholder"]}", "pass": true}}\n```')
    elif a["format"] == "inline":
        parts.append(f'The format is {{"reason": "{a["placeholder"]}", "pass": false}}.')
    if a["quoted_reply"]:
        shown = verdict(not (a["finals"][-1][0] if a["finals"] else True), "the bot's words") \
            if a["quoted_verdict"] and a["finals"] else json.dumps({"answer": "好的"}, ensure_ascii=False)
        parts.append(f"The assistant replied:\n> {shown}" if a["quoted_reply"] == "quote-line"
                     else f'The assistant replied: "{shown}"')
    for n, (passed, reason) in enumerate(a["finals"]):
        text = verdict(passed, reason)
        if n == len(a["finals"]) - 1 and a["fence_last"]:
            text = f"```json\n{text}\n```"
        parts.append(text)
    return "\n".join(parts) + a["tail"]


@pytest.fixture(scope="module")
def judge_server() -> Iterator[tuple[OpenAIServer, dict[str, str]]]:
    """One loopback judge for the module; it gives `answer["text"]` to every call."""
    answer = {"text": ""}
    with OpenAIServer(lambda request, n: Reply(body=chat_body(answer["text"]))) as server:
        yield server, answer


@settings(FEW, max_examples=30)
@given(a=judge_answer)
def test_a_judge_verdict_is_the_last_complete_object_never_a_draft(
        a: dict[str, Any], judge_server: tuple[OpenAIServer, dict[str, str]], tmp_path: Path) -> None:
    server, answer = judge_server
    answer["text"] = build_answer(a)
    where = tmp_path / uuid.uuid4().hex
    where.mkdir()
    (where / "bot.py").write_text(JUDGE_BOT, encoding="utf-8")
    head = f'judge: {{model: openai/judge-model, api_base: "{server.base}", api_key: sk-test}}\n'
    tests = [{"id": "t", "conversation": [{"user": "周六能去看车吗？"}],
              "assert": [{"llm-rubric": "助手确认了预约时间"}]}]
    (where / "s.yaml").write_text(suite_yaml(tests, head), encoding="utf-8")
    data = run([where / "s.yaml"], options=RunOptions(run_dir=where / "run", use_cache=False)).data
    (record,) = data["results"]
    (result,) = record["assertions"]
    finals = [passed for passed, _ in a["finals"]]
    shown = (answer["text"], record["status"], result)
    if not finals or len(set(finals)) > 1:  # no real verdict (a refusal), or two that disagree
        assert result["pass"] is None and result["error"], shown
        assert record["status"] == "error", shown
    else:  # the last complete verdict object decides, whatever the draft said
        assert result["pass"] is finals[-1] and result["error"] is None, shown
        assert record["status"] == ("passed" if finals[-1] else "failed"), shown
