"""Secrets are redacted by value everywhere evalspec writes."""

from __future__ import annotations

from typing import Any

MASK = "***"
MIN_SECRET_LENGTH = 6  # shorter values are not credentials, and masking them would mangle ordinary text


def redact(value: Any, secrets: set[str]) -> Any:
    """Replace every occurrence of every secret inside `value` (recursively)."""
    secrets = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in sorted(secrets, key=len, reverse=True):
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {k: redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    return value


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
