"""The world checks read the world the conversation left behind (docs/en/world.md): `world`,
`world-matches` (the differing paths as evidence), `world-unchanged`, and `said-vs-did`, which holds each
reply that claims an action to a call of that tool that did not error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalspec.core.errors import ConfigError
from evalspec.extend.check import JudgeRequest, JudgeVerdict, WorldView
from tests.helpers import check

START = {"visits": [{"id": "v1", "user_id": "u2", "date": "2026-12-01"}], "orders": [],
         "inventory": [{"model": "瑶光", "stock": 3}], "note": "周末营业"}
BOOKED = {"visits": [{"id": "v1", "user_id": "u2", "date": "2026-12-01"},
                     {"id": "v2", "user_id": "u1", "date": "2026-12-05"}], "orders": [],
          "inventory": [{"model": "瑶光", "stock": 3}], "note": "周末营业"}
WORLD = WorldView(START, BOOKED)
SAID = [{"role": "user", "content": "预约周六", "turn": 1},
        {"role": "assistant", "content": "好的，已为您预约周六", "turn": 1}]


def world_check(text: str, world: WorldView | None = WORLD, messages: list[dict[str, Any]] | None = None,
                **ctx: Any) -> Any:
    return check(text, messages or SAID, world=world, **ctx)


@pytest.mark.parametrize("text", [
    "world: {path: \"visits[?user_id=='u1'].date | [0]\", equals: '2026-12-05'}",
    "world: \"length(visits) == `2`\"",
    "world: {path: 'visits[1].date', matches: '^2026-12-0[5-6]$'}",
    "world: {path: 'visits[1].user_id', in: [u1, u3]}",
    "world: {path: 'visits[1]', exists: true}",
    "world: {path: 'visits[2]', exists: false}",
    "world: {path: 'visits[*].user_id', contains: u1}",
    "world: {path: note, contains: 周末}",
    "not-world: {path: 'orders[0]', exists: true}",
])
def test_a_world_check_reads_the_final_world(text: str) -> None:
    result = world_check(text)
    assert result.passed is True, result.reason


def test_a_failing_world_check_says_what_it_found_and_what_it_expected() -> None:
    result = world_check("world: {path: \"visits[?user_id=='u1'].date | [0]\", equals: '2026-12-06'}")
    assert result.passed is False
    assert result.reason == "visits[?user_id=='u1'].date | [0] = 2026-12-05, expected 2026-12-06"
    assert world_check("world: {path: 'inventory[*].model', contains: 汉EV}").passed is False


def test_a_world_check_on_a_test_without_a_world_is_an_error_never_a_pass() -> None:
    for text in ("world: {path: visits, exists: false}", "not-world: visits", "world-unchanged: [orders]"):
        result = world_check(text, world=None)
        assert result.passed is None and "has none" in str(result.error)


def test_one_comparison_per_world_check() -> None:
    with pytest.raises(ConfigError, match="one comparison per world check"):
        world_check("world: {path: visits, equals: [], contains: x}")


def test_world_matches_passes_on_the_same_world_and_names_each_differing_path(tmp_path: Path) -> None:
    assert world_check(f"world-matches: {json.dumps(BOOKED, ensure_ascii=False)}").passed is True
    moved = json.loads(json.dumps(BOOKED))
    moved["visits"][1]["date"] = "2026-12-06"
    moved["inventory"][0]["stock"] = 2
    (tmp_path / "expected.json").write_text(json.dumps(moved, ensure_ascii=False), encoding="utf-8")
    result = world_check("world-matches: expected.json", suite_dir=tmp_path)
    assert result.passed is False
    assert result.details["paths"] == ["visits[1].date", "inventory[0].stock"]
    assert [e.text for e in result.evidence] == ['visits[1].date: expected 2026-12-06, got 2026-12-05',
                                                 "inventory[0].stock: expected 2, got 3"]


def test_a_list_that_gained_elements_is_named_by_its_own_path() -> None:
    result = world_check(f"world-matches: {json.dumps(START, ensure_ascii=False)}")
    assert result.passed is False and result.details["paths"] == ["visits"]
    assert result.evidence[0].text == "visits: expected 1 items, got 2 items"


def test_world_matches_names_a_missing_expected_file_as_an_error(tmp_path: Path) -> None:
    result = world_check("world-matches: nowhere.json", suite_dir=tmp_path)
    assert result.passed is None and "nowhere.json not found" in str(result.error)


def test_world_unchanged_compares_each_path_at_the_end_with_the_start() -> None:
    assert world_check("world-unchanged: [orders, inventory, note]").passed is True
    result = world_check("world-unchanged: [orders, visits]")
    assert result.passed is False and result.reason == "changed: visits"
    assert result.evidence[0].text == "visits: was 1 items, now 2 items"


def test_world_unchanged_on_a_path_that_finds_nothing_is_an_error_never_a_pass() -> None:
    # `ordrs` (a typo) is null at the start and at the end: nothing was compared
    result = world_check("world-unchanged: [ordrs]")
    assert result.passed is None and "'ordrs' finds nothing in the world" in str(result.error)
    # beside a path that did change, the failure stands with the error
    both = world_check("world-unchanged: [ordrs, visits]")
    assert both.passed is False and "'ordrs' finds nothing" in str(both.error)


# -- said vs did ------------------------------------------------------------------------------------

CLAIMS = "said-vs-did: {claims: {book_visit: 已为您预约|booked, place_order: 已下单}}"


def agent_turns(*turns: tuple[str, list[tuple[str, str | None]], str]) -> list[dict[str, Any]]:
    """[(user, [(tool, error or None)], reply)] -> a transcript with each turn's calls before its reply."""
    out: list[dict[str, Any]] = []
    for turn, (user, calls, reply) in enumerate(turns, 1):
        out.append({"role": "user", "content": user, "turn": turn})
        if calls:
            out.append({"role": "assistant", "content": "", "turn": turn, "intermediate": True,
                        "tool_calls": [{"id": f"c{turn}{i}", "name": name, "arguments": {}}
                                       for i, (name, _) in enumerate(calls)]})
            for i, (name, error) in enumerate(calls):
                out.append({"role": "tool", "content": json.dumps({"error": error} if error else {"ok": True}),
                            "turn": turn, "tool_call_id": f"c{turn}{i}", "name": name,
                            **({"error": error} if error else {})})
        out.append({"role": "assistant", "content": reply, "turn": turn})
    return out


def test_a_claim_after_the_call_passes_in_that_turn_or_a_later_one() -> None:
    messages = agent_turns(("预约周六", [("book_visit", None)], "已为您预约周六"),
                           ("确认一下", [], "是的，已为您预约周六，到时见"),
                           ("还有库存吗", [], "有的"))
    result = world_check(CLAIMS, messages=messages)
    assert result.passed is True, result.reason


def test_a_claim_without_the_call_fails_at_its_turn_naming_what_it_said() -> None:
    messages = agent_turns(("你好", [], "您好"), ("看看瑶光", [], "瑶光很受欢迎"), ("有库存吗", [("check_stock", None)], "有"),
                           ("预约周六", [], "好的，已为您预约周六"))
    result = world_check(CLAIMS, messages=messages)
    assert result.passed is False
    assert result.reason == "turn 4 says 已为您预约 but book_visit was never called"
    assert result.evidence[0].turn == 4


def test_a_call_that_errored_does_not_back_a_claim() -> None:
    messages = agent_turns(("下单瑶光", [("place_order", "瑶光已售罄")], "已下单，请放心"))
    result = world_check(CLAIMS, messages=messages)
    assert result.passed is False and result.reason == "turn 1 says 已下单 but every place_order call errored"
    again = agent_turns(("下单瑶光", [("place_order", "超时"), ("place_order", None)], "已下单"))
    assert world_check(CLAIMS, messages=again).passed is True


def test_a_claim_before_its_call_in_a_later_turn_fails() -> None:
    messages = agent_turns(("预约周六", [], "已为您预约周六"), ("真的吗", [("book_visit", None)], "现在约好了"))
    result = world_check(CLAIMS, messages=messages)
    assert result.passed is False and result.evidence[0].turn == 1


def test_said_vs_did_needs_no_world_and_rejects_a_bad_pattern() -> None:
    assert world_check(CLAIMS, world=None, messages=agent_turns(("你好", [], "您好"))).passed is True
    with pytest.raises(ConfigError):
        world_check("said-vs-did: {claims: {book_visit: '已为您(预约'}}")
    with pytest.raises(ConfigError):
        world_check("said-vs-did: {claims: {}}")


def judge_answering(answer: dict[str, Any], asked: list[JudgeRequest]) -> Any:
    async def judge(request: JudgeRequest) -> JudgeVerdict:
        asked.append(request)
        return JudgeVerdict(answer, json.dumps(answer, ensure_ascii=False), {"tokens": 7, "cost": None, "cached": False})
    return judge


def test_said_vs_did_judge_asks_which_tools_each_reply_claims_and_checks_them_alike() -> None:
    tools = [{"type": "function", "function": {"name": "book_visit", "description": "预约到店"}},
             {"type": "function", "function": {"name": "place_order", "description": "下单"}}]
    messages = agent_turns(("预约周六", [("book_visit", None)], "搞定了，周六见"), ("再帮我把车订了", [], "车给您订好了"))
    asked: list[JudgeRequest] = []
    answer = {"reason": "两轮都声称完成了操作", "claims": [{"turn": 1, "tool": "book_visit", "quote": "搞定了"},
                                                   {"turn": 2, "tool": "place_order", "quote": "车给您订好了"},
                                                   {"turn": 9, "tool": "book_visit"}, {"turn": 2, "tool": "fly"}]}
    result = world_check("said-vs-did: judge", messages=messages, tools=tools, judge=judge_answering(answer, asked))
    assert result.passed is False
    assert result.reason == "turn 2 says 车给您订好了 but place_order was never called"
    prompt = asked[0].messages[-1]["content"]
    assert "book_visit: 预约到店" in prompt and "place_order: 下单" in prompt and "车给您订好了" in prompt
    assert result.judge_usage == [{"tokens": 7, "cost": None, "cached": False}]


def test_said_vs_did_judge_without_a_judge_or_tools_is_an_error() -> None:
    result = world_check("said-vs-did: judge", tools=None, judge=judge_answering({"reason": "", "claims": []}, []))
    assert result.passed is None and "there are none" in str(result.error)
    result = world_check("said-vs-did: judge")
    assert result.passed is None and "needs a judge" in str(result.error)
