"""The pages of `evalspec view`: the run list with the pass-rate trend, a run's report with the review
panel, and the diff of two runs. A run's page is the HTML report itself (`reporters.html`), with the
review panel added by a script over the data it is given; the diff is `diff.render`'s section.
Everything from a run is escaped (markupsafe, or JSON read by the script and set as text)."""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup

from evalspec.app.view.runs import RunStore
from evalspec.results.attribution import ATTRIBUTABLE, CLASSES

CSS = """*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"PingFang SC","Noto Sans CJK SC",sans-serif;margin:0;background:#f6f7f9;color:#1f2937;overflow-wrap:break-word}
header{background:#111827;color:#fff;padding:16px 24px}header h1{margin:0;font-size:20px}
main{padding:16px 24px;max-width:1200px}a{color:#1d4ed8}.meta{font-size:12px;color:#6b7280}
.passed{color:#15803d}.failed{color:#b91c1c}.error{color:#b45309}
table{border-collapse:collapse;background:#fff;width:100%;margin:12px 0}
td,th{padding:6px 8px;border-bottom:1px solid #e5e7eb;text-align:left;font-size:14px;overflow-wrap:normal}
td.n,th.n{text-align:right}.legend{font-size:13px;margin:4px 0}.legend span{margin-right:12px}
svg{max-width:100%;height:auto;background:#fff;border-radius:8px;box-shadow:0 1px 2px #0002}
form.pick{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:12px 0}select{max-width:100%;padding:4px}
h2{font-size:18px;margin:20px 0 8px}
@media (max-width:600px){main{padding:10px}header{padding:12px}td,th{padding:4px 5px;font-size:12px}
table.runs tr:first-child{display:none}table.runs tr{display:block;border-bottom:1px solid #e5e7eb;padding:6px 0}
table.runs td{display:inline-block;border:0;padding:2px 6px}table.runs td.id{display:block;font-weight:bold}}
"""

NAV_CSS = """.view-nav{background:#1f2937;padding:6px 24px;font-size:13px;display:flex;flex-wrap:wrap;gap:14px}
.view-nav a{color:#e5e7eb}.view-nav .who{color:#9ca3af;margin-left:auto}
.review{background:#f9fafb;border:1px solid #e5e7eb;border-radius:8px;padding:8px 10px;margin:6px 0 10px}
.review h3{font-size:13px;margin:0 0 6px;color:#374151}.review .row{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:4px 0}
.review input[type=text]{flex:1 1 160px;min-width:0;padding:4px 6px;border:1px solid #d1d5db;border-radius:4px}
.review button{padding:4px 10px;border:1px solid #9ca3af;border-radius:4px;background:#fff;cursor:pointer}
.review button.primary{background:#1d4ed8;border-color:#1d4ed8;color:#fff}.review button:disabled{opacity:.5;cursor:default}
.review .said{font-size:12px;color:#374151}.review .said.bad{color:#b91c1c}
.review .judged{font-size:13px;flex:1 1 220px;min-width:0}
@media (max-width:600px){.view-nav{padding:6px 10px}}
"""

CLASS_WORDS = {"bot_defect": "机器人缺陷 bot defect", "model_fluctuation": "模型波动 model fluctuation",
               "rule_misjudgment": "规则误判 rule misjudgment", "infrastructure": "基础设施异常 infrastructure",
               "pending_fact": "事实待确认 pending fact"}


def layout(title: str, body: Markup, nav: Markup | None = None) -> str:
    return str(Markup('<!doctype html><html lang="zh"><head><meta charset="utf-8"><meta name="viewport" '
                      'content="width=device-width, initial-scale=1"><title>{}</title><style>{}{}</style></head>'
                      '<body><header><h1>{}</h1></header>{}<main>{}</main></body></html>').format(
        title, Markup(CSS), Markup(NAV_CSS), title, nav or "", body))


def nav(*links: tuple[str, str], who: str | None = None) -> Markup:
    reviewer = Markup('<span class="who">reviewer · 评审人: {}</span>').format(who) if who else ""
    return Markup('<nav class="view-nav">{}{}</nav>').format(
        Markup("").join(Markup('<a href="{}">{}</a>').format(href, text) for href, text in links), reviewer)


def _rate(value: Any) -> str:
    return "—" if not isinstance(value, (int, float)) else f"{value:.0%}"


def run_list(store: RunStore) -> str:
    """Every run, newest first, with the pass-rate trend per suite and a form to diff two of them."""
    from evalspec.reporters.trend import COLORS, line_chart, trend_series

    rows = store.summaries()
    if not rows:
        body = Markup('<p>No runs yet in <code>{}</code>: <code>evalspec run</code> writes them to '
                      '.evalspec/runs/.</p>').format(store.root)
        return layout("evalspec view", body)
    table = [Markup('<table class="runs"><tr><th>run</th><th>started</th><th>suites</th><th class="n">passed</th>'
                    '<th class="n">failed</th><th class="n">errors</th><th class="n">pass rate</th></tr>')]
    for r in rows:
        if "unreadable" in r:  # named with what is wrong; every other run is listed as usual
            table.append(Markup('<tr data-run="{id}" class="unreadable"><td class="id"><a href="/run/{id}">{id}</a></td>'
                                '<td colspan="6">unreadable: {why}</td></tr>').format(id=r["id"], why=r["unreadable"]))
            continue
        table.append(Markup('<tr data-run="{id}"><td class="id"><a href="/run/{id}">{id}</a></td><td>{started}</td>'
                            '<td>{suites}</td><td class="n passed">{p} passed</td><td class="n failed">{f} failed</td>'
                            '<td class="n error">{e} errors</td><td class="n">{rate}</td></tr>').format(
            id=r["id"], started=str(r["started"] or "")[:19].replace("T", " "), suites=", ".join(map(str, r["suites"])),
            p=r["passed"], f=r["failed"], e=r["errors"], rate=_rate(r["pass_rate"])))
    table.append(Markup("</table>"))
    runs = store.runs_in_time_order()
    labels = [run_id[-6:] for run_id, _ in runs]
    chart = trend_series([data for _, data in runs])[0]
    ids = [str(r["id"]) for r in rows if "unreadable" not in r]
    pick = Markup("<p>No readable run to compare.</p>") if not ids else Markup('<form class="pick" action="/diff" method="get">diff <select name="base" id="diff-base">{}</select> '
                  '→ <select name="head" id="diff-head">{}</select> <button type="submit">compare</button></form>'
                  ).format(_options(ids, ids[1] if len(ids) > 1 else ids[0]), _options(ids, ids[0]))
    legend = Markup("").join(Markup('<span><span style="color:{}">■</span> {}</span>').format(
        COLORS[j % len(COLORS)], name) for j, name in enumerate(chart["series"]))
    body = Markup('<h2>Runs</h2>{}<h2>Pass rate per suite</h2><div class="legend">{}</div>{}<h2>Diff two runs</h2>{}'
                  ).format(Markup("").join(table), legend, line_chart(chart, labels), pick)
    return layout("evalspec view", body)


def _options(ids: list[str], selected: str) -> Markup:
    return Markup("").join(Markup('<option value="{0}"{1}>{0}</option>').format(
        i, Markup(" selected") if i == selected else "") for i in ids)


def review_data(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Per verdict, in the report's order (its `#v-N` anchors): what the review panel acts on."""
    from evalspec.reporters.vocabulary import verdict_records

    out = []
    for v in run["verdicts"]:
        records = []
        for r in verdict_records(run, v):
            judged = [{"index": i, "type": a.get("type"), "value": str(a.get("value") or "")[:200], "pass": a.get("pass"),
                       "level": (a.get("details") or {}).get("level"),
                       "levels": list((a.get("details") or {}).get("levels") or {})}
                      for i, a in enumerate(r.get("assertions") or [])
                      if (a.get("details") or {}).get("verdicts") and not a.get("error") and a.get("pass") is not None]
            records.append({"test_id": r["test_id"], "repeat": r.get("repeat"), "status": r["status"],
                            "attributable": r["status"] in ATTRIBUTABLE, "attribution": r.get("attribution"),
                            "triage": r.get("triage"), "judged": judged})
        first = (verdict_records(run, v) or [{}])[0]
        out.append({"suite": v["suite"], "test": first.get("test", v["test_id"]), "provider": v["provider"],
                    "draft": bool(v.get("draft")), "status": v.get("status"), "records": records})
    return out


def run_page(run_id: str, run: dict[str, Any], token: str, reviewer: str, previous: str | None) -> str:
    """The run's HTML report with a navigation bar and a review panel in every conversation."""
    from evalspec.reporters.html import render_html
    from evalspec.reporters.vocabulary import ensure_current

    run = ensure_current(run)
    html = render_html(run)  # a large run: failing conversations in full, as in the report
    links = [("/", "← runs")] + ([(f"/diff?base={previous}&head={run_id}", "diff with the previous run")]
                                 if previous else [])
    bar = nav(*links, who=reviewer)
    data = {"run": run_id, "reviewer": reviewer, "classes": [[c, CLASS_WORDS[c]] for c in CLASSES],
            "verdicts": review_data(run)}
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    head = Markup('<meta name="evalspec-token" content="{}"><style>{}</style></head>').format(token, Markup(NAV_CSS))
    tail = Markup('<script type="application/json" id="review-data">{}</script><script>{}</script></body>').format(
        Markup(payload), Markup(REVIEW_JS))
    html = html.replace("</head>", str(head), 1).replace("<body>", "<body>" + str(bar), 1)
    at = html.rfind("</body>")
    return html[:at] + str(tail) + html[at + len("</body>"):]


def diff_page(base_id: str, head_id: str, diff: dict[str, Any]) -> str:
    from evalspec.reporters.diff import html_section

    body = Markup("<p><b>{}</b> → <b>{}</b></p>{}").format(base_id, head_id, html_section(diff))
    return layout("evalspec diff", body, nav(("/", "← runs"), (f"/run/{base_id}", base_id), (f"/run/{head_id}", head_id)))


def error_page(message: str) -> str:
    return layout("evalspec view", Markup("<p>{}</p>").format(message), nav(("/", "← runs")))


REVIEW_JS = r"""
(function(){
var data=JSON.parse(document.getElementById('review-data').textContent);
var token=document.querySelector('meta[name=evalspec-token]').content;
function el(tag,attrs,text){var e=document.createElement(tag);for(var k in attrs)e.setAttribute(k,attrs[k]);if(text!=null)e.textContent=text;return e;}
function post(path,body,said){
  said.className='said';said.textContent='…';
  return fetch(path,{method:'POST',headers:{'Content-Type':'application/json','X-Evalspec-Token':token},body:JSON.stringify(body)})
    .then(function(r){return r.json().then(function(j){if(!r.ok)throw new Error(j.error||r.status);return j;});})
    .catch(function(e){said.className='said bad';said.textContent='✗ '+e.message;throw e;});
}
function attributionFilter(cls){
  var sel=document.getElementById('f-attribution');if(!sel)return;
  if(![].some.call(sel.options,function(o){return o.value===cls;})){sel.appendChild(el('option',{value:cls},cls));}
}
function triagePanel(box,v,d){
  var recs=v.records.filter(function(r){return r.attributable;});if(!recs.length)return;
  var row=el('div',{'class':'row triage'});
  var sel=el('select',{'class':'attribution','aria-label':'attribution'});
  sel.appendChild(el('option',{value:''},'归因 attribution…'));
  data.classes.forEach(function(c){sel.appendChild(el('option',{value:c[0]},c[1]));});
  var note=el('input',{type:'text','class':'note',placeholder:'备注 note'});
  var btn=el('button',{type:'button','class':'primary save-triage'},'保存归因 Save');
  var said=el('span',{'class':'said'});
  var cur=recs[0];
  if(cur.attribution){sel.value=cur.attribution;said.textContent=cur.attribution+(cur.triage&&cur.triage.who?' · '+cur.triage.who:'');}
  if(cur.triage&&cur.triage.note)note.value=cur.triage.note;
  btn.addEventListener('click',function(){
    if(!sel.value){said.className='said bad';said.textContent='choose an attribution';return;}
    var ids=recs.map(function(r){return r.test_id;}).filter(function(x,i,a){return a.indexOf(x)===i;});
    Promise.all(ids.map(function(id){return post('/api/triage',{run:data.run,test:id,provider:v.provider,attribution:sel.value,note:note.value},said);}))
      .then(function(){said.textContent='✓ '+sel.value+' · '+data.reviewer;
        d.dataset.attribution='|'+sel.value+'|';attributionFilter(sel.value);},function(){});
  });
  [sel,note,btn,said].forEach(function(x){row.appendChild(x);});box.appendChild(row);
}
function judgedRow(box,v,r,a){
  var row=el('div',{'class':'row judge','data-assertion':a.index});
  var shown=a.level?a.level:(a.pass?'pass 通过':'fail 失败');
  row.appendChild(el('span',{'class':'judged'},'judge · '+a.type+' “'+a.value+'” → '+shown));
  var levels=null;
  if(a.levels.length){levels=el('select',{'class':'right-level','aria-label':'right level'});
    a.levels.filter(function(l){return l!==a.level;}).forEach(function(l){levels.appendChild(el('option',{value:l},l));});}
  var ok=el('button',{type:'button','class':'judge-right'},'判对了 right');
  var bad=el('button',{type:'button','class':'judge-wrong'},'判错了 wrong');
  var said=el('span',{'class':'said'});
  function send(verdict){
    var body={run:data.run,test:r.test_id,provider:v.provider,repeat:r.repeat,assertion:a.index,verdict:verdict,note:''};
    if(verdict==='wrong'&&levels)body.level=levels.value;
    post('/api/label',body,said).then(function(j){said.textContent='✓ '+verdict+' → labels.jsonl (label '+JSON.stringify(j.line.label)+')';},function(){});
  }
  ok.addEventListener('click',function(){send('right');});bad.addEventListener('click',function(){send('wrong');});
  row.appendChild(ok);if(levels)row.appendChild(levels);row.appendChild(bad);row.appendChild(said);box.appendChild(row);
}
function approvePanel(box,v){
  var row=el('div',{'class':'row approve'});
  var btn=el('button',{type:'button','class':'primary approve-draft'},'批准草稿 Approve draft');
  var said=el('span',{'class':'said'},'draft · '+v.suite);
  btn.addEventListener('click',function(){
    post('/api/approve',{suite:v.suite,test:v.test},said).then(function(j){
      said.textContent='✓ approved · '+j.suite+':'+j.line+' (draft: true removed)';btn.disabled=true;},function(){});
  });
  row.appendChild(btn);row.appendChild(said);box.appendChild(row);
}
function makeTestPanel(box,v){
  var rec=v.records[0];if(!rec)return;
  var row=el('div',{'class':'row make-test'});
  var suite=el('input',{type:'text','class':'suite',value:v.suite,'aria-label':'suite'});
  var btn=el('button',{type:'button','class':'make-test'},'做成测试 Make a test');
  var said=el('span',{'class':'said'});
  btn.addEventListener('click',function(){
    post('/api/make-test',{run:data.run,test:rec.test_id,provider:v.provider,suite:suite.value},said).then(function(j){
      said.textContent='✓ draft test '+j.test+' → '+j.suite;},function(){});
  });
  [suite,btn,said].forEach(function(x){row.appendChild(x);});box.appendChild(row);
}
data.verdicts.forEach(function(v,i){
  var d=document.getElementById('v-'+i);if(!d)return;
  var box=el('div',{'class':'review'});box.appendChild(el('h3',{},'评审 Review'));
  triagePanel(box,v,d);
  v.records.forEach(function(r){r.judged.forEach(function(a){judgedRow(box,v,r,a);});});
  if(v.draft)approvePanel(box,v);
  if(v.status!=='passed')makeTestPanel(box,v);
  if(box.children.length>1){var chat=d.querySelector('.chat');chat.insertBefore(box,chat.firstChild);}
});
})();
"""
