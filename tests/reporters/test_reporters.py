"""Reports are rendered from run.json alone: JUnit, Markdown and a self-contained HTML page."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalspec import run
from evalspec.app.cli.main import main
from evalspec.play.runner import RunOptions
from evalspec.reporters.html import render_html
from evalspec.reporters.junit import build_junit, clean
from evalspec.reporters.markdown import MARKER, render_markdown

BOT = '''
def respond(messages, context):
    last = messages[-1]["content"]
    if "script" in last:
        return "<script>alert('x')</script> 加微信 \\x07"
    return "您好，" + last
'''


@pytest.fixture
def data(tmp_path: Path) -> dict:
    (tmp_path / "bot.py").write_text(BOT)
    path = tmp_path / "s.yaml"
    path.write_text("""\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: ok
    tags: [smoke]
    conversation: [{user: hi, assert: [{contains: 您好}]}]
  - id: leak
    conversation:
      - user: 你好
      - user: script please
    assert:
      - {not-contains: 微信, scope: each_turn, severity: critical}
  - id: known
    xfail: bug 7
    conversation: [{user: hi, assert: [{contains: nope}]}]
  - id: decay
    matrix: {d: [1, 2]}
    curve: d
    conversation: [{user: hi, assert: [{contains: "{{ d }}"}]}]
""")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


def test_junit_one_case_per_record_and_failure_names_turn_and_rule(data: dict) -> None:
    root = build_junit(data)
    cases = root.findall(".//testcase")
    assert [c.get("name") for c in cases] == ["ok", "leak", "known", "decay[d=1]", "decay[d=2]"]
    failure = cases[1].find("failure")
    assert failure is not None and "turn 2" in failure.get("message", "") and "not-contains" in failure.get("message", "")
    assert cases[2].find("skipped") is not None  # xfailed
    assert root.get("failures") == "1"
    ET.fromstring(ET.tostring(root))  # the control character was escaped: still well-formed XML


def test_clean_escapes_illegal_xml_characters() -> None:
    assert clean("a\x07b") == "a\\x07b"


def test_markdown_has_marker_gate_and_failures(data: dict) -> None:
    md = render_markdown(data)
    assert md.startswith(MARKER) and "gate failed" in md and "**leak**" in md and "**critical**" in md


def test_html_is_self_contained_and_escapes_replies(data: dict) -> None:
    page = render_html(data)
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "<svg" in page and "polyline" in page  # the decay curve
    assert 'data-status="xfailed"' in page and "smoke" in page


def test_report_command_rerenders_from_run_json(data: dict, tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(tmp_path / "run.json"), "--junit", str(tmp_path / "j.xml"),
                                       "--md", str(tmp_path / "r.md"), "--html", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert ET.parse(tmp_path / "j.xml").getroot().get("tests") == "5"
    assert (tmp_path / "r.md").read_text(encoding="utf-8").startswith(MARKER)
    assert "evalspec report" in (tmp_path / "r.html").read_text(encoding="utf-8")
