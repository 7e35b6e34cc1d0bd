"""The HTML report as a browser shows it (headless Chromium, JavaScript on): counts, URL filters, <mark>, 420 px."""

from __future__ import annotations

import html as html_lib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalspec.reporters.html import render_html
from evalspec.reporters.vocabulary import COUNT_LABELS

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--hide-scrollbars", "--allow-file-access-from-files"]
# A headless window is at least 500 px wide, so the report is opened in a frame of the width under test;
# once its script ran, what it shows is written into the harness page for --dump-dom to carry out.
HARNESS = """<!doctype html><html><body style="margin:0">
<iframe id="f" src="{src}" style="width:{width}px;height:900px;border:0"></iframe>
<script>document.getElementById('f').addEventListener('load', function(){{setTimeout(function(){{
var doc=document.getElementById('f').contentDocument, win=document.getElementById('f').contentWindow;
var shown=[].filter.call(doc.querySelectorAll('details.test'),function(d){{return !d.hidden;}});
var cards={{}};doc.querySelectorAll('[data-count]').forEach(function(c){{cards[c.dataset.count]=+c.querySelector('b').textContent;}});
var p=document.createElement('pre');p.id='probe';p.textContent=JSON.stringify({{
 scrollWidth:doc.documentElement.scrollWidth, innerWidth:win.innerWidth, cards:cards,
 shown:shown.map(function(d){{return d.dataset.status+' '+d.dataset.tags;}}),
 status:doc.getElementById('f-status').value, tag:doc.getElementById('f-tag').value,
 passRate:doc.getElementById('pass-rate').textContent,
 marked:[].map.call(doc.querySelectorAll('.msg.assistant mark'),function(m){{return m.parentNode.innerHTML;}}),
 scripts:doc.querySelectorAll('.msg script').length,
 tables:[].map.call(doc.querySelectorAll('table'),function(t){{var box=t.closest('.scroll')||t.parentNode;
  return (t.className||t.closest('section')&&t.closest('section').id||'table')+' '+(box.scrollWidth-box.clientWidth);}}),
 narrowest:[].map.call(doc.querySelectorAll('table.suites, table.stack, #baseline table'),function(t){{
  return Math.min.apply(null,[].map.call(t.querySelectorAll('td'),function(c){{return c.getBoundingClientRect().width;}}));}})}});
document.body.appendChild(p);}},100);}});</script></body></html>"""

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (installed by .ci/run)")


def browse(tmp_path: Path, html: str, fragment: str = "", width: int = 1400) -> dict[str, Any]:
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    harness = tmp_path / "harness.html"
    harness.write_text(HARNESS.format(src="report.html" + fragment, width=width), encoding="utf-8")
    proc = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                           f"--window-size={max(width, 500) + 20},1000", "--virtual-time-budget=3000", "--dump-dom",
                           harness.as_uri()], capture_output=True, text=True, timeout=90)
    found = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    return dict(json.loads(html_lib.unescape(found.group(1))))


def test_counts_shown_equal_run_json(tmp_path: Path, fixed_run: dict[str, Any]) -> None:
    probe = browse(tmp_path, render_html(fixed_run))
    assert probe["cards"] == {label: fixed_run["summary"][key] for key, label in COUNT_LABELS}
    assert probe["passRate"] == "25%"
    assert len(probe["shown"]) == len(fixed_run["verdicts"])


def test_a_filter_in_the_url_fragment_applies_on_load(tmp_path: Path, fixed_run: dict[str, Any]) -> None:
    probe = browse(tmp_path, render_html(fixed_run), "#status=failed&tag=sales")
    assert probe["status"] == "failed" and probe["tag"] == "sales"
    assert len(probe["shown"]) == fixed_run["summary"]["failed"]
    assert all(s.startswith("failed ") and "|sales|" in s for s in probe["shown"])


def test_a_failing_turn_shows_the_reply_with_the_match_marked(tmp_path: Path, fixed_run: dict[str, Any]) -> None:
    probe = browse(tmp_path, render_html(fixed_run))
    assert any("可以直接打我的手机 <mark>13912345678</mark>" in m for m in probe["marked"]), probe["marked"]
    assert any("<mark>预约</mark>" in m for m in probe["marked"])
    assert probe["scripts"] == 0 and any("&lt;script&gt;alert(1)&lt;/script&gt;" in m for m in probe["marked"])


def test_reads_on_a_420_px_screen_without_horizontal_scroll(tmp_path: Path, fixed_run: dict[str, Any]) -> None:
    probe = browse(tmp_path, render_html(fixed_run), width=420)
    assert probe["innerWidth"] <= 420 and probe["scrollWidth"] <= 420, probe


def _with_a_baseline(run: dict[str, Any]) -> dict[str, Any]:
    """The fixed run against a base in which its failures passed: every baseline row is a regression."""
    import copy

    from evalspec.results.compare import compare_runs

    base = copy.deepcopy(run)
    for v in base["verdicts"]:
        if v["category"] in ("failed", "error"):
            v.update(status="passed", category="passed", critical_failed=False)
    run["baseline"] = compare_runs(base, run, "base.json", "head.json")
    return run


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_table_reads_at_420_px_without_scrolling_sideways(tmp_path: Path, fixed_run: dict[str, Any],
                                                                 lang: str) -> None:
    """SPEC §21: the suites, baseline and metrics tables fit the screen: neither the page nor a table's
    own box scrolls sideways (at 1400 px they are ordinary tables)."""
    run = _with_a_baseline(fixed_run)
    assert run["baseline"]["available"] and any(r["category"] != "unchanged" for r in run["baseline"]["rows"])
    probe = browse(tmp_path, render_html(run, lang=lang), width=420)
    assert probe["scrollWidth"] <= 420, probe
    sideways = [t for t in probe["tables"] if int(t.rsplit(" ", 1)[1]) > 1]
    assert not sideways, sideways
    assert len(probe["narrowest"]) == 4 and min(probe["narrowest"]) >= 200, probe["narrowest"]  # no word-per-line column


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_attack_and_second_opinion_tables_read_at_420_px(tmp_path: Path, sections_run: dict[str, Any],
                                                             lang: str) -> None:
    """The attack and second-opinion tables become cards too: no sideways scroll, no column squeezed to a
    word per line (攻破轮次 broke over two lines, a red line's regex over three)."""
    probe = browse(tmp_path, render_html(sections_run, lang=lang), width=420)
    assert probe["scrollWidth"] <= 420, probe
    sideways = [t for t in probe["tables"] if int(t.rsplit(" ", 1)[1]) > 1]
    assert not sideways, sideways
    assert len(probe["narrowest"]) == 3 and min(probe["narrowest"]) >= 200, probe["narrowest"]  # suites, attacks, review
