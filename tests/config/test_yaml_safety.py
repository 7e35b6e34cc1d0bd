"""Hostile or unusual YAML: alias bombs, merge keys, files that are not files (SPEC §8)."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from evalspec.config import load_suite
from evalspec.config.yamlfile import MAX_ALIAS_NODES, load_yaml
from evalspec.core.errors import ConfigError

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The 'billion laughs' file: each level is a list of `width` aliases to the level below."""
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    lines.append(f"providers: [{{id: bot, python: '{BOT}:respond'}}]")
    lines.append(f"tests: [{{id: t, conversation: [{{user: hi}}], vars: {{x: *a{levels - 1}}}}}]")
    return "\n".join(lines) + "\n"


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    return [str(p) for p in info.value.problems]


def test_an_alias_bomb_is_refused_without_being_expanded(tmp_path: Path) -> None:
    text = alias_bomb()
    assert len(text.encode()) < 1100
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    tracemalloc.start()
    found = problems(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(found) == 1 and "too many aliases" in found[0], found
    assert f"at most {MAX_ALIAS_NODES:,} per file" in found[0]
    assert peak < 20_000_000, f"the bomb was (partly) expanded: {peak:,} bytes"


def test_aliases_below_the_limit_are_expanded(tmp_path: Path) -> None:
    data, _ = load_yaml(alias_bomb(levels=3), "f.yaml")  # about 1,700 nodes added: allowed
    assert data["tests"][0]["vars"]["x"] == [[["lol"] * 9] * 9] * 9


def test_a_self_referencing_alias_is_a_clear_error() -> None:
    with pytest.raises(ConfigError) as info:
        load_yaml("a: &a [1, *a]\n", "f.yaml")
    assert "refers to the node that contains it (line 1)" in str(info.value)


def test_merge_keys_work_and_local_keys_override_merged_ones(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers: [{{id: bot, python: '{BOT}:respond'}}]
vars: &base {{city: 北京, name: 李雷}}
tests:
  - id: t
    vars:
      <<: *base
      city: 上海
    conversation: [{{user: "我在{{{{ city }}}}"}}]
""", encoding="utf-8")
    suite = load_suite(path)
    assert suite.tests[0].vars == {"city": "上海", "name": "李雷"}
    assert suite.lines is not None and suite.lines.line(("tests", 0, "vars", "city")) == 7


def test_the_earlier_of_several_merged_mappings_wins_and_local_duplicates_are_still_errors() -> None:
    data, _ = load_yaml("x: &x {p: 1, q: 2}\ny: &y {q: 3, r: 4}\nz:\n  <<: [*x, *y]\n  r: 5\n", "f.yaml")
    assert data["z"] == {"p": 1, "q": 2, "r": 5}
    with pytest.raises(ConfigError) as info:
        load_yaml("x: &x {p: 1}\nz:\n  <<: *x\n  q: 1\n  q: 2\n", "f.yaml")
    assert "f.yaml:5: z.q: duplicate key 'q'" in str(info.value)


def test_a_suite_path_that_is_not_a_regular_file_is_a_config_error(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    assert "is not a regular file" in problems(fifo)[0]  # reading it would block forever
    assert "is a folder" in problems(tmp_path)[0]
    assert "is not a regular file" in problems(Path("/dev/zero"))[0]
