"""Write the generated pages of the manual: the assertion reference (from the assertion registry) and
the CLI reference (from the click commands).

    python docs/generate.py           # rewrite docs/en/reference/assertions.md and cli.md
    python docs/generate.py --check   # exit 1 when a committed page differs from the generated one

tests/test_docs.py runs the check, as tests/config/test_schema.py pins schema/suite.schema.json.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

HERE = Path(__file__).resolve().parent
ASSERTIONS_PAGE = HERE / "en" / "reference" / "assertions.md"
CLI_PAGE = HERE / "en" / "reference" / "cli.md"
WIDTH = 100  # the help text is wrapped at this width whatever the terminal

# One example per type: an item of an `assert:` list, valid in the suite that tests/test_docs.py wraps
# around it (a demo provider with tools, a judge, an embedder, turns labelled no_signal,
# purchase_signal and accepted, and checks.py beside the suite). A type without one fails that test.
EXAMPLES: dict[str, str] = {
    "asks-clarification": "- asks-clarification:\n  mode: heuristic      # question marks and phrases, no judge",
    "at-most": "- at-most: {pattern: 预约|试驾, count: 1}",
    "coherence": "- coherence:",
    "buttons": "- buttons: [周六, 周日]      # the reply offers these buttons (exact: true: only these, in order)",
    "contains": "- contains: 分期",
    "contains-all": "- contains-all: [首付, 月供]",
    "contains-any": "- contains-any: [到店, 预约, 试驾]",
    "contains-json": "- contains-json: {type: object, required: [price]}",
    "conversation-relevance": "- conversation-relevance:\n  window: 3",
    "cost": "- cost: 0.002\n  scope: conversation   # the whole conversation's cost, in USD",
    "efficiency": "- efficiency: {min: 0.8}",
    "equals": "- equals: 好的",
    "finish-reason": "- finish-reason: stop       # not cut at the token limit (length) nor filtered",
    "follows-correction": "- follows-correction:\n  levels: default",
    "icontains": "- icontains: vip",
    "is-json": "- is-json:",
    "is-sql": "- is-sql: {dialect: postgres, allowed_tables: {select: [orders, order_items]}}   # tables it may read (no writes to them)",
    "javascript": ("- javascript: output.includes('您好') && output.length < 200   # one line: an expression\n"
                   "- javascript: file://checks.js:polite   # fn(output, context), relative to the suite\n"
                   "  config: {min_length: 10}              # context.config"),
    "jmespath": "- jmespath: {expr: price, matches: '^\\d+'}",
    "knowledge-retention": "- knowledge-retention:",
    "latency": "- latency: 3000\n  scope: each_turn      # every reply within 3 s",
    "levenshtein": "- levenshtein: {value: 您好，请问有什么可以帮您？, max: 5}",
    "llm-rubric": "- llm-rubric: 助手语气自然，回答了分期问题\n  threshold: 0.7",
    "memory-recall": "- memory-recall: {name: 张三, city: [北京, Beijing]}\n  partial_credit: 0.5",
    "not-after": "- not-after: {pattern: 优惠|首付, after: accepted}",
    "not-before": "- not-before: {pattern: 到店|预约|试驾, turn: purchase_signal}",
    "not-tool-called": "- not-tool-called: [send_coupon, book_test_drive]",
    "pii": ("- pii: email          # the reply gives an e-mail address\n"
            "- not-pii: [cn_mobile, cn_id, bank_card, email]   # the red line; also １３９…, 139 1234 5678, +86 139-…\n"
            "  severity: critical"),
    "python": "- python: checks.py:polite     # fn(output, context), relative to the suite\n  threshold: 0.8",
    "refers-to": "- refers-to: {expected: [瑶光], not: [追风]}",
    "regex": "- regex: '\\d+(\\.\\d+)?万'",
    "rejects-false-premise": "- rejects-false-premise:",
    "role-adherence": "- role-adherence: 汽车销售顾问",
    "select-best": "- select-best: 哪个回答最清楚地说明了首付和月供   # the best candidate passes, the others fail",
    "similar": "- similar: 欢迎周六到店试驾\n  threshold: 0.75",
    "starts-with": "- starts-with: 您好",
    "said-vs-did": "- said-vs-did: {claims: {book_visit: 已为您预约|预约成功}}   # or: said-vs-did: judge",
    "state": "- state: {path: active_flow, equals: book_test_drive}   # or a JMESPath expression: truthy passes",
    "stays-on-topic": "- stays-on-topic:\n  levels: default",
    "tokens": "- tokens: 400",
    "tool-args-valid": "- tool-args-valid:",
    "tool-called": "- tool-called: {name: lookup_stock, args: {model: 瑶光, city: 're:北京|上海'}, count: {max: 1}}",
    "tool-sequence": "- tool-sequence: {calls: [lookup_stock, book_test_drive], mode: strict}",
    "world": "- world: {path: \"visits[?user_id=='u1'].date | [0]\", equals: '2026-12-05'}   # over the final world",
    "world-matches": "- world-matches: {visits: []}   # or a JSON file: the final world equals it",
    "world-unchanged": "- world-unchanged: [orders, inventory]",
    "topic-coherence": "- topic-coherence: {min_adjacent: 0.3, max_drift: 0.9}",
    "trajectory:goal-success": "- trajectory:goal-success: 用户拿到了首付金额并约好了到店时间",
    "trajectory:checkpoints": "- trajectory:checkpoints: true\n  severity: critical",
    "trajectory:milestones": "- trajectory:milestones: true\n  severity: critical",
    "turn-count": "- turn-count: {max: 6}",
    "within": "- within: {pattern: 到店|预约|试驾, after: purchase_signal, turns: 1}",
    "word-count": "- word-count: {min: 5, max: 200}",
}


COMPARED = {"select-best"}  # decided across a test's records: one judge call compares them, never negated


def _words(schema: dict[str, Any]) -> str:
    from evalspec.config.messages import describe_kinds

    if "const" in schema:
        return repr(schema["const"])
    words = describe_kinds(schema)
    return "anything" if words == "something else" else words


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _field_rows(params: Any) -> tuple[list[str], list[str], str]:
    """(value rows, option rows, what the value is) for a type declared with a parameter dataclass."""
    from evalspec.extend.params import UNSET, param_fields

    whole = getattr(params, "value_field", None)
    short = getattr(params, "short_field", None)
    value_rows, option_rows = [], []
    form = ""
    for f in param_fields(params):
        schema = f.schema(whole=f.name == whole)
        if f.required:
            default = "required"
        elif f.default is None or f.default is UNSET:
            default = "—"
        else:
            default = f"`{f.default!r}`" if not isinstance(f.default, bool) else f"`{str(f.default).lower()}`"
        description = schema.get("description", "")
        row = f"| `{f.key}` | {_cell(_words(schema))} | {default} | {_cell(description)} |"
        if f.name == whole:
            form = f"the value is `{f.key}`: {_words(schema)}" + ("" if f.required else " (may be left empty)") \
                + (f" — {description}" if description else "")
        elif f.option is not None and not f.option.in_value:
            option_rows.append(row)
        else:
            value_rows.append(row)
    if short is not None:
        form = f"the value is a mapping of the keys below, or just `{short}`"
    elif not form:
        form = "the value is a mapping of the keys below"
    return value_rows, option_rows, form


def assertion_entry(name: str) -> str:
    from evalspec.extend.registry import REGISTRY

    t = REGISTRY[name]
    reads = "one reply at a time (not on `conversation` scope)" if t.one_reply \
        else "one reply (all replies joined on `conversation` scope)" if t.kind == "reply" \
        else "the whole transcript (under a turn: the transcript up to that turn)"
    if name in COMPARED:
        reads = ("the final reply of each of the test's candidates, its providers × matrix instances of one "
                 "repeat (on `conversation` scope: each transcript); at test level only")
    facts = [f"reads {reads}", f"default scope `{t.default_scope}`"]
    if t.default_threshold is not None:
        facts.append(f"default threshold {t.default_threshold:g}")
    if t.needs:
        facts.append(f"needs `{t.needs}:` in the suite")
    if not name.startswith("not-") and name not in COMPARED:
        facts.append(f"negate: `not-{name}`")
    lines = [f"## `{name}`", "", t.doc, "", "- " + "\n- ".join(facts)]
    if t.params is not None:
        value_rows, option_rows, form = _field_rows(t.params)
        lines += [f"- {form}"]
        head = ["", "| key | takes | default | notes |", "|---|---|---|---|"]
        if value_rows:
            lines += ["", "Value keys:", *head, *value_rows]
        if option_rows:
            lines += ["", "Options (sibling keys of the item):", *head, *option_rows]
    else:
        lines += [f"- value: {_words(t.value_schema)}"]
        for key, schema in t.options.items():
            lines.append(f"- option `{key}`: {_words(schema)}")
    example = EXAMPLES.get(name)
    if example is not None:
        lines += ["", "```yaml", example, "```"]
    return "\n".join(lines) + "\n"


def assertions_page() -> str:
    import evalspec  # noqa: F401  (registers the built-in checks)
    from evalspec.extend.registry import COMMON_KEYS, all_type_names

    common = ", ".join(f"`{k}`" for k in COMMON_KEYS if k not in ("type", "value"))
    head = [
        "# Assertion reference",
        "",
        "<!-- generated by `python docs/generate.py` from the assertion registry: do not edit by hand -->",
        "",
        "Every assertion is an item of an `assert:` list, in the short form `- TYPE: VALUE` or the full form",
        "`- type: TYPE` + `value: VALUE`. Besides its own keys, every item takes the common keys " + common + ".",
        "Every type can be negated with a `not-` prefix. Scopes, scoring and severities: "
        "[the suite format](../suite-format.md#assertions). `evalspec list assertions` prints the same list.",
        "",
        "| type | reads | needs |",
        "|---|---|---|",
    ]
    from evalspec.extend.registry import REGISTRY

    names = all_type_names()
    for name in names:
        t = REGISTRY[name]
        anchor = name.replace(":", "")
        kind = "candidates" if name in COMPARED else t.kind
        head.append(f"| [`{name}`](#{anchor}) | {kind} | {t.needs or ''} |")
    return "\n".join(head) + "\n\n" + "\n".join(assertion_entry(n) for n in names)


def commands(group: click.Group | None = None, parent: click.Context | None = None) -> list[tuple[str, click.Context]]:
    """Every command and sub-command with its context, in the order `--help` lists them."""
    from evalspec.app.cli.main import main

    group = group or main
    ctx = parent or click.Context(main, info_name="evalspec", terminal_width=WIDTH, max_content_width=WIDTH,
                                  **main.context_settings)
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        sub = click.Context(cmd, info_name=name, parent=ctx, **cmd.context_settings)
        out.append((sub.command_path, sub))
        if isinstance(cmd, click.Group):
            out += commands(cmd, sub)
    return out


def cli_page() -> str:
    lines = [
        "# CLI reference",
        "",
        "<!-- generated by `python docs/generate.py` from the click commands: do not edit by hand -->",
        "",
        "Each section is the command's `--help`. Exit codes: [reports and the gate](../reports-and-gate.md).",
        "",
    ]
    for path, ctx in commands():
        help_text = ctx.command.get_help(ctx)
        lines += [f"## `{path}`", "", "```text", help_text, "```", ""]
    return "\n".join(lines)


PAGES = {ASSERTIONS_PAGE: assertions_page, CLI_PAGE: cli_page}


def main(argv: list[str]) -> int:
    stale = []
    for path, build in PAGES.items():
        text = build()
        if "--check" in argv:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{path.relative_to(HERE.parent)} is out of date: run python docs/generate.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
