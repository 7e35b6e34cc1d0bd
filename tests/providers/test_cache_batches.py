"""The response cache writes `put`s in batches: this process reads them at once, another once written."""

from __future__ import annotations

from pathlib import Path

from evalspec.play.cluster import ShippingCache
from evalspec.providers import cache as cache_module
from evalspec.providers.cache import ResponseCache


def test_a_pending_entry_is_served_by_its_own_cache_before_it_is_written(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("k", {"content": "收到：你好"})
    other = ResponseCache(tmp_path)  # another process's view of the file
    assert cache.get("k") == {"content": "收到：你好"}
    assert other.get("k") is None  # not written yet: a miss there, never a wrong reply
    cache.flush()
    assert other.get("k") == {"content": "收到：你好"}
    cache.close()
    other.close()


def test_close_writes_the_pending_entries(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("k", {"content": "ok"})
    cache.close()
    assert ResponseCache(tmp_path).get("k") == {"content": "ok"}


def test_a_full_batch_is_written_without_a_flush(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    other = ResponseCache(tmp_path)
    for i in range(cache_module.BATCH):
        cache.put(f"k{i}", {"content": str(i)})
    assert other.get("k0") == {"content": "0"} and other.get(f"k{cache_module.BATCH - 1}") is not None


def test_put_many_is_written_at_once_with_what_is_pending(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)  # the Ray driver's: the cache reader, another process, serves it
    other = ResponseCache(tmp_path)
    cache.put("pending", {"content": "a"})
    cache.put_many([("shipped", {"content": "b"})])
    assert other.get("shipped") == {"content": "b"} and other.get("pending") == {"content": "a"}


def test_a_pending_entry_holding_a_secret_is_never_served(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.secrets = {"sk-秘密-12345"}
    cache.put("k", {"content": "the key is sk-秘密-12345"})
    assert cache.get("k") is None  # masked as stored: a miss, as from the file
    cache.close()
    assert "sk-秘密-12345" not in (tmp_path / "responses.sqlite").read_bytes().decode("utf-8", "replace")


def test_a_ray_workers_put_is_kept_for_its_next_conversations() -> None:
    shipping = ShippingCache(reader=None)  # no sqlite file of its own: `put` must not reach one
    shipping.put("k", {"content": "收到"})
    assert shipping.get("k") == {"content": "收到"}
