"""One self-contained HTML file: summary, filters, transcripts with per-turn verdicts, decay curves as SVG.

Everything from the system under test is escaped by jinja2's autoescape: a reply containing
`<script>` is shown, never run. No network: CSS and the few lines of JS are inline.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypedDict

from jinja2 import Environment
from markupsafe import Markup, escape

from evalspec.core.text import strip_controls
from evalspec.extend.transcript import Message, is_reply, is_system_message
from evalspec.reporters import state, tools, world
from evalspec.reporters.attacks import html_section as attacks_html
from evalspec.reporters.catalogue import choose_lang, reason_text, speaking, word, words
from evalspec.reporters.coverage import html_section as coverage_html
from evalspec.reporters.curves_html import curves_section, pass_k_section
from evalspec.reporters.judging import attribution_word
from evalspec.reporters.judging import html_section as judging_html
from evalspec.reporters.spread import html_section as spread_html
from evalspec.reporters.verdict_records import verdict_finder
from evalspec.reporters.vocabulary import (
    COUNT_LABELS,
    at_turn_text,
    blocking_listed,
    count_keys,
    ensure_current,
    failing_at,
    failing_count,
    gate_line,
    local_time,
    metric_cells,
    metric_columns,
    milestones_text,
    pass_rate_text,
    repeats_text,
    score_text,
    shown_facts,
    suite_gate_word,
    where_text,
)
from evalspec.results.attribution import CLASSES
from evalspec.results.findings import Excerpt, Finding, explain, findings, rule_text
from evalspec.results.rundata import Gate, Record, RunData, RunVerdict
from evalspec.results.stream import keys_of
from evalspec.results.verdict import CATEGORIES

TEMPLATE = """<!doctype html>
<html lang="{{ t('html_lang') }}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ t('report_title') }} {{ run.run_id }}</title>
<style>
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"PingFang SC","Noto Sans CJK SC",sans-serif;margin:0;background:#f6f7f9;color:#1f2937;overflow-wrap:break-word}
header{background:#111827;color:#fff;padding:16px 24px}header h1{margin:0;font-size:20px}
main{padding:16px 24px;max-width:1200px}.cards{display:flex;gap:10px;flex-wrap:wrap}
.card{background:#fff;border-radius:8px;padding:10px 14px;box-shadow:0 1px 2px #0002;min-width:96px;flex:0 1 auto}
.card b{display:block;font-size:22px}.passed{color:#15803d}.failed{color:#b91c1c}.error{color:#b45309}
.xfailed{color:#7e22ce}.xpassed{color:#0e7490}.skipped,.drafts{color:#6b7280}.measured{color:#6b7280}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;background:#fff;width:100%;margin:12px 0}td,th{padding:6px 8px;border-bottom:1px solid #e5e7eb;text-align:left;font-size:14px;overflow-wrap:normal}
td.n,th.n{text-align:right}
.filters{margin:16px 0;display:flex;gap:8px;flex-wrap:wrap;align-items:center}select{padding:4px;max-width:100%}
details.test{background:#fff;border-radius:8px;margin:8px 0;box-shadow:0 1px 2px #0002}
details.test summary{padding:10px 14px;cursor:pointer}.chat{padding:8px 16px 16px}
.msg{max-width:75%;padding:8px 12px;border-radius:12px;margin:6px 0;white-space:pre-wrap;word-break:break-word}
.user{background:#e0e7ff;margin-left:auto}.assistant{background:#f3f4f6}.injected{border:1px dashed #9ca3af}
.meta{font-size:12px;color:#6b7280}.verdict{font-size:13px;margin:2px 0 2px 12px}.gate{font-weight:bold}
.desc{margin:4px 0 8px;color:#374151}
.failure{background:#fff;border-left:4px solid #b91c1c;border-radius:6px;padding:8px 12px;margin:8px 0;box-shadow:0 1px 2px #0002}
.failure.error{border-left-color:#b45309}.failure ul{margin:4px 0;padding-left:18px}
.rule{font-family:ui-monospace,monospace;font-size:13px;background:#f3f4f6;padding:0 4px;border-radius:4px}
.critical{background:#b91c1c;color:#fff;border-radius:4px;padding:0 5px;font-size:12px;font-weight:bold}
.excerpt{white-space:pre-wrap;background:#f9fafb;border-radius:6px;padding:4px 8px;margin:4px 0}
mark{background:#fde68a;color:inherit;padding:0 1px}
.curves svg{max-width:100%;height:auto;background:#fff;border-radius:8px;box-shadow:0 1px 2px #0002}
h2{font-size:18px;margin:20px 0 8px}
@media (max-width:600px){main{padding:10px}header{padding:12px}.msg{max-width:94%}.card{flex:1 1 80px;padding:8px}
.card b{font-size:18px}td,th{padding:4px 5px;font-size:12px}.chat{padding:6px 8px 10px}
table.suites,table.stack,#baseline table{display:block;background:none}table.suites thead,table.stack thead,#baseline table thead{display:none}
table.suites tbody,table.stack tbody,#baseline table tbody{display:block}
table.suites tr,table.stack tr,#baseline table tr{display:block;background:#fff;border-radius:6px;margin:0 0 8px;padding:4px 0;box-shadow:0 1px 2px #0002}
table.suites td,table.stack td,#baseline table td{display:flex;justify-content:space-between;gap:12px;text-align:right;border:0;padding:2px 10px;overflow-wrap:anywhere;white-space:normal!important}
table.suites td::before,table.stack td::before,#baseline table td::before{content:attr(data-label);color:#6b7280;text-align:left;flex:0 0 auto}}
.blocks{background:#fef2f2;border:1px solid #fecaca;border-radius:8px;padding:4px 14px;margin:8px 0}.blocks h2{color:#b91c1c;margin:8px 0 4px}
.why{font-style:italic}
{{ tool_css }}{{ state_css }}{{ world_css }}
</style></head><body>
<header><h1>{{ t('report_title') }}</h1><div class="meta" style="color:#d1d5db">{{ t('run') }} {{ run.run_id }} · {{ local_time(run.started_at) }} · evalspec {{ run.evalspec_version }}</div></header>
<main>
<p class="gate {{ 'passed' if run.gate.exit_code == 0 else 'failed' }}">{{ gate_text }}</p>
{% if blocks %}<section id="blocks" class="blocks"><h2>{{ t('blocks_release') }}</h2><ul>{% for r in blocks %}<li>{{ r }}</li>{% endfor %}</ul></section>{% endif %}
{% for part in baseline_section %}{{ part }}{% endfor %}
<div class="cards" id="counts">{% for key, n in counts %}<div class="card" data-count="{{ labels[key] }}"><b class="{{ key if key != 'slas_missed' else ('failed' if n else 'passed') }}">{{ n }}</b>{{ t(key) }}</div>{% endfor %}
<div class="card"><b>{{ run.summary.calls }}</b>{{ t('calls_cached', n=run.summary.cached_calls) }}</div>
<div class="card"><b>{{ run.summary.tokens }}</b>{{ t('tokens') }}</div><div class="card"><b>${{ '%.4f' % run.summary.cost }}</b>{{ t('cost') }}</div></div>
<div class="scroll"><table class="suites"><thead><tr><th>{{ t('suite') }}</th>{% for key, _ in counts %}<th class="n">{{ t(key) }}</th>{% endfor %}<th class="n">{{ t('pass_rate') }}</th><th>{{ t('gate') }}</th></tr></thead>
{% for g in run.gate.suites %}<tr><td data-label="{{ t('suite') }}">{{ g.suite }}</td>{% for key, n in count_keys(g.counts) %}<td class="n" data-label="{{ t(key) }}">{{ n }}</td>{% endfor %}<td class="n" data-label="{{ t('pass_rate') }}">{{ pass_rate(g.pass_rate, g) }}</td><td data-label="{{ t('gate') }}" class="{{ 'passed' if suite_gate_word(g) == 'ok' else 'failed' }}">{{ t(suite_gate_word(g)) }}</td></tr>{% endfor %}</table></div>
{% if failures %}<h2 id="failures">{{ t('failures_first') }}</h2>
{% for f in failures %}<div class="failure {{ f.v.category }}"><b class="{{ f.v.category }}">{{ t(f.v.category) }}</b>{% if f.v.critical_failed %} <span class="critical">{{ t('critical') }}</span>{% endif %} <b>{{ f.v.name }}</b> <span class="meta">{{ f.v.test_id }} @ {{ f.v.provider }} · {{ f.v.suite }}{{ f.repeats }}</span> <a href="#{{ f.anchor }}" class="meta">{{ t('conversation_link') }}</a>
{% if f.description %}<div class="desc">{{ f.description }}</div>{% endif %}
<ul>{% for x in f.findings %}<li>{{ finding_html(x) }}</li>{% endfor %}</ul>{% for line in f.at_turn %}<div class="meta at-turn">{{ line }}</div>{% endfor %}</div>{% endfor %}{% endif %}
{{ attacks_section }}{{ spread_section }}{{ judging_section }}{{ coverage_section }}
{% if run.slas %}<h2>{{ t('slas') }}</h2><div class="scroll"><table class="stack"><thead><tr><th>SLA</th><th>{{ t('verdict') }}</th><th>{{ t('measured_vs_target') }}</th></tr></thead>
{% for x in run.slas %}<tr data-sla="{{ x.id }}"><td data-label="SLA">{{ x.id }}</td><td data-label="{{ t('verdict') }}" class="{{ 'passed' if x.status == 'met' else 'failed' if x.status == 'missed' else 'error' }}">{{ w(x.status) }}</td><td data-label="{{ t('measured_vs_target') }}">{{ x.text }}</td></tr>{% endfor %}</table></div>{% endif %}
{% if run.summary.metrics %}<h2>{{ t('metrics') }}</h2><div class="scroll"><table class="stack"><thead><tr>{% for col in metric_columns %}<th{% if loop.index > 3 %} class="n"{% endif %}>{{ col }}</th>{% endfor %}</tr></thead>
{% for m in run.summary.metrics %}<tr>{% for cell in metric_cells(m) %}<td data-label="{{ metric_columns[loop.index0] }}"{% if loop.index > 3 %} class="n"{% endif %}>{{ cell }}</td>{% endfor %}</tr>{% endfor %}</table></div>{% endif %}
<div class="scroll">{{ curves_section }}{{ pass_k_section }}</div>
<h2>{{ t('conversations') }}</h2>
<div class="filters">{{ t('status') }} <select id="f-status"><option value="">{{ t('all') }}</option>{% for s in statuses %}<option value="{{ s }}">{{ t(s) }}</option>{% endfor %}</select>
{{ t('tag') }} <select id="f-tag"><option value="">{{ t('all') }}</option>{% for x in tags %}<option>{{ x }}</option>{% endfor %}</select>
{{ t('provider') }} <select id="f-provider"><option value="">{{ t('all') }}</option>{% for p in providers %}<option>{{ p }}</option>{% endfor %}</select>
{{ t('attribution') }} <select id="f-attribution"><option value="">{{ t('all') }}</option>{% for a in attributions %}<option value="{{ a }}">{{ attribution_word(a) }}</option>{% endfor %}</select>
<span class="meta">{{ shown_of }}</span></div>
{% for x in tests %}{% set v = x.v %}<details class="test" id="{{ x.anchor }}" data-status="{{ v.category }}" data-provider="{{ v.provider }}" data-tags="|{{ x.tags|join('|') }}|" data-attribution="|{{ x.attributions|join('|') }}|" {% if v.category in ('failed', 'error') %}open{% endif %}>
<summary><b class="{{ v.category }}">{{ t(v.category) }}</b> {{ v.name }} <span class="meta">{{ v.test_id }} @ {{ v.provider }}{% if x.score is not none %} · {{ t('score') }} {{ x.score }}{% endif %}{{ x.repeats }} · {{ v.suite }}{% if x.xfail %} · {{ t('xfail_reason', reason=x.xfail) }}{% endif %}{% if v.measured %} · {{ t('curve_point_note') }}{% endif %}</span></summary>
<div class="chat">{% if x.description %}<p class="desc">{{ x.description }}</p>{% endif %}{% if x.summarised %}<p class="meta summarised">{{ t('summarised') }}</p>{% endif %}
{% for r in x.records %}{% if x.records|length > 1 %}{% set rec_status = 'measured' if v.measured and r.status != 'error' else r.status %}<p class="meta">{{ t('repeat') }} {{ r.repeat }} · <b class="{{ rec_status }}">{{ w(rec_status) }}</b></p>{% endif %}
{% if r.error %}<p class="error">{{ t('error_colon') }} {{ r.error }}</p>{% endif %}{{ teardown_note(r) }}{% if r.at_turn %}<p class="meta at-turn">{{ at_turn(r.at_turn) }}</p>{% endif %}{% if r.milestones %}<p class="meta milestones">{{ milestones_line(r.milestones) }}</p>{% endif %}
{% for m in r.transcript if not tool_hidden(m) %}<div class="msg {{ m.role }}{% if m.injected %} injected{% endif %}"><div class="meta">{{ w(m.role) }}{% if m.turn %} · {{ t('turn_n', n=m.turn) }}{% endif %}{% if m.filler %} · {{ t('filler') }}{% endif %}{% if m.label %} · {{ m.label }}{% endif %}{% if m.injected %} · {{ t('golden_history') }}{% endif %}{% if m.intermediate %} · {{ t('tool_round') }}{% endif %}{% if m.latency_ms %} · {{ '%.0f' % m.latency_ms }} ms{% endif %}{% if m.cached %} · {{ t('cached') }}{% endif %}{% if m.click is defined %} · <span class="clicked">{{ clicked(m) }}</span>{% endif %}</div>{{ marked(r, m) }}{{ tool_cards(m, r.transcript) }}{{ state_of(r, m) }}</div>
{% if is_reply(m) %}{% for a in r.assertions if a.turn == m.turn and a.turn is not none %}{{ verdict_line(r, a, v.measured) }}{% endfor %}{% endif %}{% endfor %}
{% for a in r.assertions if a.turn is none %}{{ verdict_line(r, a, v.measured) }}{% endfor %}{{ world_of(r) }}
<p class="meta">{{ t('stop_line', reason=w('stop_' ~ r.stop_reason, r.stop_reason), calls=r.calls, seconds='%.2f' % ((r.duration_ms or 0) / 1000)) }}</p>{% endfor %}</div></details>{% endfor %}
</main>
<script>
(function(){
var sel={status:document.getElementById('f-status'),tag:document.getElementById('f-tag'),provider:document.getElementById('f-provider'),attribution:document.getElementById('f-attribution')};
function fromHash(){
  location.hash.replace(/^#/,'').split('&').forEach(function(kv){
    var i=kv.indexOf('=');if(i<0)return;
    var k=decodeURIComponent(kv.slice(0,i)),v=decodeURIComponent(kv.slice(i+1).replace(/\\+/g,' '));
    var s=sel[k];if(!s)return;
    if(!Array.prototype.some.call(s.options,function(o){return o.value===v;})){var o=document.createElement('option');o.value=o.textContent=v;s.appendChild(o);}
    s.value=v;});
}
function toHash(){
  var parts=[];Object.keys(sel).forEach(function(k){if(sel[k].value)parts.push(k+'='+encodeURIComponent(sel[k].value));});
  var h=parts.length?'#'+parts.join('&'):location.pathname+location.search;
  try{history.replaceState(null,'',h);}catch(e){location.hash=parts.join('&');}
}
function apply(){
  var shown=0,s=sel.status.value,t=sel.tag.value,p=sel.provider.value,a=sel.attribution.value;
  document.querySelectorAll('details.test').forEach(function(d){
    var ok=(!s||d.dataset.status===s)&&(!p||d.dataset.provider===p)&&(!t||d.dataset.tags.indexOf('|'+t+'|')>=0)
      &&(!a||d.dataset.attribution.indexOf('|'+a+'|')>=0);
    d.hidden=!ok;if(ok)shown++;});
  document.getElementById('shown').textContent=shown;
}
fromHash();apply();
Object.keys(sel).forEach(function(k){sel[k].addEventListener('change',function(){toHash();apply();});});
window.addEventListener('hashchange',function(){fromHash();apply();});
})();
</script></body></html>
"""


class ShownTest(TypedDict):
    """One test (verdict) as the report's template shows it: its records in full, or only summarised."""

    v: RunVerdict
    records: list[Record]
    summarised: bool
    anchor: str
    repeats: str
    tags: list[str]
    attributions: list[str]
    score: str | None
    xfail: str | None
    description: str | None


def verdict_class(a: Mapping[str, Any]) -> str:  # `a`: one of a record's `assertions`
    return "failed" if a["pass"] is False else "error" if a.get("error") else "passed" if a["pass"] else "skipped"


def verdict_icon(a: Mapping[str, Any]) -> str:
    return "✗" if a["pass"] is False else "⚠" if a.get("error") else "✓" if a["pass"] else "–"


def _baseline_section(run: RunData) -> Iterator[Markup]:
    """The diff against the baseline, a changed test a part: written as its rows are read (a large run's
    are on disk, docs/en/scale-and-ray.md#memory)."""
    if not run.get("baseline"):
        return
    from evalspec.reporters.diff import html_section_parts
    from evalspec.reporters.diffwords import spoken

    for part in html_section_parts(spoken(run["baseline"], run)):
        yield Markup(part)  # (html_section_parts escapes every value it writes)


def _marks(record: Record) -> dict[Any, list[str]]:
    """Per turn, the texts that failing assertions blame in that turn's reply."""
    out: dict[Any, list[str]] = defaultdict(list)
    for f in findings(record):
        for x in f.excerpts:
            if x.match:
                out[x.turn].append(x.match)
    return out


def marked(m: Message, marks: dict[Any, list[str]]) -> Markup:
    """A message, escaped, with the text a failing assertion blames in `<mark>`."""
    content = strip_controls(m.get("content", ""))
    needles = marks.get(m.get("turn"), []) if is_system_message(m) else []
    spans: list[tuple[int, int]] = []
    for needle in needles:
        at = content.casefold().find(needle.casefold())
        if at >= 0 and all(at + len(needle) <= a or at >= b for a, b in spans):
            spans.append((at, at + len(needle)))
    out, pos = [], 0
    for a, b in sorted(spans):
        out += [str(escape(content[pos:a])), f"<mark>{escape(content[a:b])}</mark>"]
        pos = b
    out.append(str(escape(content[pos:])))
    return Markup("".join(out))


def excerpt_html(x: Excerpt) -> Markup:
    mark = Markup("<mark>{}</mark>").format(x.match) if x.match else Markup("")
    return Markup('<div class="excerpt"><span class="meta">{}</span> {}{}{}</div>').format(
        words("reply_turn", turn=x.turn), x.before, mark, x.after)


def finding_html(f: Finding) -> Markup:
    where = where_text(f.where)
    parts = [Markup('{} · <span class="rule">{}</span>').format(where, f.rule) if f.rule else Markup("{}").format(where)]
    if f.critical:
        parts.append(Markup(' <span class="critical">{}</span>').format(words("critical")))
    if f.description:
        parts.append(Markup('<div class="desc why">{} {}</div>').format(words("why"), f.description))
    if f.error:
        parts.append(Markup('<div class="error">{} {}</div>').format(words("error_colon"), f.error))
    elif f.facts:
        parts += [Markup("<div>{}</div>").format(Markup(words(
            "expected_found", key=escape(x.key), expected=Markup("<b>{}</b>").format(x.expected),
            found=Markup("<b>{}</b>").format(x.found) if x.found else Markup("<i>{}</i>").format(words("nothing")))))
            for x in shown_facts(f)]
    elif f.reason:
        parts.append(Markup('<div class="meta">{}</div>').format(reason_text(f.reason, f.reason_zh)))
    parts += [excerpt_html(x) for x in f.excerpts]
    return Markup("").join(parts)


def verdict_line(record: Record, a: Mapping[str, Any], measured: bool) -> Markup:
    css = "measured" if measured and not a.get("error") else verdict_class(a)
    if a.get("pass") is False or a.get("error"):
        f = explain(record, a)
        body = Markup("{} {}").format(verdict_icon(a), finding_html(Finding(f.rule, f.critical, f.where, f.reason,
                                                                             f.error, [], f.facts, f.description,
                                                                             f.reason_zh)))
    else:
        body = Markup('{} <span class="rule">{}</span>: {}').format(verdict_icon(a), rule_text(a),
                                                                     reason_text(a.get("reason"), a.get("reason_zh")))
    return Markup('<div class="verdict {}">{}</div>').format(css, body)


def _gate_html(gate: Gate) -> Markup:
    """The gate line, its pass rate in `#pass-rate` (the words are fixed: nothing from the run)."""
    return Markup(gate_line(gate, lambda rate: f'<span id="pass-rate">{escape(rate)}</span>'))


FULL_PASSING = 1000  # a large run embeds every failing conversation, and the first 1,000 others in full


def render_html(run: RunData, html_all: bool = False, lang: str | None = None) -> str:
    """The self-contained report in `lang` (None: the run's own language, docs/en/reports-and-gate.md#language). Beyond the first
    FULL_PASSING conversations that did not fail, a conversation is summarised (id, score) unless
    `html_all` (docs/en/scale-and-ray.md: `--html-all`)."""
    return "".join(html_parts(run, html_all, lang))


def write_html(run: RunData, path: Path, html_all: bool = False, lang: str | None = None) -> None:
    """`render_html` written to `path` part by part: every conversation's records are read, rendered and
    let go in turn, so a large run's report never sits whole in memory (docs/en/scale-and-ray.md#memory)."""
    with path.open("w", encoding="utf-8") as fh:
        for part in html_parts(run, html_all, lang):
            fh.write(part)


def html_parts(run: RunData, html_all: bool = False, lang: str | None = None) -> Iterator[str]:
    """The report's text in parts, in order (see `render_html`)."""
    run = ensure_current(run)
    with speaking(choose_lang(run, lang)):
        yield from _render(run, html_all)


class _Listed:
    """Items made as the template reaches them, with the truth value of their count (`{% if failures %}`)."""

    def __init__(self, count: int, items: Iterable[Any]) -> None:
        self.count, self.items = count, items

    def __bool__(self) -> bool:
        return self.count > 0

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)


def _render(run: RunData, html_all: bool) -> Iterator[str]:
    env = Environment(autoescape=True, trim_blocks=False)
    cache: dict[int, dict[Any, list[str]]] = {}  # by record: emptied before each test, whose records it holds

    def marked_in(record: Record, m: Message) -> Markup:
        if id(record) not in cache:
            cache[id(record)] = _marks(record)
        return marked(m, cache[id(record)])

    shown: dict[int, dict[int, state.TurnState]] = {}

    def state_of(record: Record, m: Message) -> Markup:
        if id(record) not in shown:
            transcript = record.get("transcript") or []
            shown[id(record)] = {id(transcript[i]): s for i, s in state.turn_states(transcript).items()}
        return state.turn_html(shown[id(record)].get(id(m)))

    env.globals.update(world_of=world.world_html, world_css=Markup(world.CSS) if world.has_world(run) else Markup(""))
    env.globals.update(state_of=state_of, clicked=state.clicked_text,
                       state_css=Markup(state.CSS) if state.has_state(run) else Markup(""))
    env.globals.update(metric_columns=metric_columns(), metric_cells=metric_cells, verdict_line=verdict_line, marked=marked_in, finding_html=finding_html, count_keys=count_keys,
                       t=words, w=word, local_time=local_time, attribution_word=attribution_word, labels=dict(COUNT_LABELS, skipped="skipped"),
                       pass_rate=pass_rate_text, suite_gate_word=suite_gate_word, at_turn=at_turn_text,
                       milestones_line=milestones_text,
                       tool_cards=tools.calls_html, tool_hidden=tools.message_hidden, is_reply=is_reply, teardown_note=tools.teardown_html,
                       tool_css=Markup(tools.CSS))
    template = env.from_string(TEMPLATE)
    find = verdict_finder(run)

    def tests() -> Iterator[ShownTest]:
        kept = 0
        for i, v in enumerate(run["verdicts"]):  # its anchor is its position (docs/en/scale-and-ray.md#memory)
            cache.clear()  # the records of the test before are let go (and their ids may come back)
            shown.clear()
            full = html_all or v["category"] in ("failed", "error") or kept < FULL_PASSING
            kept += int(v["category"] not in ("failed", "error"))
            recs = find(v)
            first: Record | None = recs[0] if recs else None
            yield {"v": v, "records": recs if full else [], "summarised": not full,
                   "anchor": f"v-{i}", "repeats": repeats_text(v),
                   "tags": sorted({t for r in recs for t in r.get("tags", [])}),
                   "attributions": sorted({str(r["attribution"]) for r in recs if r.get("attribution")}),
                   "score": score_text(v.get("score_mean"), v.get("status")), "xfail": first.get("xfail") if first else None,
                   "description": first.get("description") if first else None}

    failures = ({"v": v, "anchor": f"v-{i}", "repeats": repeats_text(v),
                 "description": recs[0].get("description") if recs else "",
                 "findings": findings(recs[0]) if recs else [],
                 "at_turn": [at_turn_text(r["at_turn"]) for r in recs if isinstance(r.get("at_turn"), dict)]}
                for i, v, recs in failing_at(run))
    present = {v["category"] for v in run["verdicts"]}
    keys = keys_of(run["results"])
    total = len(run["verdicts"])
    yield from template.generate(
        run=run, gate_text=_gate_html(run["gate"]), baseline_section=_baseline_section(run),
        attacks_section=attacks_html(run), spread_section=spread_html(run), judging_section=judging_html(run),
        coverage_section=coverage_html(run), curves_section=curves_section(run), pass_k_section=pass_k_section(run),
        counts=count_keys(run["summary"]), failures=_Listed(failing_count(run), failures), tests=_Listed(total, tests()),
        blocks=blocking_listed(run, FULL_PASSING),
        shown_of=Markup(words("shown_of", shown=f'<span id="shown">{total}</span>', total=total)),
        statuses=[c for c in CATEGORIES if c in present],
        tags=sorted({t for r in run["results"] for t in r.get("tags", [])}),
        providers=sorted({r["provider"] for r in keys}),
        attributions=[c for c in CLASSES if any(r.get("attribution") == c for r in keys)],
    )
