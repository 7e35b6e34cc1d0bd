"""promptfoo's http provider forms that have an exact evalspec equivalent: `transformResponse` as the
JMESPath that finds the same value, `auth:` as a header or query parameter, `{{env.NAME}}` as `${NAME:-}`."""

from __future__ import annotations

import base64
from typing import Any

import regex


def env_refs(text: str) -> str:
    """promptfoo's `{{env.NAME}}` / `{{ env['NAME'] }}` as `${NAME:-}` (an unset variable renders empty)."""
    return str(regex.sub(r"\{\{\s*env(?:\.(\w+)|\[\s*['\"](\w+)['\"]\s*\])\s*\}\}",
                         lambda m: "${" + (m.group(1) or m.group(2)) + ":-}", text))


def auth_form(auth: Any) -> tuple[str, str, str] | None:
    """promptfoo's http `auth:` as (header|query, name, value), or None when it has no evalspec form
    (oauth fetches a token, `file` runs code; basic auth with templated parts cannot be encoded here)."""
    if not isinstance(auth, dict):
        return None
    kind = auth.get("type")
    if kind == "api_key" and isinstance(auth.get("value"), str):
        where = "query" if auth.get("placement") == "query" else "header"
        return where, str(auth.get("keyName") or "X-API-Key"), env_refs(auth["value"])
    if kind == "bearer" and isinstance(auth.get("token"), str):
        return "header", "Authorization", f"Bearer {env_refs(auth['token'])}"
    user, password = auth.get("username"), auth.get("password")
    if kind == "basic" and isinstance(user, str) and isinstance(password, str) and \
            not any(mark in user + password for mark in ("{{", "${")):
        return "header", "Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    return None


# a JavaScript property path on `json`: `.a`, `?.a`, `[0]`, `?.[0]`, `["a-b"]`
_JS_STEP = r"(?:\??\.[A-Za-z_]\w*|(?:\?\.)?\[\d+\]|(?:\?\.)?\[\s*(?:\"[^\"\\]*\"|'[^'\\]*')\s*\])"
_JS_PATH = regex.compile(r"\s*json(?P<path>" + _JS_STEP + r"*)\s*;?\s*")
_ARROW = regex.compile(r"\s*(?:\(\s*json\s*(?:,\s*\w+\s*){0,2}\)|json)\s*=>\s*(?:(?P<expr>[^{].*?)|\{\s*return\s+"
                       r"(?P<block>.*?);?\s*\})\s*", regex.DOTALL)


def response_path(transform: Any) -> str | None:
    """promptfoo's transformResponse as the JMESPath that finds the same value, or None: `json.a.b`,
    `json?.a?.b`, `(json) => json.a[0]`, `(json) => json` (`@`). Anything else (logic, calls, `text`,
    `file://`) has no exact JMESPath."""
    if not isinstance(transform, str):
        return None
    arrow = _ARROW.fullmatch(transform)
    expression = (arrow.group("expr") or arrow.group("block")) if arrow else transform
    path = _JS_PATH.fullmatch(expression)
    if path is None:
        return None
    steps = regex.findall(_JS_STEP, path.group("path"))
    if not steps:
        return "@"
    out = []
    for step in steps:
        step = step.removeprefix("?.") if step.startswith("?.[") else step.lstrip("?")
        if step.startswith("."):
            out.append(step)
        elif (m := regex.fullmatch(r"\[\s*[\"'](.*)[\"']\s*\]", step)) is not None:
            out.append('."' + m.group(1) + '"')
        else:
            out.append(step)
    return "".join(out).removeprefix(".")
