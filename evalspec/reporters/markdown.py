"""A Markdown summary for PR comments and `$GITHUB_STEP_SUMMARY` (SPEC §9).

Text from the system under test is neutralised: HTML tags and `@mentions` cannot act in a comment.
The whole text stays under GitHub's comment limit; long lists are cut with a count of what was left out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from evalspec.reporters import tools
from evalspec.reporters.attacks import markdown_lines as attack_lines
from evalspec.reporters.judging import markdown_lines as judging_lines
from evalspec.reporters.vocabulary import (
    METRIC_COLUMNS,
    conversations_text,
    count_items,
    counts_text,
    ensure_current,
    failing,
    gate_line,
    judge_text,
    metric_cells,
    one_line,
    pass_rate_text,
    repeats_text,
    suite_gate_word,
)
from evalspec.results.findings import Excerpt, Finding, findings

MARKER = "<!-- evalspec-report -->"
LIMIT = 60_000
ICON = {0: "✅", 1: "❌", 3: "⚠️"}
MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")
SPECIAL = re.compile(r"([\\`*_\[\]|~#])")


def md(text: Any) -> str:
    """One line of text from a run, safe in Markdown and table cells: no tags, no mentions, no markup."""
    out = one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = SPECIAL.sub(r"\\\1", out)
    return MENTION.sub("@&#8203;", out)


def _excerpt(x: Excerpt) -> str:
    match = f"**{md(x.match)}**" if x.match.strip() else ""
    return f"{md(x.before)}{match}{md(x.after)}"


def finding_lines(f: Finding) -> list[str]:
    rule = f" · `{one_line(f.rule).replace('`', 'ˋ')}`" if f.rule else ""
    head = f"  - {f.where}{rule}" + (" · **critical**" if f.critical else "")
    lines = [head]
    if f.error:
        lines.append(f"    - error: {md(f.error)}")
    elif f.facts:
        lines += [f"    - {md(x.key)}: expected {md(x.expected)}, found {md(x.found) if x.found else '*nothing*'}"
                  for x in f.facts]
    elif f.reason:
        lines.append(f"    - {md(f.reason)}")
    lines += [f"    - reply, turn {x.turn}: {_excerpt(x)}" for x in f.excerpts]
    return lines


def run_link(env: Mapping[str, str]) -> str:
    """A link to the workflow run (where the `evalspec-report` artifact is), when run by GitHub Actions."""
    server, repo, run_id = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY"), env.get("GITHUB_RUN_ID")
    if not (server and repo and run_id):
        return ""
    url = f"{server.rstrip('/')}/{repo}/actions/runs/{run_id}"
    return f"[workflow run]({url}) · report artifact `evalspec-report` ([download]({url}#artifacts))"


def _failures(run: dict[str, Any]) -> list[list[str]]:
    blocks = []
    for v, recs in failing(run):
        head = (f"- {'**critical** ' if v['critical_failed'] else ''}{v['category']}: **{md(v['name'])}** "
                f"(`{one_line(v['test_id']).replace('`', 'ˋ')}` @ {md(v['provider'])}){repeats_text(v)}")
        lines = [head]
        for f in findings(recs[0]) if recs else []:
            lines += finding_lines(f)
        if recs:
            lines += [f"    - {md(line)}" for line in tools.failing_calls_text(recs[0])]
            lines += [f"    - {md(t)}" for t in [tools.teardown_text(recs[0])] if t]
        blocks.append(lines)
    return blocks


def render_markdown(run: dict[str, Any], env: Mapping[str, str] | None = None) -> str:
    run = ensure_current(run)
    env = os.environ if env is None else env
    gate, s = run["gate"], run["summary"]
    out = [MARKER, f"## {ICON.get(gate['exit_code'], '⚠️')} evalspec: {gate_line(gate)}", ""]
    out.append(counts_text(s))
    out.append(f"{conversations_text(s['records'])} · {s['calls']} calls ({s['cached_calls']} cached) · "
               f"{s['tokens']} tokens · ${s['cost']:.4f}" + (f" · {judge_text(s)}" if s.get("judge_calls") else ""))
    if run.get("baseline"):
        from evalspec.diff.render import markdown_lines

        out += ["", *markdown_lines(run["baseline"])]  # newly failing first: right under the headline
    link = run_link(env)
    if link:
        out += ["", link]
    if gate["reasons"]:
        out += ["", *[f"- {md(r)}" for r in gate["reasons"]]]
    labels = [label for label, _ in count_items(s)]
    out += ["", "| suite | " + " | ".join(labels) + " | pass rate | gate |",
            "|---|" + "---:|" * (len(labels) + 1) + "---|"]
    for g in gate["suites"]:
        word = suite_gate_word(g)
        out.append(f"| {md(g['suite'])} | " + " | ".join(str(n) for _, n in count_items(g["counts"]))
                   + f" | {pass_rate_text(g['pass_rate'])} | {word if word == 'ok' else f'**{word}**'} |")
    tail: list[str] = []
    if run["slas"]:
        tail += ["", "### SLAs", ""]
        tail += [f"- {'✅' if x['status'] == 'met' else '❌' if x['status'] == 'missed' else '⚠️'} "
                 f"{md(x['id'])}: **{x['status']}** — {md(x['text'])}" for x in run["slas"]]
    if s.get("metrics"):
        tail += ["", "### Metrics", "", "| " + " | ".join(METRIC_COLUMNS) + " |", "|---|---|---|---:|---:|"]
        tail += ["| " + " | ".join(md(cell) for cell in metric_cells(m)) + " |" for m in s["metrics"]]
    tail += attack_lines(run, md)
    if torn := tools.failed_teardowns(run):
        tail += ["", "### Teardowns that failed", ""]
        tail += [f"- **{md(r['name'])}** (`{one_line(r['test_id']).replace('`', 'ˋ')}` @ {md(r['provider'])}): "
                 f"{md(text)}" for r, text in torn]
    judging = judging_lines(run, md)
    tail += ['', *judging] if judging else []
    blocks = _failures(run)
    if blocks:
        out += ["", "### Failures", ""]
        used = sum(len(line) + 1 for line in out + tail)
        for i, block in enumerate(blocks):
            size = sum(len(line) + 1 for line in block)
            if used + size > LIMIT - 200:
                out.append(f"- … and {len(blocks) - i} more failing tests (see the HTML report)")
                break
            out += block
            used += size
    out += tail
    return "\n".join(out) + "\n"
