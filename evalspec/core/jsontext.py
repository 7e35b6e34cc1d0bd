"""JSON text from outside read fast and exactly: a dataset's rows and the answers of model and `http:`
bots (docs/en/scale-and-ray.md#throughput). The journal marks its own few such lines (`journal.encode`).

orjson reads a record many times faster than the standard library, but it reads an integer beyond
64 bits as a float (`18446744073709551617` would come back as `1.8446744073709552e+19`: a bot's id or
amount changed, a check on it failed) and it refuses NaN. A text with a run of 19 digits or more is
read by the standard library, as is one orjson refuses when `lenient`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_BYTES = re.compile(rb"\d{19}")  # 19 digits: at or past the edge of a 64-bit integer
_LONG_TEXT = re.compile(r"\d{19}")


def loads(data: bytes | bytearray | memoryview | str, lenient: bool = True) -> Any:
    """`json.loads(data)`, fast. `lenient`: what orjson refuses (NaN, Infinity) is read by the standard
    library too; else a ValueError (json.JSONDecodeError) says what is wrong."""
    if (_LONG_TEXT if isinstance(data, str) else _LONG_BYTES).search(data):  # type: ignore[arg-type]
        return json.loads(bytes(data) if isinstance(data, memoryview) else data)
    if not lenient:
        return orjson.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(bytes(data) if isinstance(data, memoryview) else data)
