"""What the promptfoo importer tests share: import a config through the CLI, read the suite it wrote, run it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from evalspec import run
from evalspec.app.cli.main import main
from evalspec.play.runner import RunOptions


def import_config(tmp_path: Path, config: dict[str, Any], *extra: str) -> tuple[int, str, str]:
    src = tmp_path / "pf"
    src.mkdir(exist_ok=True)
    (src / "promptfooconfig.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    result = CliRunner().invoke(main, ["import", "promptfoo", str(src / "promptfooconfig.yaml"),
                                       "-o", str(tmp_path / "out"), *extra])
    return result.exit_code, result.stdout, result.stderr


def written(tmp_path: Path) -> dict[str, Any]:
    data = yaml.safe_load((tmp_path / "out" / "promptfooconfig.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def played(tmp_path: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Import a config with promptfoo's `echo` provider (the reply is the message sent) and run it."""

    code, _, err = import_config(tmp_path, {"providers": ["echo"], **config})
    assert code == 0, err
    data = run([tmp_path / "out" / "promptfooconfig.yaml"],
               options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data
    return sorted(data["results"], key=lambda r: r["test_id"])
