"""The pages of `evalspec view`: the run list with the pass-rate trend, a run's report with the review
panel, and the diff of two runs. A run's page is the HTML report itself (`reporters.html`), with the
review panel added by a script over the data it is given (`panel`); the diff is `diff.render`'s section.
Everything from a run is escaped (markupsafe, or JSON read by the script and set as text).

One language per page (docs/en/review.md#language): `view --lang`, else a run's page speaks its run's
language and the other pages that of the newest run; every word comes from the report catalogue."""

from __future__ import annotations

import json
from pathlib import Path

from markupsafe import Markup

from evalspec.app.view.panel import panel_data, panel_js
from evalspec.app.view.runs import RunRow, RunStore
from evalspec.reporters.catalogue import choose_lang, speaking, words
from evalspec.reporters.vocabulary import local_time, pass_rate_text
from evalspec.results.rundata import Baseline, RunData

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
h2{font-size:18px;margin:20px 0 8px}table.runs .w{display:none}
@media (max-width:600px){main{padding:10px}header{padding:12px}td,th{padding:4px 5px;font-size:12px}
table.runs tr:first-child{display:none}table.runs tr{display:block;border-bottom:1px solid #e5e7eb;padding:6px 0}
table.runs td{display:inline-block;border:0;padding:2px 6px}table.runs td.id{display:block;font-weight:bold}
table.runs .w{display:inline}}
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
.review .gate-note{font-size:13px;background:#fffbeb;border:1px solid #fde68a;border-radius:6px;padding:6px 8px;margin:6px 0}
.review .gate-note .next{margin-top:2px;color:#374151;overflow-wrap:anywhere}.review .label-said{display:block;margin:0 0 6px}
@media (max-width:600px){.view-nav{padding:6px 10px}}
"""


def home_lang(store: RunStore, lang: str | None) -> str:
    """The language of the pages that are not one run's (home, diff, errors): `choose_lang` over the newest
    run (read only when `--lang` does not decide)."""
    return choose_lang(None if lang else _newest_run(store), lang)


def _newest_run(store: RunStore) -> RunData | None:
    rows = store.summaries()
    try:
        return store.load(str(rows[0]["id"]))[0] if rows else None
    except LookupError:
        return None


def layout(title: str, body: Markup, nav: Markup | None = None) -> str:
    return str(Markup('<!doctype html><html lang="{}"><head><meta charset="utf-8"><meta name="viewport" '
                      'content="width=device-width, initial-scale=1"><title>{}</title><style>{}{}</style></head>'
                      '<body><header><h1>{}</h1></header>{}<main>{}</main></body></html>').format(
        words("html_lang"), title, Markup(CSS), Markup(NAV_CSS), title, nav or "", body))


def nav(*links: tuple[str, str], who: str | None = None) -> Markup:
    reviewer = Markup('<span class="who">{}</span>').format(words("view_reviewer", who=who)) if who else ""
    return Markup('<nav class="view-nav">{}{}</nav>').format(
        Markup("").join(Markup('<a href="{}">{}</a>').format(href, text) for href, text in links), reviewer)


def _rate(row: RunRow) -> str:
    """A run's pass rate with its 95 % interval, `90% (77–96%, n=40)`; `—` when no gated verdict was reached."""
    value = row.get("pass_rate")
    return "—" if not isinstance(value, (int, float)) else pass_rate_text(float(value), row)


def run_list(store: RunStore, lang: str | None = None) -> str:
    """Every run, newest first, with the pass-rate trend per suite and a form to diff two of them."""
    with speaking(home_lang(store, lang)):
        return _run_list(store)


def _run_list(store: RunStore) -> str:
    from evalspec.reporters.trend import COLORS, line_chart, trend_series

    rows = store.summaries()
    title = words("view_title")
    if not rows:
        return layout(title, Markup("<p>{}</p>").format(words("view_no_runs", root=store.root)))
    heads = [words(k) for k in ("view_col_run", "view_col_started", "view_col_suites", "passed", "failed", "errors",
                                "pass_rate")]
    table = [Markup('<table class="runs"><tr><th>{}</th><th>{}</th><th>{}</th><th class="n">{}</th>'
                    '<th class="n">{}</th><th class="n">{}</th><th class="n">{}</th></tr>').format(*heads)]
    for r in rows:
        if "unreadable" in r:  # named with what is wrong; every other run is listed as usual
            table.append(Markup('<tr data-run="{id}" class="unreadable"><td class="id"><a href="/run/{id}">{id}</a></td>'
                                '<td colspan="6">{why}</td></tr>').format(id=r["id"], why=words("view_unreadable", why=r["unreadable"])))
            continue
        table.append(Markup('<tr data-run="{id}"><td class="id"><a href="/run/{id}">{id}</a></td><td>{started}</td>'
                            '<td>{suites}</td><td class="n passed">{p}<span class="w"> {wp}</span></td><td class="n failed">{f}<span class="w"> {wf}</span></td>'
                            '<td class="n error">{e}<span class="w"> {we}</span></td><td class="n"><span class="w">{wr} </span>{rate}</td></tr>').format(
            id=r["id"], started=local_time(r["started"]), suites=", ".join(map(str, r["suites"])),
            p=r["passed"], f=r["failed"], e=r["errors"], wp=words("passed"), wf=words("failed"), we=words("errors"),
            wr=words("pass_rate"), rate=_rate(r)))
    table.append(Markup("</table>"))
    runs = store.runs_in_time_order()
    labels = [run_id[-6:] for run_id, _ in runs]
    chart = trend_series([data for _, data in runs])[0]
    chart["title"] = words("view_trend")  # its aria-label too
    ids = [str(r["id"]) for r in rows if "unreadable" not in r]
    pick = Markup("<p>{}</p>").format(words("view_none_to_compare")) if not ids else Markup(
        '<form class="pick" action="/diff" method="get">{} <select name="base" id="diff-base">{}</select> '
        '→ <select name="head" id="diff-head">{}</select> <button type="submit">{}</button></form>'
        ).format(words("view_diff_from"), _options(ids, ids[1] if len(ids) > 1 else ids[0]),
                 _options(ids, ids[0]), words("view_compare"))
    legend = Markup("").join(Markup('<span><span style="color:{}">■</span> {}</span>').format(
        COLORS[j % len(COLORS)], name) for j, name in enumerate(chart["series"]))
    body = Markup('<h2>{}</h2>{}<h2>{}</h2><div class="legend">{}</div>{}<h2>{}</h2>{}').format(
        words("view_runs"), Markup("").join(table), words("view_trend"), legend, line_chart(chart, labels),
        words("view_diff_two"), pick)
    return layout(title, body)


def _options(ids: list[str], selected: str) -> Markup:
    return Markup("").join(Markup('<option value="{0}"{1}>{0}</option>').format(
        i, Markup(" selected") if i == selected else "") for i in ids)


def run_page(run_id: str, run: RunData, token: str, reviewer: str, previous: str | None,
             lang: str | None = None, root: Path | None = None, run_path: Path | None = None) -> str:
    """The run's HTML report with a navigation bar and a review panel in every conversation, in `lang`
    (None: the run's own language)."""
    from evalspec.reporters.html import render_html
    from evalspec.reporters.vocabulary import ensure_current

    run = ensure_current(run)
    lang = choose_lang(run, lang)
    html = render_html(run, lang=lang)  # a large run: failing conversations in full, as in the report
    shown_path = str(run_path or "RUN.json")
    if root is not None and run_path is not None and run_path.resolve().is_relative_to(root.resolve()):
        shown_path = run_path.resolve().relative_to(root.resolve()).as_posix()
    with speaking(lang):
        links = [("/", words("view_back"))] + ([(f"/diff?base={previous}&head={run_id}", words("view_diff_previous"))]
                                               if previous else [])
        bar = nav(*links, who=reviewer)
        data = panel_data(run_id, run, reviewer, root, shown_path)
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    head = Markup('<meta name="evalspec-token" content="{}"><style>{}</style></head>').format(token, Markup(NAV_CSS))
    tail = Markup('<script type="application/json" id="review-data">{}</script><script>{}</script></body>').format(
        Markup(payload), Markup(panel_js()))
    html = html.replace("</head>", str(head), 1).replace("<body>", "<body>" + str(bar), 1)
    at = html.rfind("</body>")
    return html[:at] + str(tail) + html[at + len("</body>"):]


def diff_page(base_id: str, head_id: str, diff: Baseline, lang: str = "en") -> str:
    from evalspec.reporters.diff import html_section

    with speaking(lang):
        body = Markup("<p><b>{}</b> → <b>{}</b></p>{}").format(base_id, head_id, html_section(diff))
        return layout(words("view_diff_title"), body, nav(("/", words("view_back")), (f"/run/{base_id}", base_id),
                                                          (f"/run/{head_id}", head_id)))


def error_page(message: str, lang: str = "en") -> str:
    with speaking(lang):
        return layout(words("view_error_title"), Markup("<p>{}</p>").format(message), nav(("/", words("view_back"))))
