"""Redaction by value: every secret in every string of a record, whatever the nesting."""

from __future__ import annotations

import os
import subprocess
import sys

from evalspec.core.redact import MASK, redact


def test_every_string_in_nested_records_is_masked_and_other_values_are_kept() -> None:
    record = {"id": "t-sk-secret-1", "score": 1.0, "pass": True, "error": None, "turn": 3,
              "transcript": [{"role": "user", "content": "my key is sk-secret-1, ok"}],
              "evidence": [["sk-secret-1", 7]], "sk-secret-1": "keys of a mapping are structure"}
    masked = redact(record, {"sk-secret-1"})
    assert masked == {"id": f"t-{MASK}", "score": 1.0, "pass": True, "error": None, "turn": 3,
                      "transcript": [{"role": "user", "content": f"my key is {MASK}, ok"}],
                      "evidence": [[MASK, 7]], "sk-secret-1": "keys of a mapping are structure"}
    assert record["transcript"][0]["content"] == "my key is sk-secret-1, ok"  # the original is left as it was


def test_a_secret_inside_a_longer_one_is_masked_after_it_and_short_values_never() -> None:
    text = "token abcdefghij, then abcdef alone; abc stays"
    assert redact(text, {"abcdef", "abcdefghij", "abc"}) == f"token {MASK}, then {MASK} alone; abc stays"
    assert redact({"a": [text]}, set()) == {"a": [text]}


def test_overlapping_secrets_of_one_length_are_masked_the_same_way_in_every_process() -> None:
    script = "from evalspec.core.redact import redact; print(redact('xx abcdefghi yy', {'defghi', 'abcdef', 'cdefgh'}))"
    outputs = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2, 3, 4)}
    assert len(outputs) == 1, outputs


def test_url_query_credentials_are_secrets_and_finding_them_is_linear() -> None:
    from evalspec.core.redact import query_secrets

    assert query_secrets("GET https://h.io/chat?lang=zh&access_token=abc123456#top, then") == {"abc123456"}
    assert query_secrets("'127.0.0.1:9/v1?API-KEY=k1234567&x=1' and /p?client_secret=s1234567") == \
        {"k1234567", "s1234567"}
    assert query_secrets("what is the key? key=value, /a?b=1, /a?token={{ t }}") == set()
    # a megabyte of slashes without a query (an inlined image) is read once, not once per slash
    assert query_secrets("data:image/png;base64," + "ab/" * 400_000 + " ?key=x =") == set()
