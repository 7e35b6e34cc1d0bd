"""Built-in small talk used to push facts further back in a conversation."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping

CHINESE_POOL: tuple[str, ...] = (
    "今天天气怎么样？",
    "给我讲个笑话吧。",
    "1+1 等于几？",
    "Python 是什么？",
    "推荐一本好看的书。",
    "周末适合去哪里玩？",
    "怎么煮出好吃的米饭？",
    "猫和狗哪个更好养？",
)
ENGLISH_POOL: tuple[str, ...] = (
    "What's the weather like today?",
    "Tell me a joke.",
    "What is 1+1?",
    "What is Python?",
    "Can you recommend a good movie?",
    "How do I make a good cup of tea?",
    "What's a fun weekend hobby?",
    "Why is the sky blue?",
)
DEFAULT_POOL: tuple[str, ...] = CHINESE_POOL + ENGLISH_POOL
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")


def pool_for(user_texts: list[str]) -> tuple[str, ...]:
    """docs/en/reports-and-gate.md#outputs: fillers follow the conversation's language — Chinese when the scripted user turns are
    mostly CJK characters (of their letters, template tags left out), else English."""
    text = _TEMPLATE.sub("", "".join(user_texts))
    letters = [c for c in text if c.isalpha()]
    cjk = sum(1 for c in letters if _CJK.match(c))
    return CHINESE_POOL if letters and cjk * 2 > len(letters) else ENGLISH_POOL


def pick_fillers(count: int, pool: list[str] | tuple[str, ...] | None, *, seed: int, test_id: str,
                 position: int, matrix: Mapping[str, object], repeat: int, user_texts: list[str] | None = None) -> list[str]:
    """`count` messages from `pool` (default: the built-in pool in the language of `user_texts`),
    the same every time for the same inputs."""
    pool = list(pool or pool_for(user_texts or []))
    key = json.dumps([seed, test_id, position, matrix, repeat], ensure_ascii=False, sort_keys=True, default=str)
    rng = random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
    out: list[str] = []
    while len(out) < count:
        batch = pool[:]
        rng.shuffle(batch)
        out.extend(batch[: count - len(out)])
    return out
