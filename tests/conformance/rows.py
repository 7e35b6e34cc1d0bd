"""The rows of the conformance table (SPEC §26): reply sources, check families and hostile shapes.

A `Source` writes a suite (and what it reads: a provider file, a JSONL or CSV log, an imported suite)
that makes the scripted replies of each `Case` reach evalspec its own way; a `Family` writes the check
the planted reply breaks; a `Shape` makes the cases of one family for one source (or says why the
combination makes no sense). One evalspec run per source × shape holds one test per family (and form),
and each test record of its run.json is held to the shape's `Expect`. Adding a source, a family or a
shape is adding one row here.

What the rules say in words that may still move (the "no reply" error text, `no_reply: ok`, the exit
codes) is in EXPECT and the constants below it, in one place.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import yaml

from tests.conformance.bots import (
    BREAK,
    INJECTED,
    NORMAL,
    PLANT,
    PLANT_PATTERN,
    QUOTE,
    QUOTE_ONLY,
    RAISE,
    TOOL,
    Bots,
    Say,
    planted,
)
from tests.helpers import invoke

# -- what SPEC says, in one place ---------------------------------------------------------------------
EXIT = {"failed": 1, "refused": 2, "errors": 3}  # §8 / §5: red line broken or pass rate; config; errors only
NO_REPLY_ERROR = "no reply"  # §26: the error of a turn that has no reply
NO_REPLY_OK = {"no_reply": "ok"}  # §26: the turn key of a bot that stays silent by design
GHOST = "ghost"  # a label no user turn matches (recorded) / no turn holds (played)
GHOST_PATTERN = "永远不会出现的一句话"

# secrets under keys §26 names, each with characters that URL-encoding or JSON-escaping change
SECRETS = {
    "access_token": "qtok-91Zx/8=",  # an http URL's query value
    "X-Auth-Token": 'hdr"tok-55Yy',  # an http header
    "client_secret": 'cs-密钥"77/x',  # at depth in an http body / a model's params
    "api_key": "sk-modelkey-4242",  # a model's key
    "token": "rasa/tok=55",  # rasa: token
    "CONFORMANCE_PASSWORD": 'env-pass"9/密',  # a ${ENV} value (a python provider has no configuration)
}
os.environ["CONFORMANCE_PASSWORD"] = SECRETS["CONFORMANCE_PASSWORD"]


class Skip(Exception):
    """This combination of rows makes no sense; the message says why."""


@dataclass(frozen=True)
class Expect:
    status: str  # the test record's status
    turn: int | None = None  # the turn the failing check's evidence names
    error: str | None = None  # a text one of the record's errors holds ("" : some error, any text)
    silent_turn: int | None = None  # a turn recorded with an empty reply (`no_reply: ok`)


@dataclass
class Case:
    """One test of a cell's run: its turns (user text, what the bot says, `no_reply: ok`), checks, verdict."""

    id: str
    family: Family
    turns: list[tuple[Say, bool]]
    asserts: list[dict[str, Any]]
    expect: Expect
    evidence_of: Family | None = None  # whose check's evidence is held to `expect.turn` (default: family)

    def users(self) -> list[str]:
        return [f"{self.id} 第{n}轮" for n in range(1, len(self.turns) + 1)]

    def script(self) -> dict[str, Say]:
        return dict(zip(self.users(), (say for say, _ in self.turns), strict=True))


# -- check families -------------------------------------------------------------------------------------
CHECKS_PY = f'''import os

def clean(output, context):
    if {RAISE!r} in output:
        raise RuntimeError("检查自己出错了")
    return "wx-7788" not in output

def ends(output, context):
    os._exit(0)
'''
JS_CLEAN = f"""const text = typeof output === 'string' ? output : JSON.stringify(output);
if (text.includes('{RAISE}')) throw new Error('检查自己出错了');
return !text.includes('wx-7788');
"""


def scope(anchor: str | None) -> Any:
    return "each_turn" if anchor is None else {"turns": [anchor]}


@dataclass(frozen=True)
class Family:
    name: str
    type: str  # the check's type as run.json records it
    check: Callable[[str | None], dict[str, Any]]  # anchor (None: every turn) -> the check, critical
    matched: str | None = None  # the text its failing evidence holds
    needs: str | None = None  # what the source must report: state, tools
    undecidable: Callable[[Source], Say] = lambda source: Say(silent=source.forms[0], state=None)
    ends: dict[str, Any] | None = None  # a check of this family that ends the process it runs in

    def __repr__(self) -> str:
        return self.name


FAMILIES = [
    Family("text", "not-regex", lambda a: {"not-regex": PLANT_PATTERN, "scope": scope(a), "severity": "critical"},
           matched="wx-7788"),
    Family("session", "not-after", lambda a: {"not-after": {"pattern": PLANT_PATTERN, "after": a or 1},
                                              "severity": "critical"}, matched="wx-7788"),
    Family("memory", "memory-recall", lambda a: {"memory-recall": {"city": "北京"}, "scope": scope(a),
                                                 "severity": "critical"}),
    Family("state", "not-state", lambda a: {"not-state": "slots.handoff", "scope": scope(a), "severity": "critical"},
           matched="slots.handoff", needs="state",
           undecidable=lambda source: Say(state=None) if "stateless" in source.caps else Say(silent=source.forms[0])),
    Family("tools", "not-tool-called", lambda a: {"not-tool-called": TOOL, "scope": scope(a), "severity": "critical"},
           matched=TOOL, needs="tools"),
    Family("judged", "llm-rubric", lambda a: {"llm-rubric": "助手从不留下任何联系方式", "scope": scope(a),
                                              "severity": "critical"},
           undecidable=lambda source: Say(text=NORMAL + BREAK)),
    Family("python", "python", lambda a: {"python": "checks.py:clean", "scope": scope(a), "severity": "critical"},
           matched="wx-7788", undecidable=lambda source: Say(text=NORMAL + RAISE),
           ends={"python": "checks.py:ends", "scope": "each_turn"}),
    Family("javascript", "javascript", lambda a: {"javascript": JS_CLEAN, "scope": scope(a), "severity": "critical"},
           undecidable=lambda source: Say(text=NORMAL + RAISE),
           ends={"javascript": "process.exit(0)", "scope": "each_turn"}),
]
TEXT = FAMILIES[0]


# -- reply sources --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """`forms`: the ways this source says "no reply" (the first is its usual one); `caps`: what it can
    report or hold: state, tools, stateless (a turn with a reply and no state), no_reply_ok (a turn key)."""

    name: str
    played: bool
    forms: tuple[str, ...]
    caps: frozenset[str]
    write: Callable[[Source, list[Case], Path, Bots], list[str]]  # -> the arguments of `evalspec run`
    secrets: tuple[str, ...] = ()  # the SECRETS keys its configuration holds
    provider: Callable[[Bots], dict[str, Any]] | None = None

    def __repr__(self) -> str:
        return self.name


def base_suite(bots: Bots) -> dict[str, Any]:
    return {"judge": {"model": "openai/judge-model", "api_base": f"{bots.url}/judge/v1", "api_key": "sk-judge"},
            "options": {"retries": 0}}


def dump(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1000), encoding="utf-8")


def common_files(where: Path) -> None:
    (where / "checks.py").write_text(CHECKS_PY, encoding="utf-8")


PYTHON_BOT = '''import json
import pathlib
from urllib.parse import quote

SCRIPT = json.loads((pathlib.Path(__file__).parent / "script.json").read_text(encoding="utf-8"))


def respond(messages, context):
    say = SCRIPT[messages[-1]["content"]]
    out = {}
    if say["silent"] == "null":
        out["content"] = None
    elif say["silent"] != "missing":
        seen = json.dumps(context["vars"], ensure_ascii=False)
        out["content"] = say["text"] + ((" " + " | ".join([seen, quote(seen, safe=""), json.dumps(seen)]))
                                        if say["echo"] else "")
    if say["tools"]:
        out["tool_calls"] = [{"name": t, "arguments": {"amount": 100}} for t in say["tools"]]
    if say["state"] is not None:
        out["state"] = say["state"]
    return out
'''


def played_suite(source: Source, cases: list[Case], where: Path, bots: Bots) -> list[str]:
    common_files(where)
    for case in cases:
        bots.plan(case.script())
    (where / "bot.py").write_text(PYTHON_BOT, encoding="utf-8")
    (where / "script.json").write_text(json.dumps({u: s.as_json() for c in cases for u, s in c.script().items()},
                                                  ensure_ascii=False), encoding="utf-8")
    assert source.provider is not None
    suite = {"providers": [{"id": "bot", **source.provider(bots)}], **base_suite(bots),
             "vars": {"crm_password": "${CONFORMANCE_PASSWORD}"},
             "tests": [{"id": c.id, "conversation": [{"user": u, **(NO_REPLY_OK if ok else {})}
                                                     for u, (_, ok) in zip(c.users(), c.turns, strict=True)],
                        "assert": c.asserts} for c in cases]}
    dump(where / "suite.yaml", suite)
    return ["suite.yaml"]


def recorded_message(say: Say, with_extras: bool = True) -> dict[str, Any]:
    """The assistant message a log holds for `say`."""
    message: dict[str, Any] = {"role": "assistant"}
    if say.silent == "null":
        message["content"] = None
    elif say.silent != "missing":
        message["content"] = say.text
    if with_extras and say.tools:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function",
                                  "function": {"name": t, "arguments": json.dumps({"amount": 100})}}
                                 for i, t in enumerate(say.tools)]
    if with_extras and say.state is not None:
        message["state"] = say.state
    return message


def write_jsonl(cases: list[Case], path: Path) -> None:
    with path.open("w", encoding="utf-8") as f:
        for case in cases:
            messages: list[dict[str, Any]] = []
            for user, (say, _) in zip(case.users(), case.turns, strict=True):
                messages.append({"role": "user", "content": user})
                messages.append(recorded_message(say))
            f.write(json.dumps({"id": case.id, "messages": messages, "metadata": {"family": case.family.name}},
                               ensure_ascii=False) + "\n")


def log_suites(cases: list[Case], where: Path, bots: Bots, log: str) -> list[str]:
    """One suite per family over one log (`where: {family: ...}`): a log's checks are its `defaults`."""
    common_files(where)
    paths = []
    for family in dict.fromkeys(c.family.name for c in cases):
        mine = [c for c in cases if c.family.name == family]
        suite = {"description": f"conformance {family}", **base_suite(bots),
                 "transcripts": {"path": log, "where": {"family": family}}, "labels": {GHOST: GHOST_PATTERN},
                 "defaults": {"assert": mine[0].asserts}}
        assert all(c.asserts == mine[0].asserts for c in mine), "a log's cases of one family share their checks"
        dump(where / f"{family}.yaml", suite)
        paths.append(f"{family}.yaml")
    return paths


def jsonl_source(source: Source, cases: list[Case], where: Path, bots: Bots) -> list[str]:
    write_jsonl(cases, where / "log.jsonl")
    return log_suites(cases, where, bots, "log.jsonl")


def csv_source(source: Source, cases: list[Case], where: Path, bots: Bots) -> list[str]:
    with (where / "log.csv").open("w", encoding="utf-8", newline="") as f:
        out = csv.writer(f)
        out.writerow(["conversation_id", "turn", "role", "content", "family"])
        for case in cases:
            for n, (user, (say, _)) in enumerate(zip(case.users(), case.turns, strict=True), 1):
                out.writerow([case.id, n, "user", user, case.family.name])
                out.writerow([case.id, n, "assistant", recorded_message(say, with_extras=False).get("content"),
                              case.family.name])
    (where / "other.csv").write_text("conversation_id,turn,role,content,family\n", encoding="utf-8")
    return [*log_suites(cases, where, bots, "other.csv"), "--transcripts", "log.csv"]  # the flag replaces the path


def inline_source(source: Source, cases: list[Case], where: Path, bots: Bots) -> list[str]:
    common_files(where)
    tests = []
    for case in cases:
        entries: list[dict[str, Any]] = []
        for user, (say, ok) in zip(case.users(), case.turns, strict=True):
            entries.append({"user": user, **(NO_REPLY_OK if ok else {})})
            message = recorded_message(say)
            message.pop("role")
            entries.append({"assistant": message.pop("content", None), **message})
        tests.append({"id": case.id, "transcript": entries, "assert": case.asserts})
    dump(where / "suite.yaml", {**base_suite(bots), "labels": {GHOST: GHOST_PATTERN}, "tests": tests})
    return ["suite.yaml"]


def imported_source(source: Source, cases: list[Case], where: Path, bots: Bots) -> list[str]:
    """The cases as a JSONL log, imported into a suite that holds the provider (`evalspec import
    transcripts`), given their checks, and run again: the python bot replays the logged replies."""
    played_suite(PYTHON, cases, where, bots)
    write_jsonl(cases, where / "log.jsonl")
    target = yaml.safe_load((where / "suite.yaml").read_text(encoding="utf-8"))
    tests = {t["id"]: t for t in target.pop("tests")}
    target["defaults"] = {"assert": [{"not-contains": "【从不出现】", "scope": "each_turn"}]}  # not a hollow import
    dump(where / "imported.yaml", target)
    code, output = invoke("import", "transcripts", str(where / "log.jsonl"), "-o", str(where / "imported.yaml"))
    assert code == 0, output
    imported = yaml.safe_load((where / "imported.yaml").read_text(encoding="utf-8"))
    for test in imported["tests"]:
        test.pop("draft", None)  # made from conversations: drafts until a person reviews them
        test["assert"] = tests[test["id"]]["assert"]
    dump(where / "imported.yaml", imported)
    return ["imported.yaml"]


def model(client: str) -> Callable[[Bots], dict[str, Any]]:
    def provider(bots: Bots) -> dict[str, Any]:
        return {"model": "openai/bot-model", "client": client, "api_base": f"{bots.url}/model/v1",
                "api_key": SECRETS["api_key"], "params": {"client_secret": SECRETS["client_secret"]},
                "tools": [{"type": "function", "function": {"name": TOOL, "parameters": {
                    "type": "object", "properties": {"amount": {"type": "number"}}}}}],
                "tool_results": {TOOL: "已转账"}}
    return provider


PYTHON = Source("python", True, ("null", "missing"), frozenset({"state", "tools", "stateless", "no_reply_ok"}),
                played_suite, ("CONFORMANCE_PASSWORD",), lambda bots: {"python": "bot.py:respond"})
SOURCES = [
    PYTHON,
    Source("http", True, ("null", "missing", "empty_list"), frozenset({"state", "tools", "stateless", "no_reply_ok"}),
           played_suite, ("access_token", "X-Auth-Token", "client_secret"), lambda bots: {"http": {
               "url": f"{bots.url}/http/chat?access_token={SECRETS['access_token']}",
               "headers": {"X-Auth-Token": SECRETS["X-Auth-Token"]},
               "body": {"messages": "{{ messages }}", "auth": {"client_secret": SECRETS["client_secret"]}},
               "response": "reply", "tool_calls": "calls", "state": "state"}}),
    Source("model-lean", True, ("null", "missing"), frozenset({"tools", "no_reply_ok"}), played_suite,
           ("api_key", "client_secret"), model("lean")),
    Source("model-litellm", True, ("null", "missing"), frozenset({"tools", "no_reply_ok"}), played_suite,
           ("api_key", "client_secret"), model("litellm")),
    Source("rasa", True, ("empty_list", "no_text_parts"), frozenset({"state", "no_reply_ok"}), played_suite,
           ("token",), lambda bots: {"rasa": {"url": f"{bots.url}/rasa", "token": SECRETS["token"]}}),
    # a recorded log's no reply is an assistant message without content (in a CSV, an empty content cell); a
    # user message with no assistant message after it is no turn the bot answered (docs/en/recorded-conversations.md)
    Source("jsonl", False, ("null", "missing"), frozenset({"state", "tools", "stateless"}), jsonl_source),
    Source("csv", False, ("null",), frozenset(), csv_source),
    Source("inline", False, ("null",), frozenset({"state", "tools", "stateless", "no_reply_ok"}),
           inline_source),
    Source("imported", True, ("null", "missing"), frozenset({"state", "tools", "stateless"}), imported_source,
           ("CONFORMANCE_PASSWORD",)),
]


# -- hostile shapes -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    name: str
    cases: Callable[[Family, Source], list[Case]]  # raises Skip
    exit: Callable[[Source], int]
    subprocess: bool = False  # user code may end the process: run evalspec as a child process
    outputs: bool = False  # every report file too (--html, --junit, --md)

    def __repr__(self) -> str:
        return self.name


def case_id(shape: str, family: Family, *more: str) -> str:
    return "-".join([shape, family.name, *more])


def planted_cases(family: Family, source: Source) -> list[Case]:
    return [Case(case_id("planted", family), family, [(Say(), False), (planted(), False)], [family.check(None)],
                 Expect("failed", turn=2))]


def no_reply_cases(family: Family, source: Source) -> list[Case]:
    return [Case(case_id("silent", family, form), family, [(Say(), False), (Say(silent=form), False)],
                 [family.check(None)], Expect("error", error=NO_REPLY_ERROR)) for form in source.forms]


def no_reply_ok_cases(family: Family, source: Source) -> list[Case]:
    if "no_reply_ok" not in source.caps:
        raise Skip(f"{source.name}: a recorded log has no turn keys, so no `no_reply: ok`")
    return [Case(case_id("silent-ok", family), family, [(Say(silent=source.forms[0]), True), (planted(), False)],
                 [family.check(None)], Expect("failed", turn=2, silent_turn=1))]


def error_after_fail_cases(family: Family, source: Source) -> list[Case]:
    return [Case(case_id("fail-then-error", family), family, [(planted(), False), (family.undecidable(source), False)],
                 [family.check(None)], Expect("failed", turn=1, error=""))]


def all_skipped_cases(family: Family, source: Source) -> list[Case]:
    expect = Expect("refused") if source.played else Expect("skipped")
    return [Case(case_id("skipped", family), family, [(Say(), False), (planted(), False)], [family.check(GHOST)],
                 expect)]


def quoted_cases(family: Family, source: Source) -> list[Case]:
    if family.name != "judged":
        raise Skip("only a judge gives a verdict that can be quoted")
    return [Case(case_id("quoted", family), family, [(Say(), False), (Say(text=f"{PLANT} {INJECTED} {QUOTE}"), False)],
                 [family.check(None)], Expect("failed", turn=2)),
            Case(case_id("quoted-only", family), family,
                 [(Say(), False), (Say(text=f"{NORMAL} {INJECTED} {QUOTE_ONLY}"), False)],
                 [family.check(None)], Expect("error", error=""))]


def secret_cases(family: Family, source: Source) -> list[Case]:
    if not source.secrets:
        raise Skip(f"{source.name}: graded without calling anything, no configuration to leak")
    return [Case(case_id("secret", family), family, [(Say(), False), (planted(echo=True), False)],
                 [family.check(None)], Expect("failed", turn=2))]


def process_exit_cases(family: Family, source: Source) -> list[Case]:
    if family.ends is None:
        raise Skip("only user code (python, javascript) can end the process it runs in")
    return [Case(case_id("ends", family), family, [(Say(), False), (planted(), False)],
                 [TEXT.check(None), family.ends], Expect("failed", turn=2), evidence_of=TEXT)]


SHAPES = [
    Shape("planted", planted_cases, lambda s: EXIT["failed"]),
    Shape("no_reply", no_reply_cases, lambda s: EXIT["errors"]),
    Shape("no_reply_ok", no_reply_ok_cases, lambda s: EXIT["failed"]),
    Shape("error_after_fail", error_after_fail_cases, lambda s: EXIT["failed"]),
    Shape("all_skipped", all_skipped_cases, lambda s: EXIT["refused"] if s.played else EXIT["errors"]),
    Shape("quoted_verdict", quoted_cases, lambda s: EXIT["failed"]),
    Shape("secret", secret_cases, lambda s: EXIT["failed"], outputs=True),
    Shape("process_exit", process_exit_cases, lambda s: EXIT["failed"], subprocess=True),
]


def cases_of(shape: Shape, family: Family, source: Source) -> list[Case]:
    """The cases of one family in one cell, or Skip naming why the combination makes no sense."""
    if family.needs and family.needs not in source.caps:
        raise Skip(f"{source.name} reports no {family.needs}")
    return shape.cases(family, source)


# -- one run per source × shape -------------------------------------------------------------------------
@dataclass
class Cell:
    code: int
    output: str
    records: dict[str, dict[str, Any]]
    cases: list[Case]
    where: Path
    files: list[Path] = field(default_factory=list)


# `evalspec` with litellm imported first: the run's children are forked from it, so a child started again after
# user code ended the last one does not import litellm again (~4 s of CPU each; it starts no thread to lose)
WARM_LITELLM = "import litellm, runpy; runpy.run_module('evalspec', run_name='__main__', alter_sys=True)"


def evalspec_command(source: Source) -> list[str]:
    uses_litellm = source.provider is not None and "litellm" in source.name
    return ["-c", WARM_LITELLM] if uses_litellm else ["-m", "evalspec"]


def play(source: Source, shape: Shape, where: Path, bots: Bots) -> Cell:
    cases = []
    for family in FAMILIES:
        with contextlib.suppress(Skip):
            cases += cases_of(shape, family, source)
    where.mkdir(parents=True)
    if not cases:
        return Cell(0, "", {}, cases, where)
    with contextlib.chdir(where):
        args = source.write(source, cases, where, bots)
        out = ["-o", "out/run.json", "--no-cache"]
        if shape.outputs:
            out += ["--html", "out/report.html", "--junit", "out/junit.xml", "--md", "out/summary.md"]
        if shape.subprocess:
            proc = subprocess.run([sys.executable, *evalspec_command(source), "run", *args, *out], capture_output=True,
                                  text=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
            code, output = proc.returncode, proc.stdout + proc.stderr
        else:
            code, output = invoke("run", *args, *out)
    run_json = where / "out" / "run.json"
    data = json.loads(run_json.read_text(encoding="utf-8")) if run_json.is_file() else {"results": []}
    written = [p for p in where.rglob("*") if p.is_file() and (p.is_relative_to(where / "out")
                                                              or p.is_relative_to(where / ".evalspec"))]
    return Cell(code, output, {r["test_id"]: r for r in data["results"]}, cases, where, written)


def secret_forms(value: str) -> set[str]:
    """A secret as it may reappear: raw, URL-encoded, JSON-escaped (§26)."""
    return {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1]}
