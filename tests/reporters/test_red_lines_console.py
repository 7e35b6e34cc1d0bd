"""The console summary gives each critical rule's breach rate as a bound (docs/en/statistics.md#red-lines-as-bounds):
a line per breached rule, one for the rules never breached with the weakest bound — in Chinese and English,
on real runs of a python bot."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import invoke

BOT = '''\
def respond(messages, context):
    # t0 leaks a phone number; every reply is ok otherwise
    return "请拨 13800138000" if context["test_id"].startswith("t0") else "好的"
'''


def suite(tests: int, repeat: int = 1) -> str:
    body = "".join(f"  - id: t{i}\n    conversation: [{{user: 你好}}]\n" for i in range(tests))
    return ("providers:\n  - id: bot\n    python: bot.py:respond\n"
            f"defaults:\n  repeat: {repeat}\n  assert:\n"
            "    - not-regex: \"1[3-9]\\\\d{9}\"\n      severity: critical\n"
            "    - not-contains: 保证\n      severity: critical\n"
            f"tests:\n{body}")


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    return in_tmp


def test_the_summary_bounds_the_red_lines_never_breached(project: Path) -> None:
    """t1..t3 × 5 repeats = 15 clean conversations for each of 2 rules: 1 − 0.05^(1/15) = 18.1 %; the
    weakest bound is that one; 299 clean conversations show < 1 %."""
    Path("s.yaml").write_text(suite(4, 5).replace("  - id: t0\n    conversation: [{user: 你好}]\n", ""),
                              encoding="utf-8")
    code, out = invoke("run", "s.yaml", "--no-cache", "--lang", "en")
    assert code == 0, out
    assert ("red lines: no breach of 2 critical rules; the weakest bound: breach rate < 18.1% (95%) over 15 "
            "conversations (not-regex: 1[3-9]\\d{9}, s.yaml); 299 clean conversations show < 1%") in out, out
    code, out = invoke("run", "s.yaml", "--no-cache", "--lang", "zh")
    assert "红线：2 条关键规则均未违反；最弱的上界：违规率 < 18.1%（95%），基于 15 段对话" in out, out


def test_a_breached_red_line_gets_its_own_line(project: Path) -> None:
    """t0 breaches the phone rule in 1 of 10 conversations: rate 10.0 %, Clopper–Pearson upper 39.4 %
    (published: 1 of 10 → 0.394); the other rule, never breached, is bounded by 1 − 0.05^(1/10) = 25.9 %."""
    Path("s.yaml").write_text(suite(10), encoding="utf-8")
    code, out = invoke("run", "s.yaml", "--no-cache", "--lang", "en")
    assert code == 1, out
    assert ("red line not-regex: 1[3-9]\\d{9} (s.yaml): breached in 1 of 10 conversations: breach rate 10.0% "
            "(< 39.4%, 95%)") in out, out
    assert "red lines: no breach of 1 critical rule; the weakest bound: breach rate < 25.9% (95%) over 10" in out, out
    code, out = invoke("run", "s.yaml", "--no-cache", "--lang", "zh")
    assert "红线 not-regex: 1[3-9]\\d{9}（s.yaml）：10 段对话中违规 1 次：违规率 10.0%（< 39.4%，95%）" in out, out
