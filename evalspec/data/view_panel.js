// The review panel of `evalspec view` (docs/en/review.md): read from #review-data, every text set as text,
// every word from the page's language (data.words).
(function(){
var data=JSON.parse(document.getElementById('review-data').textContent);
var W=data.words;
var token=document.querySelector('meta[name=evalspec-token]').content;
function el(tag,attrs,text){var e=document.createElement(tag);for(var k in attrs)e.setAttribute(k,attrs[k]);if(text!=null)e.textContent=text;return e;}
function fill(text,fields){return text.replace(/\{(\w+)\}/g,function(m,k){return k in fields?fields[k]:m;});}
function name(cls){return data.names[cls]||cls;}
function send(path,body){
  return fetch(path,{method:'POST',headers:{'Content-Type':'application/json','X-Evalspec-Token':token},body:JSON.stringify(body)})
    .then(function(r){return r.json().then(function(j){return {status:r.status,ok:r.ok,body:j};});});
}
function post(path,body,said){
  said.className='said';said.textContent='…';
  return send(path,body).then(function(r){if(!r.ok)throw new Error(r.body.error||r.status);return r.body;})
    .catch(function(e){said.className='said bad';said.textContent='✗ '+e.message;throw e;});
}
function attributionFilter(cls){
  var sel=document.getElementById('f-attribution');if(!sel)return;
  if(![].some.call(sel.options,function(o){return o.value===cls;})){sel.appendChild(el('option',{value:cls},name(cls)));}
}
function gateNote(box,v,cls){
  var note=box.querySelector('.gate-note');
  if(!note){note=el('div',{'class':'gate-note'});box.appendChild(note);}
  note.textContent='';
  note.appendChild(el('div',{'class':'unchanged'},W.gate_unchanged));
  if(v.next[cls])note.appendChild(el('div',{'class':'next'},v.next[cls]));
}
function triagePanel(box,v,d){
  var recs=v.records.filter(function(r){return r.attributable;});if(!recs.length)return;
  var wrap=el('div',{'class':'triage-box'});
  var row=el('div',{'class':'row triage'});
  var sel=el('select',{'class':'attribution','aria-label':W.choose});
  sel.appendChild(el('option',{value:''},W.choose));
  data.classes.forEach(function(c){sel.appendChild(el('option',{value:c[0]},c[1]));});
  var note=el('input',{type:'text','class':'note',placeholder:W.note,'aria-label':W.note});
  var btn=el('button',{type:'button','class':'primary save-triage'},W.save_attribution);
  var said=el('span',{'class':'said'});
  var cur=recs[0];
  if(cur.attribution){sel.value=cur.attribution;
    said.textContent=fill(W.saved_attribution,{name:name(cur.attribution),who:(cur.triage&&cur.triage.who)||''});}
  if(cur.triage&&cur.triage.note)note.value=cur.triage.note;
  btn.addEventListener('click',function(){
    if(!sel.value){said.className='said bad';said.textContent=W.pick_first;return;}
    var cls=sel.value;
    var ids=recs.map(function(r){return r.test_id;}).filter(function(x,i,a){return a.indexOf(x)===i;});
    Promise.all(ids.map(function(id){return post('/api/triage',{run:data.run,test:id,provider:v.provider,attribution:cls,note:note.value},said);}))
      .then(function(){said.textContent='✓ '+fill(W.saved_attribution,{name:name(cls),who:data.reviewer});
        d.dataset.attribution='|'+cls+'|';attributionFilter(cls);gateNote(wrap,v,cls);},function(){});
  });
  [sel,note,btn,said].forEach(function(x){row.appendChild(x);});wrap.appendChild(row);box.appendChild(wrap);
  if(cur.attribution)gateNote(wrap,v,cur.attribution);
}
function judgedRow(box,v,r,a){
  var row=el('div',{'class':'row judge','data-assertion':a.index});
  var shown=a.level?a.level:data.pass_words[a.pass?1:0];
  row.appendChild(el('span',{'class':'judged'},W.judge+' · '+a.type+' “'+a.value+'” → '+shown));
  var levels=null;
  if(a.levels.length){levels=el('select',{'class':'right-level','aria-label':W.right_level});
    a.levels.filter(function(l){return l!==a.level;}).forEach(function(l){levels.appendChild(el('option',{value:l},l));});}
  var ok=el('button',{type:'button','class':'judge-right'},W.judge_right);
  var bad=el('button',{type:'button','class':'judge-wrong'},W.judge_wrong);
  var note=el('input',{type:'text','class':'label-note',placeholder:W.wrong_note,'aria-label':W.wrong_note});
  var said=el('span',{'class':'said'});
  function mark(verdict){
    var body={run:data.run,test:r.test_id,provider:v.provider,repeat:r.repeat,assertion:a.index,verdict:verdict,note:note.value};
    if(verdict==='wrong'&&levels)body.level=levels.value;
    post('/api/label',body,said).then(function(){
      said.textContent=fill(W.label_saved,{verdict:verdict==='right'?W.label_right:W.label_wrong});},function(){});
  }
  ok.addEventListener('click',function(){mark('right');});bad.addEventListener('click',function(){mark('wrong');});
  row.appendChild(ok);if(levels)row.appendChild(levels);row.appendChild(note);row.appendChild(bad);
  box.appendChild(row);box.appendChild(said);said.classList.add('label-said');
}
function approvePanel(box,v){
  var row=el('div',{'class':'row approve'});
  var btn=el('button',{type:'button','class':'primary approve-draft'},W.approve);
  var said=el('span',{'class':'said'},fill(W.draft_of,{suite:v.suite}));
  function done(j){said.className='said';said.textContent=fill(W.approved,{where:j.suite+':'+j.line});btn.disabled=true;}
  btn.addEventListener('click',function(){
    var body={suite:v.suite,test:v.test,run:data.run};
    said.className='said';said.textContent='…';
    send('/api/approve',body).then(function(r){
      if(r.ok)return done(r.body);
      if(r.status!==409)throw new Error(r.body.error||r.status);
      var checks=r.body.failed.map(function(f){return '· '+(f.assertion?f.assertion+': ':'')+f.reason;}).join('\n');
      if(!window.confirm(fill(W.approve_confirm,{run:data.run,checks:checks}))){said.textContent=W.not_approved;return;}
      body.force=true;
      return post('/api/approve',body,said).then(done);
    }).catch(function(e){said.className='said bad';said.textContent='✗ '+e.message;});
  });
  row.appendChild(btn);row.appendChild(said);box.appendChild(row);
}
function makeTestPanel(box,v){
  var rec=v.records[0];if(!rec)return;
  var row=el('div',{'class':'row make-test'});
  var suite=el('input',{type:'text','class':'suite',value:v.suite,'aria-label':W.suite});
  var btn=el('button',{type:'button','class':'make-test'},W.make_test);
  var said=el('span',{'class':'said'});
  btn.addEventListener('click',function(){
    post('/api/make-test',{run:data.run,test:rec.test_id,provider:v.provider,suite:suite.value},said).then(function(j){
      said.textContent=fill(W.made_test,{test:j.test,suite:j.suite});},function(){});
  });
  [suite,btn,said].forEach(function(x){row.appendChild(x);});box.appendChild(row);
}
data.verdicts.forEach(function(v,i){
  var d=document.getElementById('v-'+i);if(!d)return;
  var box=el('div',{'class':'review'});box.appendChild(el('h3',{},W.review));
  triagePanel(box,v,d);
  v.records.forEach(function(r){r.judged.forEach(function(a){judgedRow(box,v,r,a);});});
  if(v.draft)approvePanel(box,v);
  if(v.status!=='passed')makeTestPanel(box,v);
  if(box.children.length>1){var chat=d.querySelector('.chat');chat.insertBefore(box,chat.firstChild);}
});
})();
