"""Secrets are redacted by value everywhere evalspec writes."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from evalspec.core.errors import Problem
from evalspec.core.model_keys import KEY_ENV, split_model

MASK = "***"
SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
MIN_SECRET_LENGTH = 6  # shorter values are not credentials, and masking them would mangle ordinary text


def redact(value: Any, secrets: set[str]) -> Any:
    """Replace every occurrence of every secret inside `value` (recursively): the longest secrets first,
    so a secret that contains another is masked whole. Without a secret, `value` itself comes back."""
    if not secrets:  # most runs: every record, and parts of it, come here
        return value
    ordered = sorted((s for s in secrets if len(s) >= MIN_SECRET_LENGTH), key=lambda s: (-len(s), s))
    return _masked(value, ordered) if ordered else value


_UNMASKED = frozenset({int, float, bool, type(None)})  # no text inside: kept as they are, without a call


def _masked(value: Any, ordered: list[str]) -> Any:
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
_SECRET_PARAM = re.compile(r"token|key|secret|password", re.IGNORECASE)


def query_secrets(text: str) -> set[str]:
    """The values of a URL query's credential parameters (`?access_token=...`, `&api-key=...`) in `text`:
    a URL being a word with a '/' before its '?'."""
    if "?" not in text or "=" not in text:
        return set()
    found: set[str] = set()
    for word in _WORD.findall(text):
        path, mark, query = word.partition("?")
        if not mark or "/" not in path:
            continue
        for pair in query.split("#", 1)[0].split("&"):
            name, equals, value = pair.partition("=")
            if equals and value and _SECRET_PARAM.search(name) and "{{" not in value and "{%" not in value:
                found.add(value)
    return found


def collect_written_secrets(value: Any, secrets: set[str]) -> None:
    """Every secret written anywhere in a suite's data, whether or not its mapping is valid: `api_key`
    values, secret-looking header values, and credential parameters of URL queries."""
    if isinstance(value, dict):
        collect_provider_secrets(value, secrets)
        headers = value.get("headers")
        if isinstance(headers, dict):
            collect_provider_secrets({"http": {"headers": headers}}, secrets)
        for item in value.values():
            collect_written_secrets(item, secrets)
    elif isinstance(value, list):
        for item in value:
            collect_written_secrets(item, secrets)
    elif isinstance(value, str):
        secrets.update(query_secrets(value))


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return lowered == "authorization" or lowered.endswith("key") or lowered.endswith("token")


def collect_provider_secrets(config: dict[str, Any], secrets: set[str]) -> None:
    """Every `api_key` and every secret-looking HTTP header value is a secret."""
    key = config.get("api_key")
    if isinstance(key, str) and key:
        secrets.add(key)
    http = config.get("http")
    if isinstance(http, dict):
        for name, value in (http.get("headers") or {}).items():
            if is_secret_header(str(name)) and isinstance(value, str) and value:
                secrets.add(value)
                # "Bearer abc" -> also mask "abc" alone
                parts = value.split(None, 1)
                if len(parts) == 2 and len(parts[1]) >= 4:
                    secrets.add(parts[1])


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
        names.update(n for n in environ if n.startswith(stem + "_") and SECRET_ENV_NAME.search(n))
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
