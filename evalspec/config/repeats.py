"""Ids given twice in a long file, found in a fixed small memory (docs/en/scale-and-ray.md#memory): the rows of a
`dataset:` (two rows, one instance id) and recorded conversations (two conversations, one id) both go
through `Repeats`.

A first pass marks each id's 8-byte hash in a bit table (32 to 64 bits for each line the files hold, at most
`_TABLE_BITS` bits: 16 MiB whatever the size) and keeps the hashes that found their bit already set: the
suspects, a real repeat or another id on the same bit. A second pass over the same ids, only when there are
suspects, keeps the first place of each suspect and gives every later one (`Repeats.found`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Generic, TypeVar

_TABLE_BITS = 1 << 27  # the largest bit table: 16 MiB

Place = TypeVar("Place")


def lines_in(paths: Sequence[Path]) -> int:
    """How many lines the files hold (read in blocks; an unreadable file counts none): at least as many as
    the rows or conversations they hold."""
    count = 0
    for path in paths:
        try:
            with path.open("rb") as fh:
                last = b"\n"
                while block := fh.read(1 << 16):
                    count += block.count(b"\n")
                    last = block[-1:]
                count += last != b"\n"
        except OSError:
            continue
    return count


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=8).digest()


class Repeats(Generic[Place]):
    """The ids of one pass (`add`), then the places of those given twice (`found`). `most`: how many ids
    the pass may give at most (`lines_in` the files), which sizes the table."""

    def __init__(self, most: int) -> None:
        self.bits = min(_TABLE_BITS, 1 << max(13, (32 * most).bit_length()))
        self.table: bytearray | None = bytearray(self.bits // 8)
        self.suspects: set[bytes] = set()

    def add(self, text: str) -> None:
        assert self.table is not None, "the first pass is over"
        digest = _digest(text)
        bit = int.from_bytes(digest[:4], "little") % self.bits
        if self.table[bit >> 3] & (1 << (bit & 7)):
            self.suspects.add(digest)
        self.table[bit >> 3] |= 1 << (bit & 7)

    def found(self, again: Iterable[tuple[str, Place]]) -> Iterator[tuple[str, Place, Place]]:
        """(id, its first place, this place) for each id given again, in the order of `again`: the ids of the
        first pass with their places, in the same order (read only when a suspect needs it)."""
        self.table = None  # the first pass is over: its table goes before the files are read again
        if not self.suspects:
            return
        first: dict[str, Place] = {}
        for text, place in again:
            if _digest(text) not in self.suspects:
                continue
            if text in first:
                yield text, first[text], place
            else:
                first[text] = place
