"""Plugins add assertion types and provider kinds that validate, run, schema and list all know:
from a file named in the suite, and from an installed package's entry points."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalspec.app.cli.main import main
from evalspec.config.model import describe_provider
from evalspec.core.plugins import may_declare_entry_points

PLUGIN = '''
from dataclasses import dataclass

from evalspec import assertion
from evalspec.extend.check import Check, Evidence
from evalspec.extend.provider import ProviderResponse
from evalspec.extend.kinds import provider_kind


@dataclass
class PoliteParams:
    """Polite words the reply should use."""

    words: list[str]
    min: int = 1


@assertion("polite", params=PoliteParams)
def polite(reply, spec, ctx):
    """The reply uses at least `min` of the polite words."""
    p = spec.params
    found = [w for w in p.words if w in reply.text]
    return Check.of(len(found) >= p.min, f"found {found}", [Evidence(reply.turn, reply.text)])


class Echo:
    def __init__(self, pid, prefix):
        self.id, self.prefix = pid, prefix

    def cache_identity(self):
        return {"echo": self.prefix}

    async def respond(self, messages, context):
        return ProviderResponse(self.prefix + messages[-1]["content"])


@provider_kind("echo", doc="answers with a prefix and the user's message", schema={
    "type": "object", "required": ["prefix"], "additionalProperties": False,
    "properties": {"prefix": {"type": "string"}}})
def build_echo(spec, suite):
    return Echo(spec.id, spec.config["echo"]["prefix"])


class Relay(Echo):
    """A system that keeps the conversation itself; says how many messages it was sent."""

    async def respond(self, messages, context):
        return ProviderResponse(f"{self.prefix}{len(messages)}")


def relay_target(raw):
    target = raw["relay"].get("to", "")
    return [] if target.startswith("bot-") else [(("relay", "to"), f"{target!r} does not start with bot-")]


def relay_greeting(spec, suite):
    return ["the greeting 'fail' cannot be sent"] if spec.config.get("greeting") == "fail" else []


@provider_kind("relay", doc="hands the message to another bot that keeps the conversation", schema={
    "type": "object", "required": ["to"], "additionalProperties": False, "properties": {"to": {"type": "string"}}},
    keys={"greeting": {"type": "string"}}, check=relay_target, preflight=relay_greeting,
    stateful=lambda config: True)
def build_relay(spec, suite):
    return Relay(spec.id, spec.config.get("greeting", ""))
'''

SUITE = """
{plugins}providers:
  - id: polite-bot
    echo: {{prefix: "您好，请问 "}}
tests:
  - id: greets
    conversation:
      - user: 在吗
        assert:
          - polite: {{words: [您好, 请]}}
  - id: thanks
    conversation:
      - user: hi
        assert:
          - polite: {{words: [谢谢], min: 1}}
"""




def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_a_plugin_file_named_in_the_suite_validates_runs_and_is_listed(
        tmp_path: Path, clean_registries: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "checks.py").write_text(PLUGIN, encoding="utf-8")
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE.format(plugins="plugins: [checks.py]\n"), encoding="utf-8")
    assert invoke("validate", str(suite)) == (0, "ok: 1 suite, 2 tests, 2 conversations planned\n")
    code, out = invoke("run", str(suite), "-o", "run.json", "--no-cache")
    assert code == 1, out
    results = {r["test_id"]: r for r in json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["results"]}
    assert results["greets"]["status"] == "passed" and results["thanks"]["status"] == "failed"
    assert results["greets"]["transcript"][-1]["content"] == "您好，请问 在吗"
    code, out = invoke("list", "assertions", "--plugin", "checks.py")
    assert code == 0 and "polite" in out and "at least `min` of the polite words" in out
    code, out = invoke("list", "providers", "--plugin", "checks.py")
    assert "echo" in out and "[plugin]" in out
    code, out = invoke("schema", "--plugin", "checks.py")
    schema = json.loads(out)
    value = schema["$defs"]["value_polite"]
    assert value["required"] == ["words"] and value["properties"]["min"] == {"type": "integer", "default": 1}
    assert schema["$defs"]["provider"]["properties"]["echo"]["required"] == ["prefix"]
    assert {"required": ["echo"]} in schema["$defs"]["provider"]["oneOf"]


def test_plugin_parameters_and_kinds_are_checked_like_built_in_ones(tmp_path: Path, clean_registries: None) -> None:
    (tmp_path / "checks.py").write_text(PLUGIN, encoding="utf-8")
    suite = tmp_path / "s.yaml"
    text = SUITE.format(plugins="plugins: [checks.py, missing.py]\n").replace("words: [谢谢]", "wrds: [谢谢]")
    suite.write_text(text.replace("echo: {prefix", "echo: {prefx"), encoding="utf-8")
    code, out = invoke("validate", str(suite))
    assert code == 2
    assert "s.yaml:2" in out and "missing.py" in out and "does not exist" in out
    assert "unknown key 'wrds'" in out and "did you mean 'words'" in out
    assert "prefx" in out


RELAY_SUITE = """
plugins: [checks.py]
providers:
  - id: r
    relay: {{to: {to}}}
    greeting: {greeting}
tests:
  - id: t
    conversation:
      - user: hi{history}
      - user: again
        assert:
          - contains: "{expected}"
"""


def test_a_plugin_kind_s_own_keys_checks_preflight_and_statefulness_work_like_built_in_ones(
        tmp_path: Path, clean_registries: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "checks.py").write_text(PLUGIN, encoding="utf-8")
    suite = tmp_path / "s.yaml"
    suite.write_text(RELAY_SUITE.format(to="nobody", greeting="fail", expected="x",
                                        history="\n      - assistant: earlier"), encoding="utf-8")
    code, out = invoke("validate", "s.yaml")
    assert code == 2
    assert "s.yaml:5: providers[0].relay.to: 'nobody' does not start with bot-" in out
    assert "provider 'r': the greeting 'fail' cannot be sent" in out
    assert "'assistant:' history cannot be sent to stateful relay provider 'r'" in out
    suite.write_text(RELAY_SUITE.format(to="bot-1", greeting="'n='", expected="n=", history=""), encoding="utf-8")
    assert invoke("validate", "s.yaml") == (0, "ok: 1 suite, 1 test, 1 conversation planned\n")
    code, out = invoke("run", "s.yaml", "-o", "run.json", "--no-cache")
    assert code == 0, out
    data = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert [m["content"] for m in data["results"][0]["transcript"] if m["role"] == "assistant"] == ["n=1", "n=3"]
    assert describe_provider(data["suites"][0]["providers"][0]) == "relay {'to': 'bot-1'}"
    props = json.loads(invoke("schema", "--plugin", "checks.py")[1])["$defs"]["provider"]["properties"]
    assert props["greeting"] == {"type": "string"} and props["relay"]["required"] == ["to"]


def test_an_installed_package_s_entry_points_are_known_without_naming_them(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "evalspec_demo_plugin").mkdir(parents=True)
    (site / "evalspec_demo_plugin" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    dist = site / "evalspec_demo_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: evalspec-demo-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[evalspec.assertions]\npolite = evalspec_demo_plugin\n\n"
                                           "[evalspec.providers]\necho = evalspec_demo_plugin\n")
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE.format(plugins=""), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONIOENCODING": "utf-8"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "evalspec", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)

    assert cli("validate", str(suite)).returncode == 0
    ran = cli("run", str(suite), "-o", "run.json", "--no-cache")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    statuses = [r["status"] for r in json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["results"]]
    assert statuses == ["passed", "failed"]
    assert "echo" in cli("list", "providers").stdout and "polite" in cli("list", "assertions").stdout
    assert "value_polite" in json.loads(cli("schema").stdout)["$defs"]


def test_the_quick_look_for_entry_points_finds_a_declaring_distribution_and_only_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    other = site / "other_tool-1.0.dist-info"
    other.mkdir(parents=True)
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other_tool:main\n", encoding="utf-8")
    (site / "flat-0.1.egg-info").write_text("Metadata-Version: 1.0\n", encoding="utf-8")  # an egg-info file
    monkeypatch.setattr(sys, "meta_path", [importlib.machinery.PathFinder])  # no other finder of distributions
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing")])
    assert may_declare_entry_points() is False
    plugin = site / "evalspec_demo_plugin-0.1.dist-info"
    plugin.mkdir()
    (plugin / "entry_points.txt").write_text("[evalspec.providers]\necho = evalspec_demo_plugin\n", encoding="utf-8")
    assert may_declare_entry_points() is True
    monkeypatch.setattr(sys, "path", [str(tmp_path / "archive.zip")])
    (tmp_path / "archive.zip").write_bytes(b"PK")  # not read here: importlib.metadata decides
    assert may_declare_entry_points() is True


ENDINGS = {"raises": ('raise RuntimeError("插件坏了")', "RuntimeError: 插件坏了"),
           "sys.exit": ("import sys; sys.exit(0)", "SystemExit: 0"),
           "os._exit": ("import os; os._exit(0)", "ended evalspec's process: it exited with status 0")}

CALLED_SUITE = """{plugins}providers: [{{id: b, python: bot.py:respond}}]
tests:
  - id: t
    conversation: [{{user: hi}}]
"""

RECORDING_BOT = '''
from pathlib import Path

def respond(messages, context):
    Path(__file__).with_name("called").write_text("yes")
    return "ok"
'''


def guarded_cli(where: Path, env: dict[str, str], command: str) -> subprocess.CompletedProcess[str]:
    args = ["run", "s.yaml", "-o", "run.json", "--no-cache"] if command == "run" else ["validate", "s.yaml"]
    return subprocess.run([sys.executable, "-m", "evalspec", *args], cwd=where, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the guarded load needs POSIX fork")
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_an_installed_plugin_that_raises_or_exits_at_import_is_a_config_error_naming_it(
        tmp_path: Path, ending: str) -> None:
    code, said = ENDINGS[ending]
    site = tmp_path / "site"
    (site / "evalspec_bad_plugin").mkdir(parents=True)
    (site / "evalspec_bad_plugin" / "__init__.py").write_text(code + "\n", encoding="utf-8")
    dist = site / "evalspec_bad_plugin-0.3.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: evalspec-bad-plugin\nVersion: 0.3\n")
    (dist / "entry_points.txt").write_text("[evalspec.assertions]\nbad = evalspec_bad_plugin\n")
    (tmp_path / "bot.py").write_text(RECORDING_BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(CALLED_SUITE.format(plugins=""), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "PYTHONIOENCODING": "utf-8"}
    for command in ("validate", "run"):
        proc = guarded_cli(tmp_path, env, command)
        assert proc.returncode == 2, f"{command}: {proc.stdout}{proc.stderr}"  # before: 1 (a traceback) or 0
        assert "Traceback" not in proc.stderr and "nothing was run" in proc.stderr
        assert str(dist / "entry_points.txt") in proc.stderr, proc.stderr  # the distribution that declares it
        assert "evalspec-bad-plugin 0.3" in proc.stderr and "bad = evalspec_bad_plugin" in proc.stderr
        assert said in proc.stderr, proc.stderr
    assert not (tmp_path / "called").exists() and not (tmp_path / "run.json").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the guarded load needs POSIX fork")
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_plugin_file_that_raises_or_exits_at_import_is_a_config_error_at_its_line(
        tmp_path: Path, ending: str) -> None:
    code, said = ENDINGS[ending]
    (tmp_path / "plug.py").write_text(code + "\n", encoding="utf-8")
    (tmp_path / "bot.py").write_text(RECORDING_BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(CALLED_SUITE.format(plugins="plugins:\n  - plug.py\n"), encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    for command in ("validate", "run"):
        proc = guarded_cli(tmp_path, env, command)
        assert proc.returncode == 2, f"{command}: {proc.stdout}{proc.stderr}"  # before: 0 for os._exit
        assert "s.yaml:2: plugins[0]: plugin 'plug.py'" in proc.stderr and str(tmp_path / "plug.py") in proc.stderr
        assert said in proc.stderr and "nothing was run" in proc.stderr, proc.stderr
    assert not (tmp_path / "called").exists() and not (tmp_path / "run.json").exists()
