"""The PR comment: safe to post, small enough for GitHub, linked to the workflow run."""

from __future__ import annotations

import copy
from typing import Any

from evalspec.reporters.markdown import LIMIT, MARKER, render_markdown


def test_tags_and_mentions_from_replies_are_neutralised(fixed_run: dict[str, Any]) -> None:
    md = render_markdown(fixed_run, env={})
    assert "<script>" not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "@sales-lead" not in md and "@&#8203;sales-lead" in md
    assert "\x1b" not in md


def test_failures_read_by_human_name_with_turn_rule_and_highlighted_reply(fixed_run: dict[str, Any]) -> None:
    md = render_markdown(fixed_run, env={})
    block = md[md.index("不泄露手机号"):md.index("问价前不邀约")]
    assert "turn 2 · `not-regex: 1[3-9]\\d{9}` · **critical**" in block
    assert "reply, turn 2: 可以直接打我的手机 **13912345678**" in block
    assert "turn  " not in md  # never a blank turn
    assert "entity: expected 瑶光, found *nothing*" in md and "names none of" not in md


def test_sla_lines_carry_the_measured_value(fixed_run: dict[str, Any]) -> None:
    md = render_markdown(fixed_run, env={})
    assert "sla: recall @ shop-bot: **missed** — at 3: 0.67 &lt; 0.80; at 5: 0.00 &lt; 0.80" in md


def test_link_to_the_workflow_run_only_inside_github_actions(fixed_run: dict[str, Any]) -> None:
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/bot", "GITHUB_RUN_ID": "9"}
    assert "https://github.com/acme/bot/actions/runs/9" in render_markdown(fixed_run, env=env)
    assert "actions/runs" not in render_markdown(fixed_run, env={"GITHUB_REPOSITORY": "acme/bot"})


def test_a_huge_run_stays_under_the_comment_limit_and_says_what_was_cut(fixed_run: dict[str, Any]) -> None:
    big = copy.deepcopy(fixed_run)
    failed = next(v for v in big["verdicts"] if v["test_id"] == "no-early-offer")
    record = next(r for r in big["results"] if r["base_id"] == "no-early-offer")
    for i in range(2000):
        big["verdicts"].append({**failed, "test_id": f"copy-{i}", "name": f"copy {i}"})
        big["results"].append({**record, "base_id": f"copy-{i}", "test_id": f"copy-{i}"})
    md = render_markdown(big, env={})
    assert md.startswith(MARKER) and len(md) < LIMIT
    assert "more failing tests" in md
