"""promptfoo assertions as evalspec checks: the types evalspec has keep their meaning (negated forms via
`not-`), renamed ones take their evalspec name, one-line `javascript` on the reply's text becomes evalspec's
own checks and other `javascript` evalspec's `javascript` (the code as written, or its file), and
`finish-reason` evalspec's; everything else is listed as not converted."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from evalspec.authoring.importers import plain
from evalspec.authoring.importers.promptfoo.pychecks import CHECKS_FILE, HEADER, file_check, inline_check
from evalspec.authoring.importers.promptfoo.source import Part, load_yaml, short
from evalspec.authoring.importers.promptfoo.sql import is_sql_value
from evalspec.authoring.importers.shapes import Check
from evalspec.extend.provider import normalize_finish_reason

# promptfoo assertion types with the same meaning in evalspec (negated forms via `not-`)
SAME_TYPES = {"contains", "icontains", "contains-any", "contains-all", "equals", "regex", "starts-with",
              "is-json", "contains-json", "llm-rubric", "similar", "cost", "latency"}
RENAMED = {"model-graded-closedqa": "llm-rubric", "conversation-relevance":
           "conversation-relevance", "trajectory:goal-success": "trajectory:goal-success",
           "is-valid-openai-tools-call": "tool-args-valid", "is-valid-openai-function-call": "tool-args-valid",
           "is-valid-function-call": "tool-args-valid"}
# promptfoo's model-graded checks whose question a judge asks of the reply, as `llm-rubric` rubrics
MODEL_GRADED = {
    "factuality": "The reply is factually consistent with this reference: it may leave out or add detail, but it "
                  "contradicts none of it. Reference: {value}",
    "model-graded-factuality": "The reply is factually consistent with this reference: it may leave out or add "
                               "detail, but it contradicts none of it. Reference: {value}",
    "answer-relevance": "The reply is relevant to the user's question and answers it.",
}
# promptfoo's g-eval: a judge scores each criterion 0..10, the check's score is that over 10 and it passes at its
# threshold (0.7 unless set); a list of criteria passes when the mean of their scores reaches it
GEVAL_LEVELS = {f"{n}/10": n / 10 for n in range(10, -1, -1)}
GEVAL_THRESHOLD = 0.7
# the checks whose grading prompt promptfoo's `rubricPrompt` replaces (g-eval only by a {steps, evaluate} mapping)
_RUBRIC_PROMPTED = {"llm-rubric", "factuality", "model-graded-factuality", "model-graded-closedqa",
                    "answer-relevance", "conversation-relevance", "trajectory:goal-success"}
# how a rubricPrompt's `{{ output }}` reads in evalspec's judge prompt (the reply is shown before the rubric)
OUTPUT_IN_RUBRIC = "[the assistant's last reply, shown above]"
_JS_STRING = r"""(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")"""
_JS_TEST = regex.compile(r"(!?)\s*output(\.toLowerCase\(\))?\.(includes|startsWith)\(\s*" + _JS_STRING + r"\s*\)")
_JS_LENGTH = regex.compile(r"output(?:\.trim\(\))?\.length\s*(>=|<=|>|<)\s*(\d+)")
# what javascript code reads of `output` and `context`: a string's members (and a tool-call reply's
# `content` and `tool_calls`) are what evalspec hands over; other members are a provider's parsed object
_JS_MEMBER = r"\s*(?:\?\.|\.)\s*([A-Za-z_$][\w$]*)"
_JS_OUTPUT_MEMBER = regex.compile(r"(?<![\w$.])output" + _JS_MEMBER)
_JS_CONTEXT_MEMBER = regex.compile(r"(?<![\w$.])context" + _JS_MEMBER)
_JS_STRING_MEMBERS = frozenset({
    "length", "includes", "toLowerCase", "toUpperCase", "toLocaleLowerCase", "toLocaleUpperCase", "trim",
    "trimStart", "trimEnd", "startsWith", "endsWith", "split", "match", "matchAll", "replace", "replaceAll",
    "indexOf", "lastIndexOf", "slice", "substring", "substr", "charAt", "charCodeAt", "codePointAt", "at",
    "search", "localeCompare", "normalize", "padStart", "padEnd", "repeat", "concat", "toString", "valueOf",
    "content", "tool_calls"})
_JS_CONTEXT_KEYS = frozenset({"vars", "prompt", "test", "config"})  # what evalspec's context shares with promptfoo's
_JS_FILES = (".js", ".cjs", ".mjs")


def _js_string(m: regex.Match[str]) -> str:
    raw = m.group(4) if m.group(4) is not None else m.group(5)
    return str(regex.sub(r"\\(.)", r"\1", raw))


def js_checks(code: str, negate: bool = False) -> Check | None:
    """A one-line `javascript` check on the reply's text evalspec can say with its own checks, with the
    same meaning: `output.includes(S)`, `.toLowerCase().includes(s)`, `.startsWith(S)`, `output.length
    OP N`, one `!`, and `&&` or `||` between them. Anything else is None (not converted)."""
    code = code.strip().rstrip(";").strip()
    if code.startswith("'") and code.endswith("'") or code.startswith('"') and code.endswith('"'):
        code = code[1:-1].strip()
    if "\n" in code or not code or negate:
        return None
    ors = [part.strip() for part in code.split("||")]
    ands = [part.strip() for part in code.split("&&")]
    if len(ors) > 1 and len(ands) > 1:
        return None
    parts, joined = (ors, "any") if len(ors) > 1 else (ands, "all")
    checks: list[tuple[str, Any]] = []
    for part in parts:
        while part.startswith("(") and part.endswith(")"):
            part = part[1:-1].strip()
        if (m := _JS_TEST.fullmatch(part)) is not None:
            text = _js_string(m)
            if not text:
                return None
            kind = "starts-with" if m.group(3) == "startsWith" else "icontains" if m.group(2) else "contains"
            if kind == "icontains" and text != text.lower():
                return None  # a lower-cased reply never holds capitals
            if kind == "starts-with":  # promptfoo's startsWith is exact: evalspec's starts-with skips white space
                kind, text = "regex", r"\A" + regex.escape(text)
            checks.append((("not-" if m.group(1) else "") + kind, text))
        elif (m := _JS_LENGTH.fullmatch(part)) is not None and "trim" not in part:
            op, n = m.group(1), int(m.group(2))
            least = {">": n + 1, ">=": n}.get(op)
            most = {"<": n - 1, "<=": n}.get(op)
            if most is not None and most < 0:
                return None
            span = f"{{{least},}}" if least is not None else f"{{0,{most}}}"
            checks.append(("regex", rf"\A[\s\S]{span}\Z"))
        else:
            return None
    if len(checks) == 1:
        return {checks[0][0]: checks[0][1]}
    if joined == "any":
        if any(kind.startswith("not-") for kind, _ in checks):
            return None
        alternatives = [rf"\A{regex.escape(t)}" if kind == "starts-with" else
                        ("(?i:" + regex.escape(t) + ")" if kind == "icontains" else regex.escape(t))
                        if kind != "regex" else f"(?:{t})" for kind, t in checks]
        return {"regex": "|".join(alternatives)}
    if all(kind == "contains" for kind, _ in checks):
        return {"contains-all": [t for _, t in checks]}
    return None



# what a check reads the same on the reply trimmed (promptfoo's `output.trim()` transform) as on the reply
_TRIM_SAFE = {"equals", "starts-with", "is-json", "contains-json", "llm-rubric", "g-eval", "model-graded-closedqa",
              "factuality", "model-graded-factuality", "answer-relevance", "similar"}
_TRIM_SAFE_TEXTS = {"contains", "icontains", "contains-any", "contains-all", "icontains-any", "icontains-all"}


def transform_kept(transform: Any, raw: dict[str, object]) -> bool:
    """Whether a check on promptfoo's `transform(output)` means the same on the reply as it is: no
    transform, or `output.trim()` before a check that ignores surrounding white space (evalspec's
    `equals` and `starts-with` do; a text search does when its texts have none at their ends)."""
    if transform is None:
        return True
    if not isinstance(transform, str) or regex.fullmatch(r"\s*output\.trim\(\)\s*;?\s*", transform) is None:
        return False
    base = str(raw.get("type", "")).removeprefix("not-")
    value = raw.get("value")
    texts = value if isinstance(value, list) else [value]
    return base in _TRIM_SAFE or base in _TRIM_SAFE_TEXTS and all(
        isinstance(t, str) and t == t.strip() for t in texts)


# promptfoo's text checks as JavaScript on the text `s` of a transformed output (its src/assertions, exactly)
_JS_CHECKS = {
    "contains": "s.includes(String(V))", "icontains": "s.toLowerCase().includes(String(V).toLowerCase())",
    "contains-any": "V.some((v) => s.includes(String(v)))", "contains-all": "V.every((v) => s.includes(String(v)))",
    "icontains-any": "V.some((v) => s.toLowerCase().includes(String(v).toLowerCase()))",
    "icontains-all": "V.every((v) => s.toLowerCase().includes(String(v).toLowerCase()))",
    "starts-with": "s.startsWith(String(V))", "equals": "String(V) === s", "regex": "new RegExp(V).test(s)",
    "is-json": "(() => { try { JSON.parse(s); return true; } catch { return false; } })()",
}


# text checks evalspec says in its own words, which read a reply's words where promptfoo reads a tool call's JSON
_TEXT_ONLY = {"contains-json", "similar", "levenshtein", "word-count", "is-sql", "rouge-n", "bleu", "perplexity"}


def transformed_check(kind: str, value: Any, transforms: list[Any]) -> str | None:
    """A text check on promptfoo's transformed output (the test's `options.transform`, then the check's own)
    as one `javascript` check that does both, as promptfoo does them (inline transforms: one line an
    expression, several a function body); None when it cannot be."""
    negate, base = (True, kind[4:]) if kind.startswith("not-") else (False, kind)
    if not all(isinstance(t, str) and not t.startswith("file://") for t in transforms) or base not in _JS_CHECKS \
            or base == "is-json" and value is not None:  # a JSON Schema is not checked here
        return None
    lists = base.endswith(("-any", "-all"))
    if lists and not (isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value)) \
            or not lists and base != "is-json" and not isinstance(value, (str, int, float)):
        return None
    steps = "".join(f"transformed = (function (output, context) {{\n{_body(t)}\n}})(transformed, context);\n"
                    for t in transforms)
    test = _JS_CHECKS[base].replace("V", "expected")
    return ("let transformed = output;\n" + steps +
            "const s = typeof transformed === 'string' ? transformed : JSON.stringify(transformed);\n"
            f"const expected = {json.dumps(value, ensure_ascii=False)};\n"
            f"return {'!' if negate else ''}({test});\n")


def _body(transform: str) -> str:
    """An inline transform as a function body: one line is an expression, several lines a body."""
    return transform.strip() if "\n" in transform.strip() else f"return {transform.strip()};"


@dataclass(frozen=True)
class Grading:
    """What promptfoo's judged checks read of their test: its `options.rubricPrompt`, whether it has a
    `threshold` (its checks' scores decide it), and the vars every test it stands for has, or some have."""

    rubric_prompt: Any = None
    scored: bool = False
    vars_always: frozenset[str] = frozenset()
    vars_somewhere: frozenset[str] = frozenset()


@dataclass
class _Check:
    """One promptfoo check on its way to evalspec's: what each converter of `_CONVERTERS` reads."""

    kind: str  # as written (`not-contains`)
    base: str  # without its `not-`
    negate: bool
    raw: dict[str, object]  # its keys (the ones a converter has read dropped: `drop`)
    value: Any
    where: str
    trimmed: bool  # checked on `output.trim()` (the one transform kept)

    @property
    def prefix(self) -> str:
        return "not-" if self.negate else ""

    @property
    def name(self) -> str:
        return self.prefix + self.base

    def drop(self, *keys: str) -> None:
        """Keys the converter has said in its check: not copied after it, nor noted."""
        self.raw = {k: v for k, v in self.raw.items() if k not in keys}


class Checks(Part):
    """promptfoo's assertions as evalspec checks (one converter per type: `_CONVERTERS`)."""

    def assertion(self, raw: Any, where: str, transform: Any = None, test: Grading = Grading()) -> Check | None:
        """One promptfoo check as an evalspec check, or None (noted); `transform` is the test's
        `options.transform`, which runs before the check's own `transform`; `test` what a judged check
        reads of its test. Each check type has its converter in `_CONVERTERS`."""
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            self.source.notes.append(f"{where}: assertion {short(raw)}")
            return None
        kind = raw["type"]
        prompted = raw.get("rubricPrompt") or test.rubric_prompt
        raw = {k: v for k, v in raw.items() if k != "rubricPrompt"}
        chain = [t for t in (transform, raw.get("transform")) if t is not None]  # the test's, then the check's
        kept = all(transform_kept(t, raw) for t in chain)
        # beside a model whose tool calls are the reply, promptfoo's text checks read the calls as their JSON
        tools_read = self.source.reported_tools and kind.removeprefix("not-") in {*_JS_CHECKS, *_TEXT_ONLY}
        if not kept or tools_read:  # promptfoo's own check, in JavaScript, on what promptfoo reads
            return self._as_javascript(kind, raw, chain, kept, where)
        negate, base = (True, kind[4:]) if kind.startswith("not-") else (False, kind)
        # a transform kept is promptfoo's output.trim(): what evalspec's equals/starts-with do
        check = _Check(kind, base, negate, {k: v for k, v in raw.items() if k != "transform"}, raw.get("value"),
                       where, trimmed=bool(chain))
        if not self._value_read(check, prompted, test):
            return None
        out = _CONVERTERS.get(base, Checks._unknown)(self, check)
        return None if out is None else self._finished(out, check, prompted)

    def _as_javascript(self, kind: str, raw: dict[str, object], chain: list[Any], kept: bool,
                       where: str) -> Check | None:
        """A text check on promptfoo's transformed output, or on a reply of tool calls, as promptfoo's own
        check in JavaScript; None (noted) when it cannot be."""
        code = transformed_check(kind, raw.get("value"), chain)
        if code is None:
            self.source.notes.append(
                f"{where}: assertion '{kind}' " + (
                    f"on the output transformed by {chain[-1]!r} (on the reply as it is, the check would mean "
                    "something else)" if not kept else "beside a model whose tool calls are the reply (promptfoo "
                    "reads them as their JSON text; evalspec's check reads the words)"))
            return None
        return dict(plain({"javascript": code, **{k: raw[k] for k in ("weight", "metric") if k in raw}}))

    def _value_read(self, check: _Check, prompted: Any, test: Grading) -> bool:
        """The check's value as its converter reads it (a limit, a rubric prompt, a JSON Schema); False
        (noted) when the check is not converted whatever its type."""
        base, kind, where = check.base, check.kind, check.where
        threshold = check.raw.get("threshold")
        if base in ("latency", "cost") and check.value is None and isinstance(threshold, (int, float)):
            check.value = threshold  # promptfoo's limit
            check.drop("threshold")
        if prompted and base in _RUBRIC_PROMPTED:
            if base != "llm-rubric":
                self.source.notes.append(f"{where}: assertion '{kind}' with a rubricPrompt (promptfoo grades it with that "
                                         "prompt instead of its own question)")
                return False
            check.value = self.rubric_prompt(prompted, check.value, check.raw, test, f"{where}: assertion '{kind}'")
            if check.value is None:
                return False
            check.drop("threshold")  # said in the rubric
        if base == "g-eval" and isinstance(prompted, dict) and {"steps", "evaluate"} & set(prompted):
            self.source.notes.append(f"{where}: assertion '{kind}' with its own rubricPrompt steps/evaluate")
            return False
        if base in SAME_TYPES and check.value is None and base not in ("is-json", "contains-json"):
            self.source.notes.append(f"{where}: assertion '{kind}' without a value")
            return False
        if base in ("contains-json", "is-json") and isinstance(check.value, str):
            check.value = self.json_schema(check.value, kind, where)  # a JSON Schema written as YAML or JSON text
            if check.value is None:
                return False
        if base == "equals" and not isinstance(check.value, (str, int, float)):
            self.source.notes.append(f"{where}: assertion 'equals' on a structured value")
            return False
        return True

    def _finished(self, out: Check, check: _Check, prompted: Any) -> Check:
        """A converted check with the source's threshold, weight and metric; the keys not read, noted."""
        raw, base, kind, where = check.raw, check.base, check.kind, check.where
        for key in ("threshold", "weight", "metric"):
            if key in raw and not (key == "threshold" and base == "levenshtein"):
                out[key] = raw[key]
        if prompted and base == "llm-rubric" and "metric" in raw:
            self.source.notes.append(f"{where}: assertion '{kind}' metric {raw['metric']!r} (promptfoo records the score "
                                     "its rubricPrompt asks the judge for; evalspec the verdict, 1 or 0)")
        for key in sorted(set(raw) - {"type", "value", "threshold", "weight", "metric",
                                      *(("config",) if base == "javascript" else ())}):
            self.source.notes.append(f"{where}: assertion '{kind}' key '{key}'")
        return dict(plain(out))  # its templates are the config's, rendered with the test's vars; `${` is text

    # the converters of `_CONVERTERS`: the evalspec check, or None (noted)

    def _unknown(self, check: _Check) -> Check | None:
        self.source.notes.append(f"{check.where}: assertion type '{check.kind}'")
        return None

    def _same(self, check: _Check) -> Check | None:
        if check.base in ("is-json", "contains-json") and check.value is None:
            return {"type": check.name}
        return {check.name: check.value}

    def _exact_text(self, check: _Check) -> Check | None:
        """`equals` and `starts-with`: promptfoo compares exactly; evalspec's skip surrounding white space."""
        value = check.value
        if check.base == "equals" and value == "":  # the reply is exactly empty (or, negated, is not)
            return {"regex": r"[\s\S]"} if check.negate else {"regex": r"\A\Z"}
        if not check.trimmed and isinstance(value, str) and "{{" not in value:
            tail = r"\Z" if check.base == "equals" else ""
            return {check.prefix + "regex": r"\A" + regex.escape(value) + tail}
        return self._same(check)

    def _javascript(self, check: _Check) -> Check | None:
        if not isinstance(check.value, str):
            return self._unknown(check)
        if not self.source.reported_tools and (checks := js_checks(check.value, check.negate)) is not None:
            return checks
        code = self.javascript(check.value, check.raw, check.where)
        if code is None:
            return None
        config = check.raw.get("config")
        return {check.name: code, **({"config": config} if isinstance(config, dict) else {})}

    def _g_eval(self, check: _Check) -> Check | None:
        out = self.g_eval(check.raw, check.where)
        check.drop("threshold")  # on the levels' scores, in out
        return out or None

    def _renamed(self, check: _Check) -> Check | None:
        to, value = RENAMED[check.base], check.value
        if to not in ("conversation-relevance", "tool-args-valid") and not (isinstance(value, str) and value.strip()):
            return self._unknown(check)
        return {check.prefix + to: value if to != "tool-args-valid" else True}

    def _icontains_any(self, check: _Check) -> Check | None:
        if not (isinstance(check.value, list) and check.value):
            return self._unknown(check)
        return {check.prefix + "regex": "(?i)" + "|".join(regex.escape(str(v)) for v in check.value)}

    def _icontains_all(self, check: _Check) -> Check | None:
        if not (isinstance(check.value, list) and check.value):
            return self._unknown(check)
        return {check.prefix + "regex": "(?is)" + "".join(f"(?=.*{regex.escape(str(v))})" for v in check.value)}

    def _levenshtein(self, check: _Check) -> Check | None:
        threshold = check.raw.get("threshold")
        if not isinstance(threshold, (int, float)):
            return self._unknown(check)
        return {check.name: {"value": check.value, "max": int(threshold)}}

    def _model_graded(self, check: _Check) -> Check | None:
        value = check.value
        if not (check.base == "answer-relevance" or isinstance(value, str) and value.strip()):
            return self._unknown(check)
        out: Check = {check.prefix + "llm-rubric": MODEL_GRADED[check.base].format(value=value)}
        if "threshold" in check.raw:
            self.source.notes.append(f"{check.where}: assertion '{check.kind}' threshold {check.raw['threshold']} "
                                     "(promptfoo's own scale; the judge's verdict decides)")
            check.drop("threshold")
        return out

    def _word_count(self, check: _Check) -> Check | None:
        value = check.value
        if check.negate or not (isinstance(value, int) and value >= 0 or isinstance(value, dict)
                                and set(value) <= {"min", "max"} and value):
            return self._unknown(check)
        return {"word-count": {"min": value, "max": value} if isinstance(value, int) else dict(value)}

    def _is_sql(self, check: _Check) -> Check | None:
        sql_value, why = is_sql_value(check.value)
        if why is not None:
            self.source.notes.append(f"{check.where}: assertion '{check.kind}' {why}")
            return None
        return {check.name: sql_value} if sql_value else {"type": check.name}

    def _python(self, check: _Check) -> Check | None:
        if not (isinstance(check.value, str) and check.value.strip()):
            return self._unknown(check)
        out = self.python_check(check.name, check.value, check.raw, check.where)
        check.drop("threshold", "config")  # read inside the check
        return out or None

    def _finish_reason(self, check: _Check) -> Check | None:
        out = self.finish_reason(check.kind, check.value, check.where)
        check.drop("threshold")  # promptfoo's check never reads it
        return out or None

    def finish_reason(self, kind: str, value: Any, where: str) -> Check:
        """promptfoo's `finish-reason` (the reason promptfoo's model providers normalize as evalspec's do,
        equal to the value whatever its case) as evalspec's; {} (noted) when evalspec would read it
        otherwise: promptfoo ignores the `not-` of `not-finish-reason`, and compares the value as written,
        where evalspec reads a provider's own word (`end_turn`) as the reason it means (`stop`); a
        template or a value with spaces around it is not converted either."""
        if kind.startswith("not-"):
            self.source.notes.append(f"{where}: assertion '{kind}' (promptfoo ignores its `not-`: it checks what "
                                     "'finish-reason' checks, the opposite of what it says)")
        elif not isinstance(value, str) or "{{" in value or normalize_finish_reason(value) != value.lower():
            self.source.notes.append(f"{where}: assertion '{kind}' value {value!r} (promptfoo compares it with the "
                                     "normalized reason as written: stop, length, content_filter, tool_calls)")
        else:
            return {"finish-reason": value}
        return {}

    def g_eval(self, raw: dict[str, object], where: str) -> Check:
        """promptfoo's `g-eval` on one criterion: `llm-rubric` with the levels 0/10 .. 10/10 (the judge's
        score out of 10, as promptfoo asks for it) passing at the check's threshold (0.7 unless set); {}
        when noted (a list of criteria is the test's threshold: `criteria_mean`)."""
        kind, value = str(raw["type"]), raw.get("value")
        threshold = _g_eval_threshold(raw.get("threshold"))
        why = None
        if kind.startswith("not-"):
            why = "(promptfoo's g-eval ignores `not-`: its verdict is g-eval's)"
        elif isinstance(value, list):
            why = ("with a list of criteria (promptfoo passes when the mean of their scores reaches the threshold: "
                   "evalspec says that as the threshold of a single-turn test whose one check it is)")
        elif not isinstance(value, str) or not value.strip():
            why = "without a criterion"
        elif threshold is None:
            why = f"threshold {raw.get('threshold')!r} (promptfoo's g-eval scores are 0..1)"
        if why is not None:
            self.source.notes.append(f"{where}: assertion '{kind}' {why}")
            return {}
        return _graded(value, threshold)

    def criteria_mean(self, raw: Any, where: str, transform: Any, test_threshold: Any) -> \
            tuple[list[Check], float] | None:
        """A test whose one check is a `g-eval` on a list of criteria (promptfoo: it passes when the mean of
        the criteria's scores reaches the check's threshold, or the test's own): one graded `llm-rubric` per
        criterion and that threshold as the test's (it passes when the mean of its checks' scores reaches
        it, docs/en/suite-format.md#scores-and-verdicts). None when the test is not such a test, or the form would not be exact."""
        if not isinstance(raw, list) or len(raw) != 1 or not isinstance(raw[0], dict):
            return None
        check = raw[0]
        criteria = check.get("value")
        if check.get("type") != "g-eval" or not isinstance(criteria, list) or not criteria or not all(
                isinstance(c, str) and c.strip() for c in criteria) or "rubricPrompt" in check:
            return None
        weight = check.get("weight", 1)
        threshold = _g_eval_threshold(check.get("threshold"))
        if test_threshold is not None:  # promptfoo: the test's threshold decides from the test's score
            threshold = test_threshold if _in_unit(test_threshold) else None
        chain = [t for t in (transform, check.get("transform")) if t is not None]
        if threshold is None or not all(transform_kept(t, check) for t in chain) or not (
                isinstance(weight, (int, float)) and not isinstance(weight, bool) and weight > 0) or set(check) - {
                "type", "value", "threshold", "weight", "metric", "transform"}:
            return None
        keep = {k: check[k] for k in ("weight", "metric") if k in check}
        return [dict(plain({**_graded(c, threshold), **keep})) for c in criteria], threshold

    def rubric_prompt(self, prompt: Any, value: Any, raw: dict[str, object], test: Grading, what: str) -> str | None:
        """An `llm-rubric` graded with promptfoo's `rubricPrompt` (the whole grading prompt, filled with the
        test's vars, `{{ output }}` and the check's value as `{{ rubric }}`; the judge's `pass` is the
        verdict, held to the check's threshold by the judge's own score) as the rubric evalspec's judge
        reads: the prompt's text, the output named as the reply. None (noted) when
        it cannot be said exactly: images in it, code, a test's threshold (the judge's own scores decide
        it), a var only some tests have (promptfoo renders it empty where it is missing)."""
        why, text = None, None
        threshold = raw.get("threshold")
        if test.scored:
            why = "with a rubricPrompt in a test with a threshold (the scores that prompt asks the judge for decide it)"
        elif value is not None and not isinstance(value, str):
            why = "with a rubricPrompt and a structured value"
        elif threshold is not None and (not isinstance(threshold, (int, float)) or isinstance(threshold, bool)):
            why = f"with a rubricPrompt and threshold {threshold!r}"
        else:
            text, why = self._rubric_prompt_text(prompt)
        if text is not None:
            if value and not regex.search(r"\{\{-?\s*rubric\s*-?\}\}", text):
                self.source.notes.append(f"{what} value {short(value)} (its rubricPrompt has no {{{{ rubric }}}}: promptfoo's "
                                         "judge never reads it)")
            filled = {"output": OUTPUT_IN_RUBRIC, "rubric": str(value or "")}
            lost: list[str] = []

            def fill(m: regex.Match[str]) -> str:
                name = m.group(1)
                if name in test.vars_always:
                    return str(m.group(0))  # evalspec renders the test's var (promptfoo's vars come before its own)
                if name in test.vars_somewhere:
                    lost.append(name)
                return filled.get(name, "")  # promptfoo renders a name it does not have as nothing

            text = regex.sub(r"\{\{-?\s*([A-Za-z_]\w*)\s*-?\}\}", fill, text).rstrip()
            if lost:
                why, text = f"with a rubricPrompt reading var '{lost[0]}' that only some tests have", None
            elif regex.search(r"\{[{%][^}]*\b(?:output|rubric)\b", text):
                why, text = "with a rubricPrompt reading output or rubric in a template evalspec cannot fill", None
            elif not text.strip():
                why, text = "with an empty rubricPrompt", None
        if text is not None and isinstance(threshold, (int, float)):
            # promptfoo: pass && score >= threshold, the score the judge gives (its pass as 1 or 0 without one)
            if not regex.search(r"(?i)\bscor", text):
                if threshold > 1:
                    why, text = f"with a rubricPrompt asking for no score and threshold {threshold} (it never passes)", None
            else:  # the judge's own score would decide: evalspec's verdicts score what code computes
                why, text = (f"with a rubricPrompt asking for a score and threshold {threshold:g} (promptfoo holds "
                             "the judge's own score to it; evalspec's verdict scores 1 or 0)"), None
        if text is None:
            self.source.notes.append(f"{what} {why}")
        return text

    def _rubric_prompt_text(self, prompt: Any) -> tuple[str | None, str | None]:
        """The text of a rubricPrompt (chat messages, their JSON, plain text, or `file://` a .json, .yaml or
        .txt file): (text, None), or (None, why not)."""
        import yaml

        if isinstance(prompt, str) and prompt.startswith("file://"):
            target = prompt[len("file://"):]
            if Path(target).suffix.lower() not in (".json", ".yaml", ".yml", ".txt", ".md", ""):
                return None, f"from code ({prompt})"
            file = self.source.inside(target, prompt)
            try:
                prompt = file.read_text(encoding="utf-8") if file is not None else None
                if file is not None and file.suffix.lower() in (".yaml", ".yml"):
                    prompt = load_yaml(prompt)
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                prompt = None
            if prompt is None:
                return None, f"that could not be read ({target})"
        if isinstance(prompt, str) and prompt.strip().startswith(("[", "{")):
            with contextlib.suppress(json.JSONDecodeError):  # else a text template starting with a bracket
                prompt = json.loads(prompt)
        if isinstance(prompt, str):
            return prompt, None
        if not isinstance(prompt, list) or not prompt:
            return None, "with a rubricPrompt that is no text or chat messages"
        texts = []
        for message in prompt:
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(message, dict) or message.get("role") not in ("system", "user"):
                return None, "with a rubricPrompt holding other than system and user messages"
            if isinstance(content, list):
                if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                           for p in content):
                    return None, "with a multimodal rubricPrompt (images are not shown to evalspec's judge)"
                content = "\n".join(p["text"] for p in content)
            if not isinstance(content, str):
                return None, "with a rubricPrompt message that is not text"
            texts.append(content.strip())
        return "\n\n".join(t for t in texts if t), None

    def json_schema(self, text: str, kind: str, where: str) -> dict[str, object] | None:
        """An `is-json`/`contains-json` schema given as text (YAML or JSON) or `file://schema.json|yaml`;
        None (noted) when it is not a schema: the check is not written without the schema it has."""
        import yaml

        if text.startswith("file://"):
            file = self.source.inside(text[len("file://"):], where)
            try:
                text = file.read_text(encoding="utf-8") if file is not None else ""
            except (OSError, UnicodeDecodeError):
                text = ""
        try:
            schema = load_yaml(text) if text.strip() else None
        except yaml.YAMLError:
            schema = None
        if not isinstance(schema, dict):
            self.source.notes.append(f"{where}: assertion '{kind}' with a JSON Schema that could not be read")
            return None
        return schema

    def python_check(self, name: str, value: str, raw: dict[str, object], where: str) -> Check:
        """A promptfoo `python` check (inline code, or `file://x.py[:fn]`) through a function of
        `promptfoo_checks.py` that reads its result as promptfoo does; {} when its file is missing."""
        given = raw.get("threshold")
        threshold = given if isinstance(given, (int, float)) else None
        number = self.source.files.get(CHECKS_FILE, "").count("\ndef check_") + 1
        if value.startswith("file://"):
            file, _, function = value[len("file://"):].partition(":")
            relative = self.source.relative(file, where)
            if relative is None:
                return {}
            code = file_check(number, relative, function or "get_assert", threshold, raw.get("config"))
        else:
            code = inline_check(number, value, threshold, raw.get("config"))
        self.source.files[CHECKS_FILE] = self.source.files.get(CHECKS_FILE, HEADER) + code
        return {name: f"{CHECKS_FILE}:check_{number}"}

    def javascript(self, value: str, raw: dict[str, object], where: str) -> str | None:
        """The code of a `javascript` check evalspec's `javascript` runs with the same meaning: inline as
        written, `file://F.js[:fn]` as seen from the output folder. None (noted) when its verdict could
        differ: a threshold outside 0..1 or beside a `{pass, ...}` result (evalspec's threshold
        decides from the score), several lines without `return` (promptfoo's check returns nothing),
        members of `output` a string has not (a provider's parsed object) or of `context` evalspec has not."""
        kind, threshold = raw["type"], raw.get("threshold")
        why, text, code = None, value, value
        if threshold is not None and not (isinstance(threshold, (int, float)) and 0 <= threshold <= 1):
            why = f"threshold {threshold!r} (evalspec's thresholds are 0..1)"
        if why is None and value.startswith("file://"):
            file, _, function = value[len("file://"):].partition(":")
            absolute = (self.source.path.parent / file).resolve()
            if not file.endswith(_JS_FILES):
                why = f"file {file} (node runs .js, .cjs and .mjs files)"
            elif absolute.is_relative_to(self.source.path.parent.resolve()) and not absolute.is_file():
                why = f"file {file} is not next to the config"
            else:
                relative = self.source.relative(file, where)
                if relative is None:
                    return None
                text, code = absolute.read_text(encoding="utf-8", errors="replace"), f"file://{relative}"
                code += f":{function}" if function else ""
        elif why is None:
            outside = sorted(set(_JS_OUTPUT_MEMBER.findall(value)) - _JS_STRING_MEMBERS)
            if "\n" in value.strip() and not regex.search(r"\breturn\b", value):
                why = "on several lines without `return` (promptfoo's check returns nothing: it always fails)"
            elif outside:
                why = f"reading output.{outside[0]} (a provider's parsed object; evalspec hands the reply's text)"
        if why is None:
            unknown = sorted(set(_JS_CONTEXT_MEMBER.findall(text)) - _JS_CONTEXT_KEYS)
            if unknown:
                why = f"reading context.{unknown[0]} (evalspec's context has vars, prompt, test and config)"
            elif threshold is not None and regex.search(r"\bpass\b", text):
                why = "with a threshold and a {pass, ...} result (evalspec's threshold decides from the score)"
        if why is not None:
            self.source.notes.append(f"{where}: assertion '{kind}' {why}")
            return None
        return code

    def assertions(self, raw: Any, where: str, transform: Any = None, test: Grading = Grading()) -> list[Check]:
        if raw is not None and not isinstance(raw, list):
            self.source.notes.append(f"{where}.assert: {short(raw)} (not a list of checks)")
        items = raw if isinstance(raw, list) else []
        return [a for i, item in enumerate(items)
                if (a := self.assertion(item, f"{where}.assert[{i}]", transform, test))]


def _g_eval_threshold(threshold: Any) -> float | None:
    """A g-eval's threshold (promptfoo: `threshold || 0.7`), or None when it is outside 0..1."""
    if threshold is None or threshold == 0 and not isinstance(threshold, bool):
        return GEVAL_THRESHOLD
    return float(threshold) if _in_unit(threshold) else None


def _in_unit(number: Any) -> bool:
    """A number (not a bool) in 0 < x <= 1: a score threshold promptfoo's g-eval can reach."""
    return isinstance(number, (int, float)) and not isinstance(number, bool) and 0 < number <= 1


def _graded(criterion: Any, threshold: Any) -> Check:
    """One g-eval criterion as evalspec's: a graded `llm-rubric` scoring 0/10 .. 10/10, at `threshold`."""
    return {"llm-rubric": criterion, "levels": dict(GEVAL_LEVELS), "threshold": threshold}


# promptfoo check type (without `not-`) -> its converter; a type not here is noted as not converted
_CONVERTERS: dict[str, Callable[[Checks, _Check], Check | None]] = {
    **{kind: Checks._same for kind in SAME_TYPES},
    "equals": Checks._exact_text, "starts-with": Checks._exact_text,
    **{kind: Checks._renamed for kind in RENAMED},
    **{kind: Checks._model_graded for kind in MODEL_GRADED},
    "javascript": Checks._javascript, "g-eval": Checks._g_eval, "icontains-any": Checks._icontains_any,
    "icontains-all": Checks._icontains_all, "levenshtein": Checks._levenshtein, "word-count": Checks._word_count,
    "is-sql": Checks._is_sql, "python": Checks._python, "finish-reason": Checks._finish_reason,
}
