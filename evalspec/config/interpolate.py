"""`${ENV}` / `${ENV:-default}` interpolation and `{{ var }}` templates (jinja2's sandbox)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


class TemplateProblem(Exception):
    """A template could not be rendered (unknown variable, syntax)."""


def interpolate_env(value: Any, environ: Mapping[str, str], on_missing: Callable[[str], None],
                    secrets: set[str]) -> Any:
    """Replace `${NAME}` in every string; values of secret-looking names are added to `secrets`."""
    if isinstance(value, dict):
        return {k: interpolate_env(v, environ, on_missing, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_env(v, environ, on_missing, secrets) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            result = environ[name]
        elif default is not None:
            result = default
        else:
            on_missing(name)
            return ""
        if SECRET_NAME.search(name) and result:
            secrets.add(result)
        return result

    return ENV_PATTERN.sub(sub, value)


_env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


@lru_cache(maxsize=4096)
def _compile(source: str) -> Any:
    return _env.from_string(source)


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text


def render_text(text: str, variables: Mapping[str, Any]) -> str:
    """Render one template string; plain strings are returned untouched."""
    if not is_template(text):
        return text
    try:
        return str(_compile(text).render(**variables))
    except TemplateError as exc:
        raise TemplateProblem(f"template {text!r}: {exc.message or exc}") from None


def render_value(value: Any, variables: Mapping[str, Any]) -> Any:
    """Render every string inside `value`. A string that is exactly one `{{ x }}` keeps x's type."""
    if isinstance(value, str):
        if is_template(value):
            whole = re.fullmatch(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", value)
            if whole and whole.group(1) in variables:
                return variables[whole.group(1)]
        return render_text(value, variables)
    if isinstance(value, dict):
        return {k: render_value(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, variables) for v in value]
    return value


def env_environ() -> Mapping[str, str]:
    return os.environ
