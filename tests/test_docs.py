"""The manual (docs/ and the README) is accurate: every YAML example validates with the real loader (a
block marked `<!-- invalid -->` fails with the messages the page shows), the generated references are
the ones the code generates, and every assertion type, provider kind and command has its entry."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from evalspec.app.cli.main import main
from evalspec.extend.kinds import PROVIDER_KINDS, provider_kinds
from evalspec.extend.registry import REGISTRY, all_type_names

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
FIXTURES = ROOT / "tests" / "data" / "docs"
# key variables the examples name: validate checks that a model's key is set, as run does
FAKE_KEYS = {name: "sk-docs-example-not-used" for name in (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY", "DASHSCOPE_API_KEY", "ZHIPUAI_API_KEY",
    "MOONSHOT_API_KEY", "BOT_TOKEN")}
# what an example that is only part of a suite is validated inside
HARNESS: dict[str, Any] = {
    "providers": [{"id": "demo-bot", "python": "../providers/demo_bot.py:respond"},
                  {"id": "demo-agent", "python": "../providers/demo_agent.py:respond",
                   "tools": "../providers/demo_agent.py:TOOLS"}],
    "judge": "openai/gpt-4o-mini", "simulator": "openai/gpt-4o-mini",
    "embedder": "openai/text-embedding-3-small",
}
CONVERSATION = [{"user": "这台瑶光是哪年的车？", "label": "no_signal"},
                {"user": "能分期吗？首付多少？", "label": "purchase_signal"},
                {"user": "好的，那我周六上午过去看看", "label": "accepted"}]
TEST_KEYS = {"conversation", "simulate", "attack", "matrix", "repeat", "curve"}


@dataclass
class Block:
    page: Path
    line: int
    text: str
    markers: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # for an invalid block: the error lines the page shows

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def yaml_blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    blocks = []
    for i, fence in enumerate(fences):
        if fence.group(1) != "yaml":
            continue
        before = text[: fence.start()].rstrip("\n").splitlines()
        markers = []
        while before and re.fullmatch(r"<!--\s*(.*?)\s*-->", before[-1].strip()):
            markers.append(re.fullmatch(r"<!--\s*(.*?)\s*-->", before.pop().strip()).group(1))  # type: ignore[union-attr]
        block = Block(page, text[: fence.start()].count("\n") + 2, fence.group(2), markers)
        if "invalid" in markers and i + 1 < len(fences):
            block.shown = [ln for ln in fences[i + 1].group(2).splitlines() if ln.startswith("error ")]
        blocks.append(block)
    return blocks


BLOCKS = [b for page in PAGES for b in yaml_blocks(page)]


def as_suite(block: Block) -> dict[str, Any] | None:
    """The suite a block is, or is part of (None: not a suite, e.g. a workflow)."""
    data = yaml.safe_load(block.text)
    if isinstance(data, dict) and "jobs" in data:
        return None
    if isinstance(data, dict) and "tests" in data:
        return data if "providers" in data or "targets" in data else {**HARNESS, **data}
    if isinstance(data, dict) and TEST_KEYS & set(data):
        return {**HARNESS, "tests": [data]}
    if isinstance(data, dict):  # providers, a judge, defaults ...: a suite without its tests
        return {**HARNESS, **data, "tests": [{"id": "example", "conversation": CONVERSATION}]}
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        if all(TEST_KEYS & set(item) for item in data):
            return {**HARNESS, "tests": data}
        world = {"world": {"visits": []}} if any(set(i) & {"world", "world-matches", "world-unchanged"} for i in data) else {}
        return {**HARNESS, **world, "tests": [{"id": "example", "conversation": CONVERSATION, "assert": data}]}
    raise AssertionError(f"{block.name}: cannot tell what this YAML is; mark it <!-- not a suite -->")


@pytest.fixture
def suite_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """suites/ beside a copy of providers/, as in the repository, with the examples' fixture files."""
    shutil.copytree(ROOT / "providers", tmp_path / "providers")
    shutil.copytree(FIXTURES, tmp_path / "suites")
    for name, value in FAKE_KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path / "suites")
    return tmp_path / "suites"


@pytest.fixture
def registries() -> Any:
    """A plugin an example loads registers its types: the registries are put back afterwards."""
    all_type_names(), provider_kinds()  # loaded on first use: load them before taking the copy
    assertions, kinds = dict(REGISTRY), dict(PROVIDER_KINDS)
    yield
    REGISTRY.clear()
    REGISTRY.update(assertions)
    PROVIDER_KINDS.clear()
    PROVIDER_KINDS.update(kinds)


def validate(suite_dir: Path, name: str, text: str) -> tuple[int, str]:
    (suite_dir / name).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", name])
    return result.exit_code, result.output


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_every_yaml_example_validates_as_the_page_says(block: Block, suite_dir: Path, registries: Any) -> None:
    needs = [m for m in block.markers if m.startswith("needs:")]
    if needs:
        pytest.skip(f"{block.name}: {needs[0]} (lands with another branch; then remove the marker)")
    if "not a suite" in block.markers:
        return
    if "invalid" in block.markers:
        assert block.shown, f"{block.name}: an invalid example is followed by the error lines validate prints"
        name = re.match(r"error ([^:\s]+)", block.shown[0]).group(1)  # type: ignore[union-attr]
        code, output = validate(suite_dir, name, block.text)
        assert code == 2, output
        for line in block.shown:
            assert line in output.splitlines(), f"{block.name}: the page shows\n{line}\nvalidate says\n{output}"
        return
    suite = as_suite(block)
    assert suite is not None, f"{block.name}: a workflow or other non-suite YAML is marked <!-- not a suite -->"
    whole = suite == yaml.safe_load(block.text)  # a whole suite is validated as written (its lines, its comments)
    text = block.text if whole else yaml.safe_dump(suite, allow_unicode=True)
    code, output = validate(suite_dir, "example.yaml", text)
    assert code == 0, f"{block.name}:\n{output}"


def test_an_invalid_example_must_fail_and_a_wrong_message_is_caught(suite_dir: Path) -> None:
    """The harness itself: a valid suite passes, and a message the loader does not print is noticed."""
    good = "providers: [{id: b, python: ../providers/demo_bot.py:respond}]\ntests: [{id: t, conversation: [{user: hi}]}]\n"
    assert validate(suite_dir, "good.yaml", good)[0] == 0
    code, output = validate(suite_dir, "bad.yaml", good.replace("conversation", "conversaton"))
    assert code == 2 and "error bad.yaml:2: tests[0].conversaton: unknown key 'conversaton'" in output
    assert "error bad.yaml:2: tests[0].conversaton: unknown key 'conversation'" not in output


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("evalspec_docs_generate", DOCS / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_generated_references_are_committed_as_generated() -> None:
    gen = generator()
    for path, build in gen.PAGES.items():
        assert path.read_text(encoding="utf-8") == build(), "run: python docs/generate.py"


def test_every_assertion_type_has_a_reference_entry_with_an_example_that_validates(suite_dir: Path) -> None:
    gen = generator()
    page = gen.ASSERTIONS_PAGE.read_text(encoding="utf-8")
    names = all_type_names()
    assert not [n for n in names if f"## `{n}`" not in page], "run: python docs/generate.py"
    assert not [n for n in names if not REGISTRY[n].example], "each type needs @assertion(..., example=...)"
    items = [yaml.safe_load(REGISTRY[n].example)[0] for n in names]
    whole = [item for item in items if TEST_KEYS & set(item)]  # a journey check's example is its journey
    suite = {**HARNESS, "world": {"visits": []},  # the world checks read one (docs/en/world.md)
             "tests": [{"id": "example", "conversation": CONVERSATION,
                        "assert": [item for item in items if not TEST_KEYS & set(item)]}, *whole]}
    code, output = validate(suite_dir, "reference.yaml", yaml.safe_dump(suite, allow_unicode=True))
    assert code == 0, output
    for name, item in zip(names, items):
        item = item["assert"][0] if TEST_KEYS & set(item) else item
        assert name in item or item.get("type") == name, f"the example of {name} is of another type"


def test_every_provider_kind_has_a_section_in_the_providers_page() -> None:
    page = (DOCS / "en" / "providers.md").read_text(encoding="utf-8")
    missing = [kind for kind in provider_kinds() if f"## `{kind}:`" not in page]
    assert not missing, f"docs/en/providers.md has no '## `KIND:`' section for {missing}"


def test_every_command_is_in_the_cli_reference_and_in_the_manual() -> None:
    gen = generator()
    reference = gen.CLI_PAGE.read_text(encoding="utf-8")
    manual = "\n".join(p.read_text(encoding="utf-8") for p in PAGES if p != gen.CLI_PAGE)
    for path, _ctx in gen.commands():
        assert f"## `{path}`" in reference, f"{path}: run python docs/generate.py"
        assert f"`{path}" in manual or f"{path} " in manual, f"no page but the reference mentions `{path}`"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_links_point_at_files_in_the_repository() -> None:
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.exists() and ROOT in path.parents, f"{page.relative_to(ROOT)}: broken link {target}"
    assert "SPEC.md" not in (ROOT / "README.md").read_text(encoding="utf-8")


def test_getting_started_exists_in_chinese_and_english_and_every_page_is_in_the_site() -> None:
    assert (DOCS / "zh" / "getting-started.md").read_text(encoding="utf-8").startswith("# 快速开始\n")
    assert (DOCS / "en" / "getting-started.md").read_text(encoding="utf-8").startswith("# Getting started\n")
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        assert str(page.relative_to(DOCS)) in nav, f"mkdocs.yml nav does not list {page.relative_to(DOCS)}"


# the subjects docs/zh/ covers (SPEC §32): the page, and a word its title holds
ZH_SUBJECTS = {"suite-format.md": "套件格式", "rule-self-tests.md": "规则自测", "judges.md": "评判模型",
               "recorded-conversations.md": "对话记录", "coverage.md": "覆盖矩阵", "review.md": "人工复核",
               "ci.md": "持续集成", "troubleshooting.md": "常见问题",
               "statistics.md": "通过率有多可信", "agents.md": "模拟旅程"}
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("name", sorted(ZH_SUBJECTS))
def test_each_chinese_subject_has_its_page_linked_from_getting_started_with_a_dealer_example(name: str) -> None:
    """A page in Chinese (most letters of its prose are CJK), linked from 快速开始, with an English twin, and a
    worked dealer-bot suite; its YAML blocks are validated by test_every_yaml_example_validates_as_the_page_says."""
    page = DOCS / "zh" / name
    assert page.exists(), f"docs/zh/{name} is missing"
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# ") and ZH_SUBJECTS[name] in text.splitlines()[0], f"docs/zh/{name}: its title"
    start = DOCS / "zh" / "getting-started.md"
    linked = {(start.parent / target.split("#")[0]).resolve() for target in LINK.findall(start.read_text(encoding="utf-8"))}
    assert page.resolve() in linked, f"docs/zh/getting-started.md does not link {name}"
    assert f"](../en/{name})" in text, f"docs/zh/{name} links its English page"
    prose = re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))
    assert len(CJK.findall(prose)) > len(re.findall(r"[A-Za-z]", prose)), f"docs/zh/{name} is not written in Chinese"
    blocks = yaml_blocks(page)
    assert {b.name for b in blocks} <= {b.name for b in BLOCKS}
    examples = [b for b in blocks if not {"invalid", "not a suite"} & set(b.markers)]
    assert any(re.search("瑶光|分期|到店|试驾", b.text) for b in examples), f"docs/zh/{name}: no dealer-bot suite example"


def test_the_site_builds_without_warnings(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(str(ROOT / "mkdocs.yml"), site_dir=str(tmp_path / "site"), strict=True))
    assert (tmp_path / "site" / "zh" / "getting-started" / "index.html").exists()


def test_the_plugin_the_manual_shows_is_the_one_its_example_loads() -> None:
    page = (DOCS / "en" / "python-api.md").read_text(encoding="utf-8")
    assert "```python\n" + (FIXTURES / "polite_words.py").read_text(encoding="utf-8") + "```" in page


def test_the_manual_names_the_action_as_init_writes_it() -> None:
    from evalspec.authoring.scaffold import ACTION, WORKFLOW

    assert "```yaml\n" + WORKFLOW + "```" in (DOCS / "en" / "ci.md").read_text(encoding="utf-8")
    for page in PAGES:
        for used in re.findall(r"uses: (evalspec/evalspec@\S+)", page.read_text(encoding="utf-8")):
            assert used == ACTION, f"{page.relative_to(ROOT)}: uses {used}, init writes {ACTION}"
