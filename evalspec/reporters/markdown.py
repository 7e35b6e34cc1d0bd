"""A Markdown summary for PR comments and `$GITHUB_STEP_SUMMARY` (docs/en/reports-and-gate.md#outputs).

Text from the system under test is neutralised: HTML tags and `@mentions` cannot act in a comment.
The whole text stays under GitHub's comment limit; long lists are cut with a count of what was left out.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping

from evalspec.reporters import state, tools, world
from evalspec.reporters.attacks import markdown_lines as attack_lines
from evalspec.reporters.catalogue import choose_lang, reason_text, speaking, word, words
from evalspec.reporters.coverage import markdown_lines as coverage_lines
from evalspec.reporters.judging import markdown_lines as judging_lines
from evalspec.reporters.spread import markdown_lines as spread_lines
from evalspec.reporters.vocabulary import (
    MAX_FAILURES,
    at_turn_text,
    blocking_listed,
    conversations_text,
    count_keys,
    counts_text,
    ensure_current,
    failing_count,
    failing_stream,
    gate_line,
    judge_text,
    md,
    metric_cells,
    metric_columns,
    one_line,
    pass_rate_text,
    repeats_text,
    shown_facts,
    state_changes,
    suite_gate_word,
    where_text,
)
from evalspec.results.findings import Excerpt, Finding, findings
from evalspec.results.rundata import RunData

MARKER = "<!-- evalspec-report -->"
LIMIT = 60_000
ICON = {0: "✅", 1: "❌", 3: "⚠️"}
def _excerpt(x: Excerpt) -> str:
    match = f"**{md(x.match)}**" if x.match.strip() else ""
    return f"{md(x.before)}{match}{md(x.after)}"


def finding_lines(f: Finding) -> list[str]:
    rule = f" · `{one_line(f.rule).replace('`', 'ˋ')}`" if f.rule else ""
    head = f"  - {where_text(f.where)}{rule}" + (f" · **{words('critical')}**" if f.critical else "")
    lines = [head]
    if f.description:
        lines.append(f"    - *{words('why')} {md(f.description)}*")
    if f.error:
        lines.append(f"    - {words('error_colon')} {md(f.error)}")
    elif f.facts:
        lines += ["    - " + words("expected_found", key=md(x.key), expected=md(x.expected),
                                   found=md(x.found) if x.found else f"*{words('nothing')}*") for x in shown_facts(f)]
    elif f.reason:
        lines.append(f"    - {md(reason_text(f.reason, f.reason_zh))}")
    lines += [f"    - {words('reply_turn', turn=x.turn)} {_excerpt(x)}" for x in f.excerpts]
    return lines


def run_link(env: Mapping[str, str]) -> str:
    """A link to the workflow run (where the `evalspec-report` artifact is), when run by GitHub Actions."""
    server, repo, run_id = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY"), env.get("GITHUB_RUN_ID")
    if not (server and repo and run_id):
        return ""
    url = f"{server.rstrip('/')}/{repo}/actions/runs/{run_id}"
    return words("workflow_run", url=url)


def _failures(run: RunData, limit: int) -> list[list[str]]:
    blocks = []
    for v, recs in failing_stream(run, limit):
        head = (f"- {'**' + words('critical') + '** ' if v['critical_failed'] else ''}{words(v['category'])}: **{md(v['name'])}** "
                f"(`{one_line(v['test_id']).replace('`', 'ˋ')}` @ {md(v['provider'])}){repeats_text(v)}")
        lines = [head]
        for f in findings(recs[0]) if recs else []:
            lines += finding_lines(f)
        if recs:
            lines += [f"    - {md(line)}" for line in tools.failing_calls_text(recs[0])]
            lines += [f"    - {md(line)}" for line in state.failing_state_text(recs[0])]
            lines += [f"    - {md(line)}" for line in world.failing_world_text(recs[0])]
            lines += [f"    - {md(t)}" for t in [tools.teardown_text(recs[0])] if t]
        lines += [f"    - {md(at_turn_text(r['at_turn']))}" for r in recs if isinstance(r.get("at_turn"), dict)]
        blocks.append(lines)
    return blocks


def render_markdown(run: RunData, env: Mapping[str, str] | None = None, lang: str | None = None,
                    max_failures: int = MAX_FAILURES) -> str:
    """The summary in `lang` (None: the run's own language, docs/en/reports-and-gate.md#language), listing at most `max_failures`
    failing verdicts and how many more there are (docs/en/scale-and-ray.md#memory)."""
    run = ensure_current(run)
    with speaking(choose_lang(run, lang)):
        return _render(run, os.environ if env is None else env, max_failures)


def _blocking_lines(run: RunData, limit: int) -> list[str]:
    """What blocks the release, right under the headline (docs/en/reports-and-gate.md#language)."""
    items = blocking_listed(run, limit)
    return ["", f"### ⛔ {words('blocks_release')}", "", *[f"- {md(item)}" for item in items]] if items else []


def _state_lines(run: RunData, limit: int) -> list[str]:
    """Tests that changed state, by name: xpassed (remove xfail?), drafts that fail, new errors; at most
    `limit` of them and how many more (docs/en/scale-and-ray.md#memory)."""
    changes = state_changes(run)
    shown = list(itertools.islice(changes, limit))
    if not shown:
        return []
    out = ["", f"### {words('state_changes')}", ""]
    out += [f"- {words(key)}: **{md(v['name'])}** (`{one_line(v['test_id']).replace('`', 'ˋ')}` @ {md(v['provider'])})"
            for key, v in shown]
    more = sum(1 for _ in changes)
    return [*out, f"- {words('more_blocking', n=more)}"] if more else out


def _render(run: RunData, env: Mapping[str, str], max_failures: int) -> str:
    gate, s = run["gate"], run["summary"]
    out = [MARKER, f"## {ICON.get(gate['exit_code'], '⚠️')} evalspec: {gate_line(gate)}"]
    out += _blocking_lines(run, max_failures)
    out += ["", counts_text(s)]
    out.append(words("totals_md", conversations=conversations_text(s["records"]), calls=s["calls"],
                     cached=s["cached_calls"], tokens=s["tokens"], cost=f"{s['cost']:.4f}")
               + (f" · {judge_text(s)}" if s.get("judge_calls") else ""))
    out += _state_lines(run, max_failures)
    if run.get("baseline"):
        from evalspec.reporters.diff import markdown_lines
        from evalspec.reporters.diffwords import spoken

        out += ["", *markdown_lines(spoken(run["baseline"], run))]  # newly failing first: right under the headline
    link = run_link(env)
    if link:
        out += ["", link]
    labels = [words(key) for key, _ in count_keys(s)]
    out += ["", f"| {words('suite')} | " + " | ".join(labels) + f" | {words('pass_rate')} | {words('gate')} |",
            "|---|" + "---:|" * (len(labels) + 1) + "---|"]
    for g in gate["suites"]:
        verdict = suite_gate_word(g)
        shown = words(verdict)
        out.append(f"| {md(g['suite'])} | " + " | ".join(str(n) for _, n in count_keys(g["counts"]))
                   + f" | {pass_rate_text(g['pass_rate'], g)} | {shown if verdict == 'ok' else f'**{shown}**'} |")
    tail: list[str] = []
    if run["slas"]:
        tail += ["", f"### {words('slas')}", ""]
        tail += [f"- {'✅' if x['status'] == 'met' else '❌' if x['status'] == 'missed' else '⚠️'} "
                 f"{md(x['id'])}: **{word(x['status'])}** — {md(x['text'])}" for x in run["slas"]]
    if s.get("metrics"):
        tail += ["", f"### {words('metrics')}", "", "| " + " | ".join(metric_columns()) + " |", "|---|---|---|---:|---:|"]
        tail += ["| " + " | ".join(md(cell) for cell in metric_cells(m)) + " |" for m in s["metrics"]]
    tail += attack_lines(run, md)
    tail += spread_lines(run, md)
    tail += coverage_lines(run)
    if torn := tools.failed_teardowns(run):
        tail += ["", f"### {words('teardowns_failed')}", ""]
        tail += [f"- **{md(r['name'])}** (`{one_line(r['test_id']).replace('`', 'ˋ')}` @ {md(r['provider'])}): "
                 f"{md(text)}" for r, text in torn]
    judging = judging_lines(run, md)
    tail += ['', *judging] if judging else []
    blocks = _failures(run, max_failures)
    total = failing_count(run)
    if total:
        out += ["", f"### {words('failures')}", ""]
        used = sum(len(line) + 1 for line in out + tail)
        for i, block in enumerate(blocks):
            size = sum(len(line) + 1 for line in block)
            if used + size > LIMIT - 200:
                out.append("- " + words("more_failing", n=total - i))
                break
            out += block
            used += size
        else:
            if total > len(blocks):
                out.append("- " + words("more_failing", n=total - len(blocks)))
    out += tail
    return "\n".join(out) + "\n"
