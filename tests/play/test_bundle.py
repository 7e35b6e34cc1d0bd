"""What a Ray worker gets of the driver's files: the suites' folders, packed and unpacked elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.config.loader import load_suites
from evalspec.core.errors import ConfigError
from evalspec.play import bundle
from evalspec.play.bundle import driver_path, mirrored, pack, remove, suite_environ, unpack


def project(tmp_path: Path) -> Path:
    (tmp_path / "suites").mkdir()
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "bot.py").write_text("from words import WORD\n\ndef reply(messages, ctx):\n"
                                             "    return WORD + messages[-1]['content']\n")
    (tmp_path / "bots" / "words.py").write_text("WORD = '收到：'\n")
    (tmp_path / "suites" / "data").mkdir()
    (tmp_path / "suites" / "data" / "facts.json").write_text("{}")
    for skipped in (".git", ".venv", "node_modules", "__pycache__"):
        (tmp_path / "suites" / skipped).mkdir()
        (tmp_path / "suites" / skipped / "big.bin").write_bytes(b"x" * 1000)
    (tmp_path / "unrelated").mkdir()
    (tmp_path / "unrelated" / "secret.txt").write_text("not needed by any suite")
    suite = tmp_path / "suites" / "chat.yaml"
    suite.write_text("providers:\n  - id: bot\n    python: ../bots/bot.py:reply\n"
                     "vars: {greeting: '${GREETING:-hi}'}\n"
                     "tests:\n  - id: hello\n    conversation:\n      - user: 你好\n")
    return suite


def test_a_bundle_holds_the_suites_folder_and_the_python_files_it_names_outside_it(tmp_path: Path) -> None:
    suite = project(tmp_path)
    root = unpack(pack([suite]))
    try:
        copied = {p.relative_to(mirrored(root, tmp_path)).as_posix() for p in root.rglob("*") if p.is_file()}
        assert copied == {"suites/chat.yaml", "suites/data/facts.json", "bots/bot.py", "bots/words.py"}
    finally:
        remove(root)
    assert not root.exists()


def test_suites_load_from_the_unpacked_copy_with_relative_references_intact(tmp_path: Path) -> None:
    suite = project(tmp_path)
    root = unpack(pack([suite]))
    try:
        copy = mirrored(root, suite)
        loaded = load_suites([copy], {}, suite_environ([suite]))
        assert loaded[0].path == copy and not copy.is_relative_to(tmp_path)
        assert (copy.parent / "../bots/bot.py").resolve().is_file()
        assert driver_path(root, copy) == suite.resolve()
    finally:
        remove(root)


def test_only_the_environment_variables_a_suite_names_travel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = project(tmp_path)
    monkeypatch.setenv("GREETING", "hello")
    monkeypatch.setenv("UNRELATED_TOKEN", "s3cret")
    assert suite_environ([suite]) == {"GREETING": "hello"}


def test_a_folder_too_large_to_ship_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = project(tmp_path)
    monkeypatch.setattr(bundle, "MAX_FILES", 2)
    with pytest.raises(ConfigError) as info:
        pack([suite])
    assert "too much to send to the Ray workers" in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_workers_are_dealt_round_the_live_nodes_one_per_cpu() -> None:
    from evalspec.play.ray_executor import worker_places

    nodes = [{"NodeID": "a", "Alive": True, "Resources": {"CPU": 2.0}},
             {"NodeID": "b", "Alive": True, "Resources": {"CPU": 1.0}},
             {"NodeID": "c", "Alive": False, "Resources": {"CPU": 8.0}}]
    assert worker_places(nodes, 64) == ["a", "b", "a"]
    assert worker_places(nodes, 2) == ["a", "b"]
    assert worker_places([{"NodeID": "a", "Alive": True, "Resources": {}}], 8) == ["a"]


def test_a_world_file_outside_the_suites_folder_travels_with_the_bundle(tmp_path: Path) -> None:
    """docs/en/world.md: a Ray worker plans the suite again, and reads its world file there."""
    suite = project(tmp_path)
    (tmp_path / "worlds").mkdir()
    (tmp_path / "worlds" / "dealer.json").write_text('{"visits": []}', encoding="utf-8")
    suite.write_text("world: {file: ../worlds/dealer.json}\n" + suite.read_text(encoding="utf-8"), encoding="utf-8")
    root = unpack(pack([suite]))
    try:
        unpacked = mirrored(root, suite)
        assert (unpacked.parent.parent / "worlds" / "dealer.json").read_text(encoding="utf-8") == '{"visits": []}'
        assert load_suites([unpacked])[0].world == {"file": "../worlds/dealer.json"}
    finally:
        remove(root)
