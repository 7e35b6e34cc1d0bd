"""Redaction by value: every secret in every string of a record, whatever the nesting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}) for seed in (1, 2, 3, 4)]  # at once
    outputs = {proc.communicate(timeout=120)[0] for proc in procs}
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0] and len(outputs) == 1, outputs


def test_url_query_credentials_are_secrets_and_finding_them_is_linear() -> None:
    from evalspec.core.redact import query_secrets

    assert query_secrets("GET https://h.io/chat?lang=zh&access_token=abc123456#top, then") == {"abc123456"}
    assert query_secrets("'127.0.0.1:9/v1?API-KEY=k1234567&x=1' and /p?client_secret=s1234567") == \
        {"k1234567", "s1234567"}
    assert query_secrets("what is the key? key=value, /a?b=1, /a?token={{ t }}") == set()
    # a megabyte of slashes without a query (an inlined image) is read once, not once per slash
    assert query_secrets("data:image/png;base64," + "ab/" * 400_000 + " ?key=x =") == set()


def test_a_secret_name_is_one_whose_words_hold_a_credential_word() -> None:
    from evalspec.core.redact import is_secret_name

    for name in ("X-Auth-Token", "client_secret", "api_key", "apiKey", "APIKey", "apikey", "Authorization",
                 "COOKIE", "db_password", "passwd", "aws_credentials", "XAuthToken", "access-token", "key",
                 "pwd", "passphrase", "creds", "sig", "X-Amz-Signature"):
        assert is_secret_name(name), name
    for name in ("max_tokens", "keyword", "partial_credit", "monkey", "tokenizer", "author", "passage", "id"):
        assert not is_secret_name(name), name


def test_every_value_under_a_credential_key_at_any_depth_of_a_configuration_is_a_secret() -> None:
    from evalspec.core.redact import collect_written_secrets

    found: set[str] = set()
    collect_written_secrets({
        "providers": [
            {"id": "bot", "http": {"url": "http://h/x?lang=zh&access_token=qs-tok-1", "headers": {
                "Authorization": "Basic dXNlcjpwYXNzd29yZA==", "X-Api-Key": "k9z", "Accept": "text/plain"},
                "body": {"auth": {"client_secret": "cs-1", "nested": ["n-1"]}, "max_tokens": 512,
                         "pin": {"password": 123456}, "message": "{{ message }}"}}},
            {"id": "r", "rasa": {"url": "http://h:5005", "token": "rt-1"}},
            {"id": "t", "http": {"url": "http://h/", "headers": {"X-Token": "{{ token }}"}}}],
        "judge": {"model": "openai/j", "api_key": "jk-1"},
        "tests": [{"id": "t", "vars": {"password": "a test's data, no configuration"},
                   "attack": {"goal": "g", "model": {"model": "openai/a", "extra_headers": {"apiKey": "ak-1"}}},
                   "conversation": [{"user": "see http://h/p?key=uk-1", "assert": [
                       {"llm-rubric": "r", "provider": {"model": "openai/x", "api_key": "pk-1"}}]}]}],
    }, found)
    assert found == {"qs-tok-1", "Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "user:password",
                     "password", "k9z", "cs-1", "n-1", "123456", "rt-1", "jk-1", "ak-1", "uk-1", "pk-1"}


def test_encoded_forms_are_masked_and_short_secrets_only_where_they_stand() -> None:
    import json
    from urllib.parse import quote, quote_plus

    from evalspec.core.redact import mask_config

    secret = 'cs "q"/x+y 密钥'
    text = f"{quote(secret)} {quote(secret, safe='')} {quote_plus(secret)} {json.dumps(secret)} " \
           f"{json.dumps(secret, ensure_ascii=False)} k9z"
    assert redact(text, {secret, "k9z"}) == f'{MASK} {MASK} {MASK} "{MASK}" "{MASK}" k9z'
    shown = mask_config({"url": "http://h/x?key=abc&lang=zh", "headers": {"X-Api-Key": "k9z", "X-Env": "ab"},
                         "body": {"max_tokens": 512, "auth": {"id": 7, "who": "me"}}, "note": "k9z, ab"},
                        {"k9z", "ab"})
    assert shown == {"url": f"http://h/x?key={MASK}&lang=zh", "headers": {"X-Api-Key": MASK, "X-Env": MASK},
                     "body": {"max_tokens": 512, "auth": {"id": MASK, "who": MASK}}, "note": "k9z, ab"}


def test_every_value_from_the_environment_is_a_secret(tmp_path: Path) -> None:
    from evalspec.config.loader import load_suite

    path = tmp_path / "s.yaml"
    path.write_text("""\
providers: [{id: m, model: openai/m, api_base: "http://127.0.0.1:9/${TENANT}/v1"}]
vars: {region: "${REGION:-eu-west}", pin: "${PIN_TOKEN:-tok-default-1}"}
tests: [{id: t, conversation: [{user: "hi ${GREETING}"}]}]
""", encoding="utf-8")
    suite = load_suite(path, environ={"TENANT": "tenant-77", "GREETING": "你好呀朋友"})
    assert {"tenant-77", "你好呀朋友", "tok-default-1"} <= suite.secrets
    assert "eu-west" not in suite.secrets  # a default written in the suite is no secret unless its name says so


def test_a_credential_template_makes_the_variables_it_renders_secrets(tmp_path: Path) -> None:
    from evalspec.config.loader import load_suite

    path = tmp_path / "s.yaml"
    path.write_text("""\
vars: {token: tok-suite-1, lang: zh-cn}
providers:
  - id: b
    http: {url: "http://127.0.0.1:9/{{ lang }}", headers: {X-Api-Token: "{{ token }}", X-Lang: "{{ lang }}"}}
tests:
  - id: t
    matrix: {token: [tok-matrix-1, tok-matrix-2]}
    conversation: [{user: hi}]
  - id: u
    vars: {token: tok-test-1}
    conversation: [{user: "{{ lang }}"}]
""", encoding="utf-8")
    suite = load_suite(path, cli_vars={"token": "tok-cli-1"})
    assert {"tok-suite-1", "tok-matrix-1", "tok-matrix-2", "tok-test-1", "tok-cli-1"} <= suite.secrets
    assert "zh-cn" not in suite.secrets
