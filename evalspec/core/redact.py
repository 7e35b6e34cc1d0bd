"""What a secret is, and masking it everywhere evalspec writes (docs/en/suite-format.md#secrets).

The one owner of the rule: a value is a secret when it came from `${ENV}`, or when it stands, at any
depth of a provider, judge, simulator, attacker or embedder configuration (`http:` and `rasa:` ones
included), under a key one of whose words is a credential word (`is_secret_name`), or as a URL query
value under such a name. Outputs mask secrets by value, with their URL-encoded and JSON-escaped forms
(`redact`); a configuration shown in an output is also masked where its secrets stand (`mask_config`),
so a value too short to be searched for elsewhere is still `***` there."""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

from evalspec.core.errors import Problem
from evalspec.core.model_keys import KEY_ENV, split_model

MASK = "***"
MIN_SECRET_LENGTH = 4  # shorter values are masked where they stand, never searched for in other text

SECRET_WORDS = frozenset({"token", "key", "apikey", "secret", "password", "passwd", "auth", "authorization",
                          "cookie", "credential", "credentials",
                          # beyond the documented list, the spellings configs and signed URLs use too
                          "pwd", "passphrase", "creds", "sig", "signature"})
# the words of a name: split on anything not a letter or digit, then on case changes (`XAuthToken`, `APIKey`)
_NAME_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# the keys under which a mapping is a configuration that may hold credentials, wherever it stands
CONFIG_ROOTS = frozenset({"providers", "judge", "simulator", "embedder", "attacker"})
CONFIG_KINDS = frozenset({"model", "http", "rasa", "python", "api_key", "api_base"})


def is_secret_name(name: str) -> bool:
    """`X-Auth-Token`, `client_secret`, `api_key`, `apiKey`, `Authorization` are; `max_tokens`,
    `keyword`, `partial_credit` are not: one of the name's words must be a credential word."""
    return any(word.lower() in SECRET_WORDS for word in _NAME_WORD.findall(name))


def redact(value: Any, secrets: set[str]) -> Any:
    """Replace every occurrence of every secret inside `value` (recursively), and of its URL-encoded and
    JSON-escaped forms: the longest first, so a secret that contains another is masked whole. Without
    a secret, `value` itself comes back."""
    if not secrets:  # most runs: every record, and parts of it, come here
        return value
    ordered = _searched(frozenset(secrets))
    return _masked(value, ordered) if ordered else value


@lru_cache(maxsize=64)
def _searched(secrets: frozenset[str]) -> tuple[str, ...]:
    forms = {form for secret in secrets if len(secret) >= MIN_SECRET_LENGTH for form in encoded_forms(secret)}
    return tuple(sorted(forms, key=lambda s: (-len(s), s)))


def encoded_forms(secret: str) -> set[str]:
    """The secret as written and as it reappears URL-encoded (a query, a form) or JSON-escaped (a bot
    echoing its request in its reply, an error quoting a body)."""
    return {secret, quote(secret), quote(secret, safe=""), quote_plus(secret),
            json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}


_UNMASKED = frozenset({int, float, bool, type(None)})  # no text inside: kept as they are, without a call


def _masked(value: Any, ordered: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        for secret in ordered:
            if secret in value:
                value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {k: v if type(v) in _UNMASKED else _masked(v, ordered) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _UNMASKED else _masked(v, ordered) for v in value]
    return value


def redact_problems(problems: Iterable[Problem], secrets: set[str]) -> list[Problem]:
    """Validation problems with every secret masked: they quote values (a URL, a template) that may hold one."""
    return [replace(p, message=redact(p.message, secrets)) for p in problems]


_WORD = re.compile(r"[^\s'\"<>]+")  # a URL is one run of these


def _query_pairs(text: str) -> Iterator[tuple[str, str]]:
    """The `name=value` pairs of every URL query in `text`: a URL being a word with a '/' before its '?'."""
    if "?" not in text or "=" not in text:
        return
    for word in _WORD.findall(text):
        path, mark, query = word.partition("?")
        if not mark or "/" not in path:
            continue
        for pair in query.split("#", 1)[0].split("&"):
            name, equals, value = pair.partition("=")
            if equals and value:
                yield name, value


def _is_template(text: str) -> bool:
    return "{{" in text or "{%" in text


def query_secrets(text: str) -> set[str]:
    """The values of a URL query's credential parameters (`?access_token=...`, `&api-key=...`) in `text`."""
    return {value for name, value in _query_pairs(text) if is_secret_name(name) and not _is_template(value)}


def mask_query(text: str) -> str:
    """`text` with the value of every credential parameter of its URL queries replaced by `***`."""
    for name, value in _query_pairs(text):
        if is_secret_name(name):
            text = text.replace(f"{name}={value}", f"{name}={MASK}")
    return text


def _leaves(config: Any, under_secret: bool = False) -> Iterator[tuple[Any, bool]]:
    """Every leaf value of a configuration, and whether it stands under a credential-named key at any depth."""
    if isinstance(config, dict):
        for key, value in config.items():
            yield from _leaves(value, under_secret or is_secret_name(str(key)))
    elif isinstance(config, list):
        for item in config:
            yield from _leaves(item, under_secret)
    else:
        yield config, under_secret


def config_secrets(config: Any, secrets: set[str], under_secret: bool = False) -> None:
    """Every secret of one configuration (a provider's, a judge's, an `http:` or `rasa:` mapping): each
    value at any depth under a credential-named key, and each credential parameter of a URL in it."""
    for value, secret in _leaves(config, under_secret):
        if isinstance(value, str):
            secrets.update(query_secrets(value))
            if secret and value and not _is_template(value):
                secrets.add(value)
                secrets.update(_credential_parts(value))
        elif secret and isinstance(value, (int, float)) and not isinstance(value, bool):
            secrets.add(str(value))  # `password: 123456` is a number to YAML


def _credential_parts(value: str) -> set[str]:
    """`Bearer abc` -> `abc`; `Basic dXNlcjpwYXNz` -> also `user:pass` and `pass`, which an echo may show."""
    parts = value.split(None, 1)
    if len(parts) != 2:
        return set()
    found = {parts[1]}
    if parts[0].lower() == "basic":
        try:
            decoded = base64.b64decode(parts[1], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return found
        found |= {decoded, decoded.partition(":")[2]} - {""}
    return found


def collect_written_secrets(value: Any, secrets: set[str], in_config: bool = False) -> None:
    """Every secret written anywhere in a suite's data, whether or not its mapping is valid: the secrets of
    every configuration (under `providers`, `judge`, `simulator`, `embedder`, `attacker`, or any mapping
    naming a provider kind: a test's simulate or attack model, a check's `provider:`, a history model) and
    the credential parameters of every URL query."""
    if isinstance(value, dict):
        if in_config or CONFIG_KINDS.intersection(value):
            config_secrets(value, secrets)  # the whole of it, its URLs included
            return
        for key, item in value.items():
            collect_written_secrets(item, secrets, key in CONFIG_ROOTS)
    elif isinstance(value, list):
        for item in value:
            collect_written_secrets(item, secrets, in_config)
    elif isinstance(value, str):
        secrets.update(query_secrets(value))


_TEMPLATE_NAME = re.compile(r"\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)")


def _secret_templates(config: Any, names: set[str]) -> None:
    """The variables named by templates under credential-named keys (`X-Api-Token: "{{ token }}"`)."""
    for value, secret in _leaves(config):
        if secret and isinstance(value, str):
            names.update(_TEMPLATE_NAME.findall(value))


def suite_secrets(data: Any, secrets: set[str], cli_vars: Mapping[str, Any] | None = None) -> None:
    """Every secret a suite's data holds (`collect_written_secrets`), and the values of the variables a
    configuration's credential templates render (the suite's, a test's or a matrix's `vars`, `--var`)."""
    collect_written_secrets(data, secrets)
    if not isinstance(data, dict):
        return
    names: set[str] = set()
    for key in CONFIG_ROOTS:
        _secret_templates(data.get(key), names)
    if not names:
        return
    tests = data["tests"] if isinstance(data.get("tests"), list) else []
    scopes = [data.get("vars"), cli_vars, *(t.get(k) for t in tests if isinstance(t, dict) for k in ("vars", "matrix"))]
    for scope in (scope for scope in scopes if isinstance(scope, Mapping)):
        for name in names.intersection(scope):
            config_secrets(scope[name], secrets, under_secret=True)  # a matrix's list: each of its values


def mask_config(config: Any, secrets: set[str], under_secret: bool = False) -> Any:
    """A configuration as shown in an output: every value under a credential-named key, every value equal
    to a secret (however short) and every credential parameter of a URL is `***`, and every other secret
    inside a text masked as `redact` does."""
    if isinstance(config, dict):
        return {k: mask_config(v, secrets, under_secret or is_secret_name(str(k))) for k, v in config.items()}
    if isinstance(config, list):
        return [mask_config(v, secrets, under_secret) for v in config]
    if isinstance(config, str):
        if (under_secret and config) or config in secrets:
            return MASK
        return redact(mask_query(config), secrets)
    if under_secret and isinstance(config, (int, float)) and not isinstance(config, bool):
        return MASK
    return config


def _model_names(suite: Any) -> list[str]:
    """Every model string a suite may call: providers and their history models, judge, simulator,
    embedder, each test's simulate and attack model and each assertion's provider."""
    refs: list[Any] = [*suite.providers, suite.judge, suite.simulator, suite.embedder]
    for test in suite.tests:
        refs += [a.provider for a in test.asserts] + [a.provider for t in test.conversation for a in t.asserts]
        refs += [part.model for part in (test.simulate, test.attack) if part is not None]
    names: list[str] = []
    for ref in refs:  # a reference is a model string, a provider mapping or a parsed ProviderSpec
        if isinstance(ref, str):
            names.append(ref)
            continue
        config = ref if isinstance(ref, dict) else getattr(ref, "config", None)
        if isinstance(config, dict):
            if isinstance(config.get("model"), str):
                names.append(config["model"])
            if isinstance(config.get("history"), dict):
                refs.append(config["history"].get("model"))
    return names


def implicit_secrets(model_names: list[str], environ: Mapping[str, str]) -> set[str]:
    """Keys a model call takes from the environment without the suite naming them: the provider's
    `*_API_KEY` (and its other secret-named variables), and `OPENAI_API_KEY`, which the lean
    OpenAI-compatible client sends to any endpoint that has no `api_key`."""
    if not model_names:
        return set()
    names = {"OPENAI_API_KEY"}
    for model in model_names:
        prefix, _ = split_model(model)
        if prefix in KEY_ENV:
            names.add(KEY_ENV[prefix])
        stem = {"bedrock": "AWS", "sagemaker": "AWS", "vertex_ai": "VERTEX"}.get(prefix, prefix.upper())
        names.update(n for n in environ if n.startswith(stem + "_") and is_secret_name(n))
    return {environ[n] for n in names if environ.get(n)}


def run_secrets(suites: list[Any], environ: Mapping[str, str] | None = None) -> set[str]:
    """The secrets of a whole run: every suite's own plus the keys taken implicitly from the environment."""
    env = environ if environ is not None else os.environ
    out: set[str] = set()
    for suite in suites:
        out |= suite.secrets
        out |= implicit_secrets(_model_names(suite), env)
    from evalspec.core.suggest import slugify

    return out | {slugify(s) for s in out}  # a secret in a test name also reaches its id, slugified
