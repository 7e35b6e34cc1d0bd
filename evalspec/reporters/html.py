"""One self-contained HTML file: summary, filters, transcripts with per-turn verdicts, decay curves as SVG.

Everything from the system under test is escaped by jinja2's autoescape: a reply containing
`<script>` is shown, never run. No network: CSS and the few lines of JS are inline.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from evalspec.reporters import tools
from evalspec.reporters.attacks import html_section as attacks_html
from evalspec.reporters.curves_html import curves_section

TEMPLATE = """<!doctype html>
<html lang="zh"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>evalspec report {{ run.run_id }}</title>
<style>
body{font-family:system-ui,-apple-system,"PingFang SC","Noto Sans CJK SC",sans-serif;margin:0;background:#f6f7f9;color:#1f2937}
header{background:#111827;color:#fff;padding:16px 24px}header h1{margin:0;font-size:20px}
main{padding:16px 24px;max-width:1200px}.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{background:#fff;border-radius:8px;padding:12px 16px;box-shadow:0 1px 2px #0002;min-width:110px}
.card b{display:block;font-size:22px}.passed{color:#15803d}.failed{color:#b91c1c}.error{color:#b45309}
.xfailed{color:#7e22ce}.xpassed{color:#0e7490}.skipped{color:#6b7280}
table{border-collapse:collapse;background:#fff;width:100%;margin:12px 0}td,th{padding:6px 8px;border-bottom:1px solid #e5e7eb;text-align:left;font-size:14px}
.filters{margin:16px 0;display:flex;gap:8px;flex-wrap:wrap;align-items:center}select{padding:4px}
details.test{background:#fff;border-radius:8px;margin:8px 0;box-shadow:0 1px 2px #0002}
details.test summary{padding:10px 14px;cursor:pointer}.chat{padding:8px 16px 16px}
.msg{max-width:75%;padding:8px 12px;border-radius:12px;margin:6px 0;white-space:pre-wrap;word-break:break-word}
.user{background:#e0e7ff;margin-left:auto}.assistant{background:#f3f4f6}.injected{border:1px dashed #9ca3af}
.meta{font-size:12px;color:#6b7280}.verdict{font-size:13px;margin:2px 0 2px 12px}.gate{font-weight:bold}
.curves svg{background:#fff;border-radius:8px;box-shadow:0 1px 2px #0002}
{{ tool_css }}
</style></head><body>
<header><h1>evalspec report</h1><div class="meta" style="color:#d1d5db">run {{ run.run_id }} · {{ run.started_at }} · evalspec {{ run.evalspec_version }}</div></header>
<main>
<p class="gate {{ 'passed' if run.gate.exit_code == 0 else 'failed' }}">{{ gate_text }}</p>
<ul>{% for r in run.gate.reasons %}<li>{{ r }}</li>{% endfor %}</ul>
{{ baseline_section }}
{{ attacks_section }}
<div class="cards">{% for status, n in cards.items() %}<div class="card"><b class="{{ status }}">{{ n }}</b>{{ status }}</div>{% endfor %}
<div class="card"><b>{{ measured }}</b>not gated (curve points, drafts)</div>
<div class="card"><b>{{ run.summary.calls }}</b>calls ({{ run.summary.cached_calls }} cached)</div>
<div class="card"><b>{{ run.summary.tokens }}</b>tokens</div><div class="card"><b>${{ '%.4f' % run.summary.cost }}</b>cost</div></div>
<table><tr><th>suite</th><th>passed</th><th>failed</th><th>errors</th><th>pass rate</th><th>gate</th></tr>
{% for g in run.gate.suites %}<tr><td>{{ g.suite }}</td><td>{{ g.passed }}</td><td>{{ g.failed }}</td><td>{{ g.errors }}</td><td>{{ '%.0f%%' % (g.pass_rate * 100) if g.pass_rate is not none else '—' }}</td><td class="{{ 'passed' if g.ok else 'failed' }}">{{ 'ok' if g.ok else 'failed' }}</td></tr>{% endfor %}</table>
{{ curves_section }}
<h2>Conversations</h2>
<div class="filters">status <select id="f-status"><option value="">all</option>{% for s in statuses %}<option>{{ s }}</option>{% endfor %}</select>
tag <select id="f-tag"><option value="">all</option>{% for t in tags %}<option>{{ t }}</option>{% endfor %}</select>
provider <select id="f-provider"><option value="">all</option>{% for p in providers %}<option>{{ p }}</option>{% endfor %}</select></div>
{% for r in run.results %}<details class="test" data-status="{{ r.status }}" data-provider="{{ r.provider }}" data-tags="|{{ r.tags|join('|') }}|" {% if r.status in ('failed', 'error') and not r.curve %}open{% endif %}>
<summary><b class="{{ r.status }}">{{ r.status }}</b> {{ r.test_id }} <span class="meta">@ {{ r.provider }} · {{ r.name }} · score {{ '%.2f' % r.score if r.score is not none else '–' }} · {{ r.suite }}{% if r.xfail %} · xfail: {{ r.xfail }}{% endif %}{% if r.curve %} · curve point{% endif %}</span></summary>
<div class="chat">{% if r.error %}<p class="error">error: {{ r.error }}</p>{% endif %}{{ teardown_note(r) }}
{% for m in r.transcript if not tool_hidden(m) %}<div class="msg {{ m.role }}{% if m.injected %} injected{% endif %}"><div class="meta">{{ m.role }}{% if m.turn %} · turn {{ m.turn }}{% endif %}{% if m.filler %} · filler{% endif %}{% if m.label %} · {{ m.label }}{% endif %}{% if m.injected %} · golden history{% endif %}{% if m.intermediate %} · tool round{% endif %}{% if m.latency_ms %} · {{ '%.0f' % m.latency_ms }} ms{% endif %}{% if m.cached %} · cached{% endif %}</div>{{ m.content }}{{ tool_cards(m, r.transcript) }}</div>
{% if m.role == 'assistant' and not m.intermediate %}{% for a in r.assertions if a.turn == m.turn and a.turn is not none %}<div class="verdict {{ verdict_class(a) }}">{{ verdict_icon(a) }} {{ a.type }}: {{ a.error or a.reason }}</div>{% endfor %}{% endif %}{% endfor %}
{% for a in r.assertions if a.turn is none %}<div class="verdict {{ verdict_class(a) }}">{{ verdict_icon(a) }} {{ a.type }} <span class="meta">[{{ a.scope }}]</span>: {{ a.error or a.reason }}{% for e in a.evidence[:3] if e.text %} <span class="meta">· turn {{ e.turn }}: {{ e.text }}</span>{% endfor %}</div>{% endfor %}
<p class="meta">stop: {{ r.stop_reason }} · {{ r.calls }} calls · {{ '%.2f' % (r.duration_ms / 1000) }} s</p></div></details>{% endfor %}
</main>
<script>
(function(){var s=document.getElementById('f-status'),t=document.getElementById('f-tag'),p=document.getElementById('f-provider');
function apply(){document.querySelectorAll('details.test').forEach(function(d){var ok=(!s.value||d.dataset.status===s.value)&&(!p.value||d.dataset.provider===p.value)&&(!t.value||d.dataset.tags.indexOf('|'+t.value+'|')>=0);d.style.display=ok?'':'none';});}
[s,t,p].forEach(function(e){e.addEventListener('change',apply);});})();
</script></body></html>
"""


def verdict_class(a: dict[str, Any]) -> str:
    return "error" if a.get("error") else "passed" if a["pass"] else "skipped" if a["pass"] is None else "failed"


def verdict_icon(a: dict[str, Any]) -> str:
    return "⚠" if a.get("error") else "✓" if a["pass"] else "–" if a["pass"] is None else "✗"


def _baseline_section(run: dict[str, Any]) -> Markup:
    if not run.get("baseline"):
        return Markup("")
    from evalspec.diff.render import html_section

    return html_section(run["baseline"])


def render_html(run: dict[str, Any]) -> str:
    env = Environment(autoescape=True, trim_blocks=False)
    env.globals.update(verdict_class=verdict_class, verdict_icon=verdict_icon, tool_cards=tools.calls_html,
                       tool_hidden=tools.message_hidden, teardown_note=tools.teardown_html, tool_css=Markup(tools.CSS))
    template = env.from_string(TEMPLATE)
    gate = run["gate"]
    text = {0: "gate passed", 1: "gate failed", 3: "gate: too many errors"}[gate["exit_code"]]
    gated = [v for v in run["verdicts"] if not v["curve"] and not v["draft"]]
    cards = {s: sum(1 for v in gated if v["status"] == s) for s in ("passed", "failed", "error", "xfailed", "xpassed")}
    return template.render(
        run=run, gate_text=text, baseline_section=_baseline_section(run), attacks_section=attacks_html(run), curves_section=curves_section(run), cards=cards, measured=len(run["verdicts"]) - len(gated),
        statuses=sorted({r["status"] for r in run["results"]}),
        tags=sorted({t for r in run["results"] for t in r.get("tags", [])}),
        providers=sorted({r["provider"] for r in run["results"]}),
    )
