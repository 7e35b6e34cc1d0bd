"""Built-in small talk used to push facts further back in a conversation."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

DEFAULT_POOL: tuple[str, ...] = (
    "今天天气怎么样？",
    "给我讲个笑话吧。",
    "1+1 等于几？",
    "Python 是什么？",
    "推荐一本好看的书。",
    "周末适合去哪里玩？",
    "怎么煮出好吃的米饭？",
    "猫和狗哪个更好养？",
    "What's the weather like today?",
    "Tell me a joke.",
    "What is 1+1?",
    "What is Python?",
    "Can you recommend a good movie?",
    "How do I make a good cup of tea?",
    "What's a fun weekend hobby?",
    "Why is the sky blue?",
)


def pick_fillers(count: int, pool: list[str] | tuple[str, ...] | None, *, seed: int, test_id: str,
                 position: int, matrix: dict[str, Any], repeat: int) -> list[str]:
    """`count` messages from `pool`, the same every time for the same inputs."""
    pool = list(pool or DEFAULT_POOL)
    key = json.dumps([seed, test_id, position, matrix, repeat], ensure_ascii=False, sort_keys=True, default=str)
    rng = random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
    out: list[str] = []
    while len(out) < count:
        batch = pool[:]
        rng.shuffle(batch)
        out.extend(batch[: count - len(out)])
    return out
