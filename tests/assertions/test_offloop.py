"""Grading runs off the event loop with a time limit: a slow check never makes healthy calls time out."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from evalspec import run
from evalspec.assertions.evaluate import AssertionResult
from evalspec.assertions.offloop import evaluate_off_loop
from evalspec.config.model import AssertionSpec
from evalspec.extend.check import GradingContext
from evalspec.play.runner import RunOptions
from tests.helpers import spec, transcript
from tests.servers import OpenAIServer, Reply, chat_body


def test_slow_regexes_do_not_make_healthy_provider_calls_time_out(tmp_path: Path) -> None:
    def replies(request: dict[str, object], n: int) -> Reply:
        last = str(request["messages"][-1]["content"])  # type: ignore[index]
        text = "a" * 40 + "b" if last.startswith("slow") else "好的"
        return Reply(body=chat_body(text), delay=0.05)

    slow = "".join(f"""\
  - id: slow{i}
    conversation:
      - user: slow {i}
        assert: [{{regex: "^(a|a)*$"}}]
""" for i in range(4))
    healthy = "".join(f"""\
  - id: ok{i}
    conversation:
      - user: 你好 {i}
      - user: 再见 {i}
        assert: [{{contains: 好的}}]
""" for i in range(20))
    path = tmp_path / "s.yaml"
    with OpenAIServer(replies) as server:
        path.write_text(f"""\
providers:
  - id: m
    model: openai/m
    api_base: {server.base}
    api_key: sk-local-000
options: {{timeout: 5, retries: 0, cache: false, grade_timeout: 2}}
tests:
{slow}{healthy}""", encoding="utf-8")
        data = run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False, concurrency=24)).data
    by_id = {r["test_id"]: r for r in data["results"]}
    assert all(by_id[f"ok{i}"]["status"] == "passed" for i in range(20)), \
        [(r["test_id"], r["error"]) for r in data["results"] if r["status"] != "passed"][:5]
    for i in range(4):
        record = by_id[f"slow{i}"]
        assert record["status"] == "error" and "timed out" in record["error"], record["error"]


def test_a_python_assertion_that_hangs_is_an_error_after_grade_timeout_and_later_checks_still_run(
        tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text("import time\n\ndef hang(output, context):\n    time.sleep(3600)\n"
                                        "\ndef ok(output, context):\n    return '好' in output\n")
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '好的'\n")
    (tmp_path / "s.yaml").write_text("""\
providers: [{id: p, python: bot.py:respond}]
options: {grade_timeout: 0.5, cache: false}
tests:
  - id: t
    conversation:
      - user: 你好
        assert: [{python: "checks.py:hang"}, {python: "checks.py:ok"}, {contains: 好的}]
""", encoding="utf-8")
    record = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).results[0]
    hang, ok, contains = record["assertions"]
    assert record["status"] == "error"
    assert "timed out after 0.5s (options.grade_timeout)" in hang["error"]
    assert ok["pass"] is True and contains["pass"] is True


def test_a_slow_regex_frees_the_gil_so_other_threads_keep_running() -> None:
    import threading
    import time

    from evalspec.core.errors import GradingError
    from evalspec.extend.patterns import regex_time_limit, search

    def slow() -> None:
        with regex_time_limit(1.0), contextlib.suppress(GradingError):
            search("^(a|a)*$", "a" * 40 + "b")

    worker = threading.Thread(target=slow)
    worker.start()
    longest, last = 0.0, time.monotonic()
    while worker.is_alive():
        time.sleep(0.01)
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    assert longest < 0.5  # a regex holding the GIL freezes this thread for the whole second


def test_a_slow_check_in_one_conversation_does_not_hold_up_the_grading_of_the_others(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text("import time\n\ndef slow(output, context):\n    time.sleep(1.5)\n"
                                        "    return True\n")
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '好的'\n")
    quick = "".join(f"""\
  - id: quick{i}
    conversation:
      - user: 你好 {i}
        assert: [{{regex: "好"}}, {{contains: 好的}}]
""" for i in range(30))
    (tmp_path / "s.yaml").write_text(f"""\
providers: [{{id: p, python: bot.py:respond}}]
options: {{grade_timeout: 10, cache: false}}
tests:
  - id: slow
    conversation:
      - user: 你好
        assert: [{{python: "checks.py:slow"}}]
{quick}""", encoding="utf-8")
    arrived: list[str] = []
    options = RunOptions(run_dir=tmp_path / "run", use_cache=False, concurrency=31,
                         on_result=lambda record: arrived.append(record["test_id"]))
    records = run([tmp_path / "s.yaml"], options=options).results
    assert all(r["status"] == "passed" for r in records), [(r["test_id"], r["error"]) for r in records]
    assert arrived[-1] == "slow", arrived  # the quick ones were graded while the slow check ran


def _graded_at_once(specs: list[AssertionSpec], messages: list[dict[str, object]], limit: float) -> list[AssertionResult]:
    """`evaluate_off_loop` stepped once without an event loop: its results, or None when it waited."""
    ctx = GradingContext(transcript=messages, labels={}, vars={}, test_id="t", turn=None, suite_dir=Path("."))  # type: ignore[arg-type]
    coroutine = evaluate_off_loop(specs, ctx, limit)
    with pytest.raises(StopIteration) as done:  # it never waited for a worker
        coroutine.send(None)
    results: list[AssertionResult] = done.value.value
    return results


def test_a_short_conversations_text_checks_are_graded_on_the_loop_without_a_worker() -> None:
    messages = transcript(("你好", "收到：你好"), ("续航多少？", "续航 620 公里"))
    results = _graded_at_once([spec("contains: 公里"), spec(r"not-regex: '1[3-9]\d{9}'"),
                               spec("contains-any: [公里, 千米]")], messages, 30.0)
    assert [r.passed for r in results] == [True, True, True]
    assert [r.reason_zh for r in results][0].startswith("找到")


def test_a_regex_too_slow_for_the_loop_is_checked_on_a_worker_and_still_times_out_in_order() -> None:
    messages = transcript(("q", "a" * 40 + "b"))
    specs = [spec("contains: a"), spec("regex: '^(a|a)*$'"), spec("contains: b")]
    results = asyncio.run(_off_loop(specs, messages, 0.3))
    assert [r.passed for r in results] == [True, None, True]
    assert "timed out" in (results[1].error or "")


async def _off_loop(specs: list[AssertionSpec], messages: list[dict[str, object]], limit: float) -> list[AssertionResult]:
    ctx = GradingContext(transcript=messages, labels={}, vars={}, test_id="t", turn=None, suite_dir=Path("."))  # type: ignore[arg-type]
    return await evaluate_off_loop(specs, ctx, limit)
