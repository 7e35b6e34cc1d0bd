"""`javascript:` checks run by a real Node.js: promptfoo's forms and results, files, negation, tool calls,
and every way a check cannot run (a syntax error, an exception, a time-out, no node) as an error or a
validate problem, never a pass or a fail."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from evalspec.assertions.evaluate import AssertionResult, evaluate
from evalspec.assertions.offloop import evaluate_off_loop
from evalspec.core.errors import GradingError
from evalspec.extend.check import GradingContext
from tests.helpers import invoke, spec, transcript

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")

CHECKS_JS = """
module.exports = (output, context) => output.length >= context.config.min;
module.exports.polite = (output, context) => ({pass: output.includes('您'), score: 0.75,
                                                reason: 'polite to ' + context.vars.name});
module.exports.later = async (output) => { await new Promise((r) => setTimeout(r, 5)); return 0.4; };
"""


def grade(text: str, messages: list[dict[str, Any]], suite_dir: Path = Path("."),
          variables: dict[str, Any] | None = None) -> AssertionResult:
    context = GradingContext(transcript=messages, labels={}, vars=variables or {}, test_id="t", turn=None,
                             suite_dir=suite_dir)
    return asyncio.run(evaluate(spec(text), context))


def test_one_line_is_an_expression_and_several_lines_a_function_body() -> None:
    said = transcript(("价格？", "您好，12.98万起"))
    assert grade("javascript: output.includes('12.98万')", said).passed is True
    assert grade("javascript: output.includes('15万')", said).passed is False
    declared = grade("javascript: \"const v = output.toLowerCase(); v.includes('您好')\"", said)
    assert declared.passed is True and declared.reason == "javascript returned true"
    body = grade("javascript: |\n  const n = output.length;\n  if (n > 100) { return false; }\n  return true;\n", said)
    assert body.passed is True


def test_a_verdict_object_gives_pass_score_and_reason() -> None:
    said = transcript(("hi", "您好"))
    r = grade("javascript: |\n  const polite = output.startsWith('您');\n"
              "  return {pass: polite, score: 0.6, reason: 'greets politely'}\n", said)
    assert (r.passed, r.score, r.reason) == (True, 0.6, "greets politely")
    r = grade("javascript: \"({pass: false, score: 0.9, reason: 'no price'})\"", said)
    assert (r.passed, r.score, r.reason) == (False, 0.9, "no price")


def test_a_number_is_a_score_passing_above_zero_or_at_the_threshold() -> None:
    said = transcript(("hi", "12345"))
    r = grade("javascript: output.length / 10", said)
    assert r.passed is True and r.score == 0.5 and r.details == {"returned": 0.5}
    assert grade("javascript: output.length - 5", said).passed is False  # 0 is not above 0
    assert grade("{javascript: output.length / 10, threshold: 0.6}", said).passed is False
    assert grade("{javascript: output.length / 10, threshold: 0.5}", said).passed is True
    big = grade("javascript: output.length * 100", said)
    assert big.passed is True and big.score == 1.0 and big.details == {"returned": 500.0}  # stored within 0..1


def test_the_code_reads_vars_prompt_and_the_transcript() -> None:
    said = transcript(("first", "a"), ("我叫张三", "好的，张三"))
    r = grade("javascript: output.includes(context.vars.name) && context.prompt === '我叫张三'", said,
              variables={"name": "张三"})
    assert r.passed is True
    assert grade("javascript: context.transcript.length === 4 && context.turn === 2", said).passed is True
    assert grade("javascript: context.test.vars.name === '张三'", said, variables={"name": "张三"}).passed


def test_file_checks_call_the_named_function_or_the_module_itself(tmp_path: Path) -> None:
    (tmp_path / "checks.js").write_text(CHECKS_JS, encoding="utf-8")
    said = transcript(("hi", "您好，欢迎"))
    r = grade("javascript: file://checks.js:polite", said, tmp_path, {"name": "客户"})
    assert (r.passed, r.score, r.reason) == (True, 0.75, "polite to 客户")
    assert grade("{javascript: file://checks.js, config: {min: 3}}", said, tmp_path).passed is True
    assert grade("{javascript: file://checks.js, config: {min: 30}}", said, tmp_path).passed is False
    later = grade("javascript: file://checks.js:later", said, tmp_path)
    assert later.passed is True and later.score == 0.4
    (tmp_path / "esm.mjs").write_text("export default (output) => output.startsWith('您');\n"
                                      "export const short = (output) => output.length < 3;\n", encoding="utf-8")
    assert grade("javascript: file://esm.mjs", said, tmp_path).passed is True  # an ES module's default export
    assert grade("javascript: file://esm.mjs:short", said, tmp_path).passed is False
    edited = tmp_path / "edited.js"
    edited.write_text("module.exports = () => true;\n", encoding="utf-8")
    assert grade("javascript: file://edited.js", said, tmp_path).passed is True
    edited.write_text("module.exports = () => false; // edited\n", encoding="utf-8")
    os.utime(edited, (time.time() + 5, time.time() + 5))
    assert grade("javascript: file://edited.js", said, tmp_path).passed is False  # loaded again once edited
    missing = grade("javascript: file://gone.js", said, tmp_path)
    assert missing.passed is None and "gone.js does not exist" in (missing.error or "")


def test_not_javascript_negates_the_verdict() -> None:
    said = transcript(("hi", "您好"))
    r = grade("not-javascript: output.includes('抱歉')", said)
    assert r.passed is True
    r = grade("not-javascript: output.includes('您好')", said)
    assert r.passed is False and "javascript returned true" in r.reason


def test_a_reply_with_tool_calls_is_handed_over_as_openai_tool_calls() -> None:
    said = transcript(("算一下 2+3", ""))
    said[-1]["tool_calls"] = [{"id": "c1", "name": "calculate", "arguments": {"a": 2, "b": 3}}]
    code = "output[0].function.name === 'calculate' && JSON.parse(output[0].function.arguments).b === 3"
    assert grade(f'javascript: "{code}"', said).passed is True
    said[-1]["content"] = "我来算"
    both = "output.content === '我来算' && output.tool_calls[0].type === 'function'"
    assert grade(f'javascript: "{both}"', said).passed is True


def test_an_exception_or_a_result_that_is_no_verdict_is_an_error_never_a_fail() -> None:
    said = transcript(("hi", "not json"))
    r = grade("javascript: JSON.parse(output).ok === true", said)
    assert r.passed is None and r.score is None and "SyntaxError" in (r.error or "")
    r = grade("not-javascript: |\n  console.log('checking', output);\n  throw new Error('boom');\n", said)
    assert r.passed is None and "Error: boom" in (r.error or "") and "checking not json" in (r.error or "")
    r = grade("javascript: |\n  output.includes('json')\n", said)  # one line after YAML's newline: fine
    assert r.passed is True
    r = grade("javascript: |\n  const v = output;\n  v.includes('json')\n", said)  # no return: undefined
    assert r.passed is None and "returned undefined" in (r.error or "") and "`return`" in (r.error or "")
    r = grade("javascript: \"({pass: true, reason: 'no score'})\"", said)  # promptfoo wants all three keys
    assert r.passed is None and "{pass, reason} (pass boolean, score undefined, reason string)" in (r.error or "")


def _gone(pid: int, within: float) -> bool:
    stop = time.monotonic() + within
    while time.monotonic() < stop:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":  # dead, not reaped yet
            return True
        time.sleep(0.02)
    return False


def test_an_endless_loop_times_out_as_an_error_and_its_node_is_stopped(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = f"require('fs').writeFileSync({str(pidfile)!r}, String(process.pid));\nwhile (true) {{}}\n"
    context = GradingContext(transcript=transcript(("hi", "x")), labels={}, vars={}, test_id="t", turn=None,
                             suite_dir=tmp_path)
    check = spec("javascript: |\n" + "".join("  " + line + "\n" for line in code.splitlines()))
    assert grade("javascript: \"1 > 0\"", transcript(("hi", "x"))).passed is True  # a worker is up: the limit is the loop's
    start = time.monotonic()
    (result,) = asyncio.run(evaluate_off_loop([check], context, 1.5))
    assert result.passed is None and "timed out after 1.5s" in (result.error or "")
    assert time.monotonic() - start < 5
    assert _gone(int(pidfile.read_text()), within=3), "the node process running the loop was left running"
    assert grade("javascript: output === 'x'", transcript(("hi", "x"))).passed is True  # the next check runs


SUITE = """providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: greet
    conversation:
      - user: hi
    assert:
      - contains: 您好
      - javascript: output.includes('您好'
"""


def _suite(tmp_path: Path, text: str) -> Path:
    (tmp_path / "bot.py").write_text("def respond(messages, context):\n    return '您好'\n", encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_validate_names_a_syntax_error_with_its_line(tmp_path: Path) -> None:
    code, out = invoke("validate", str(_suite(tmp_path, SUITE)))
    assert code == 2
    assert "suite.yaml:10: tests[0].assert[1].javascript: javascript check: SyntaxError: missing ) after argument list" in out


def test_validate_names_a_missing_file_or_function(tmp_path: Path) -> None:
    (tmp_path / "checks.js").write_text("module.exports = {polite: () => true};\n", encoding="utf-8")
    text = SUITE.replace("output.includes('您好'", "file://checks.js:rude") + "      - javascript: file://none.js\n"
    code, out = invoke("validate", str(_suite(tmp_path, text)))
    assert code == 2
    assert "javascript check: no function 'rude' and no default export (exported functions: polite)" in out
    assert "suite.yaml:11: tests[0].assert[2].javascript: javascript check: none.js does not exist" in out


def test_validate_without_node_names_it_at_the_first_javascript_check(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = _suite(tmp_path, SUITE.replace("output.includes('您好'", "output.includes('您好')")
                  + "      - javascript: output.length < 100\n")
    assert invoke("validate", str(path))[0] == 0
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, out = invoke("validate", str(path))
    assert code == 2
    assert "suite.yaml:10: tests[0].assert[1].javascript: javascript check: Node.js is not installed: no `node` on PATH" in out
    assert out.count("Node.js is not installed") == 1


def test_a_suite_without_javascript_never_looks_for_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _suite(tmp_path, SUITE.replace("      - javascript: output.includes('您好'\n", ""))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert invoke("validate", str(path))[0] == 0


def test_examples_are_checked_before_the_run(tmp_path: Path) -> None:
    text = SUITE.replace("javascript: output.includes('您好'", "javascript: output.includes('您好')\n"
                         "        examples: {pass: ['您好'], fail: ['你好', '您好呀']}")
    code, out = invoke("validate", str(_suite(tmp_path, text)))
    assert code == 2
    assert "fail example 2: the rule passed '您好呀' — it does not catch this" in out
    assert "fail example 1" not in out and "pass example" not in out


def test_checks_run_through_a_long_lived_node(tmp_path: Path) -> None:
    said = transcript(("hi", "您好"))
    context = GradingContext(transcript=said, labels={}, vars={}, test_id="t", turn=None, suite_dir=tmp_path)
    specs = [spec(f"javascript: output.length === {n % 3}") for n in range(60)]
    start = time.monotonic()
    results = asyncio.run(evaluate_off_loop(specs, context, 30))
    assert [r.passed for r in results] == [n % 3 == 2 for n in range(60)]
    assert time.monotonic() - start < 10  # tens of milliseconds each would be a node started per check


def test_a_closed_pool_starts_no_node_that_would_outlive_the_run() -> None:
    # at exit (Ctrl-C, SIGTERM) close() stops the workers; the grading threads they were serving then move on
    # to their next check, which must not start a node no one will stop (an endless check spun on, orphaned)
    from evalspec.core.node import NodePool

    pool = NodePool(1)
    assert pool.call({"op": "run", "code": "output === 'x'", "output": "x", "context": {}}, 30)["ok"] is True
    pool.close()
    with pytest.raises(GradingError, match="the run is ending"):
        pool.call({"op": "run", "code": "true", "output": "x", "context": {}}, 30)
    assert pool.live() == 0


def test_waiting_for_a_free_worker_is_not_charged_to_the_time_limit() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from evalspec.core.node import NodePool

    pool = NodePool(size=2)
    request = {"op": "run", "code": "const end = Date.now() + 2000;\nwhile (Date.now() < end) {}\nreturn true;",
               "output": "", "context": {}}
    warm = {"op": "run", "code": "return true;", "output": "", "context": {}}
    try:
        with ThreadPoolExecutor(3) as threads:
            for f in [threads.submit(pool.call, warm, 30) for _ in range(2)]:
                f.result()  # both workers started: node's start-up (slow under load) is not in what follows
            first = [threads.submit(pool.call, request, 3) for _ in range(2)]
            time.sleep(0.3)  # both workers busy: the third check waits ~1.7 s for one, then runs 2 s (> 3 s)
            answers = [f.result() for f in [*first, threads.submit(pool.call, request, 3)]]
    finally:
        pool.close()
    assert [a["result"] for a in answers] == [{"kind": "bool", "value": True}] * 3


def test_an_error_thrown_after_its_check_answered_never_blames_the_next_check() -> None:
    late = "setTimeout(() => { throw new Error('late') }, 300);\nPromise.reject(new Error('nobody awaits'));\nreturn true;"
    assert grade("javascript: |\n" + "".join("  " + line + "\n" for line in late.splitlines()),
                 transcript(("hi", "x"))).passed is True
    waits = "new Promise((done) => setTimeout(() => done(output === 'x'), 800));"  # the late error comes now
    assert grade(f"javascript: \"{waits}\"", transcript(("hi", "x"))).passed is True


def test_a_function_or_a_symbol_is_not_a_verdict_with_a_clear_error() -> None:
    for code in ("(() => 1)", "Symbol('s')"):
        result = grade(f"javascript: \"{code}\"", transcript(("hi", "x")))
        assert result.passed is None and "slice" not in (result.error or ""), result.error
